"""How long `tangled` takes to start and answer, against bare Python starting.

Each row runs one command as a fresh process `--runs` times (after one
warm-up run that fills the page cache and writes bytecode) and prints the
median wall time, from just before the spawn to the child's exit, beside
the median of `python -c pass` on the same interpreter, and their ratio:

    tangled --help                  no config read, no node needed
    tangled status                  a running node answers over its socket
    tangled publish '{...}'         a running node signs and stores a message

The node is a real `tangled run` in a temporary data directory (started
once, stopped at the end); the publishes go into its store. The goal of
issue 16 is 120 ms for each row.

With `--baseline CHECKOUT` (another checkout of this repository, e.g. `git
archive main | tar -x -C /tmp/base`) the same rows run that code too, by
turns with ours, through a package of its folders put first on PYTHONPATH
(the `(base)` rows). Every row's runs take turns, one round at a time, so
a burst of other load on the machine falls on all of them alike.

    .venv/bin/python bench/startup.py [--runs 21] [--baseline /tmp/base] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tanglenode.node.localnet import Node

GOAL_MS = 120.0
TANGLED = str(Path(sys.executable).with_name("tangled"))


def run_ms(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """One run's wall time and the child's CPU time (user + system), in ms."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)  # the node, running, is not counted
    began = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    took = (time.perf_counter() - began) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return took, cpu * 1000


def median_ms(variants: dict[str, list[str]], env: dict[str, dict], runs: int) -> dict:
    """Per variant, the median wall and CPU ms of `runs` runs after one warm-up run; the
    variants take turns run by run, so a burst of other load falls on all of them alike."""
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
    for name, argv in variants.items():
        run_ms(argv, env[name])
    for _ in range(runs):
        for name, argv in variants.items():
            figures[name].append(run_ms(argv, env[name]))
    return {
        name: {
            "wall": statistics.median(wall for wall, _cpu in runs_of),
            "cpu": statistics.median(cpu for _wall, cpu in runs_of),
        }
        for name, runs_of in figures.items()
    }


def baseline_package(checkout: Path, into: Path) -> Path:
    """A `tanglenode` package over another checkout's folders, to put first on PYTHONPATH."""
    package = into / "tanglenode"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for folder in ("node", "storage", "protocol", "config", "pipeline"):
        (package / folder).symlink_to(checkout.resolve() / folder)
    return into


LAUNCHER = "import sys\nfrom tanglenode.node.cli import main\nsys.exit(main())\n"


def measure(runs: int, baseline: Path | None) -> dict:
    # As installed: bytecode cached (pip compiles it; an editable install writes it on first
    # import, here the warm-up run's), whatever PYTHONDONTWRITEBYTECODE this shell has.
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("TANGLED_") and key != "PYTHONDONTWRITEBYTECODE"
    }
    with tempfile.TemporaryDirectory(prefix="startup-") as scratch:
        node = Node(Path(scratch), "node")
        data = ["--data-dir", str(node.data_dir)]
        base_env = env
        if baseline is not None:
            base_path = baseline_package(baseline, Path(scratch) / "baseline")
            base_env = {**env, "PYTHONPATH": str(base_path)}

        async def main() -> dict:
            await node.start()
            try:
                return await trio.to_thread.run_sync(rows)
            finally:
                await node.stop()

        def rows() -> dict:
            commands = {
                "tangled --help": ["--help"],
                "tangled status": [*data, "status"],
                "tangled publish": [*data, "publish", '{"type": "post", "text": "hi"}'],
            }
            variants = {"bare": [sys.executable, "-c", "pass"]}
            envs = {"bare": env}
            for name, args in commands.items():
                variants[name] = [TANGLED, *args]
                envs[name] = env
                if baseline is not None:
                    variants[f"{name} (base)"] = [sys.executable, "-c", LAUNCHER, *args]
                    envs[f"{name} (base)"] = base_env
            figures = median_ms(variants, envs, runs)
            result = {
                "bare": figures["bare"],
                "commands": {name: figures[name] for name in commands},
                "baseline": {name: figures[f"{name} (base)"] for name in commands if baseline},
            }
            return result

        return trio.run(main)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=21, help="Runs per row (median taken).")
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="CHECKOUT",
        help="Also time another checkout of this repository (e.g. `git archive`d), run by turns.",
    )
    parser.add_argument("--json", action="store_true", help="One JSON object instead of a table.")
    args = parser.parse_args()
    result = measure(args.runs, args.baseline)
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    if args.json:
        print(json.dumps({"machine": machine, "runs": args.runs, **result}))
        return
    bare = result["bare"]
    print(f"{machine}; median of {args.runs} runs each; load average {os.getloadavg()[0]:.2f}")
    print(f"{'command':<24} {'wall ms':>8} {'x bare':>7} {'cpu ms':>8} {'x bare':>7} {'goal':>7}")
    rows = {"python -c pass": bare, **result["commands"]}
    rows.update({f"{name} (base)": took for name, took in result["baseline"].items()})
    for name, took in rows.items():
        verdict = "" if took is bare else "met" if took["wall"] <= GOAL_MS else "missed"
        print(
            f"{name:<24} {took['wall']:>8.1f} {took['wall'] / bare['wall']:>7.1f} "
            f"{took['cpu']:>8.1f} {took['cpu'] / bare['cpu']:>7.1f} {verdict:>7}"
        )


if __name__ == "__main__":
    main()
