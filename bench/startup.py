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

    .venv/bin/python bench/startup.py [--runs 21] [--json]
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


def median_ms(argv: list[str], env: dict[str, str], runs: int) -> dict[str, float]:
    """Median wall and CPU ms of `runs` runs, after one warm-up run."""
    run_ms(argv, env)
    figures = [run_ms(argv, env) for _ in range(runs)]
    return {
        "wall": statistics.median(wall for wall, _cpu in figures),
        "cpu": statistics.median(cpu for _wall, cpu in figures),
    }


def measure(runs: int) -> dict:
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

        async def main() -> dict:
            await node.start()
            try:
                return await trio.to_thread.run_sync(rows)
            finally:
                await node.stop()

        def rows() -> dict:
            bare = median_ms([sys.executable, "-c", "pass"], env, runs)
            commands = {
                "tangled --help": [TANGLED, "--help"],
                "tangled status": [TANGLED, *data, "status"],
                "tangled publish": [TANGLED, *data, "publish", '{"type": "post", "text": "hi"}'],
            }
            figures = {name: median_ms(argv, env, runs) for name, argv in commands.items()}
            return {"bare": bare, "commands": figures}

        return trio.run(main)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=21, help="Runs per row (median taken).")
    parser.add_argument("--json", action="store_true", help="One JSON object instead of a table.")
    args = parser.parse_args()
    result = measure(args.runs)
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    if args.json:
        print(json.dumps({"machine": machine, "runs": args.runs, **result}))
        return
    bare = result["bare"]
    print(f"{machine}; median of {args.runs} runs each; load average {os.getloadavg()[0]:.2f}")
    print(f"{'command':<20} {'wall ms':>8} {'x bare':>7} {'cpu ms':>8} {'x bare':>7} {'goal':>7}")
    for name, took in {"python -c pass": bare, **result["commands"]}.items():
        verdict = "" if took is bare else "met" if took["wall"] <= GOAL_MS else "missed"
        print(
            f"{name:<20} {took['wall']:>8.1f} {took['wall'] / bare['wall']:>7.1f} "
            f"{took['cpu']:>8.1f} {took['cpu'] / bare['cpu']:>7.1f} {verdict:>7}"
        )


if __name__ == "__main__":
    main()
