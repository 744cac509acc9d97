"""`tangled import` as the store grows: is the cost per message flat from 30K to 1M?

Theory of operation
-------------------
One signed stream of N messages (bench/ingest.py's `build_messages`: F feeds,
T tangles, timeframes of at most 4 other feeds, ~300 bytes of content a
message) is written once as a bundle per size, each size a prefix of the
largest (a prefix of the stream is a valid stream), and kept in `--cache`
for the next run. Each round then runs the real command line, a process of
its own, on each size in turn (the order alternating by round) into a fresh
data directory:

    tangled --data-dir D init
    tangled --data-dir D import --json BUNDLE      (TANGLED_LOG_LEVEL=debug)

and reads:

  rate      messages over the import's wall time, start-up to exit, the
            compaction it chooses included (as a user waits for it)
  slices    the debug log's `import committed` lines (each batch's commit,
            with its time): the rate over the first and over the last tenth
            of the commits, and their ratio (1.00: flat)
  store     data.mdb after the import over the signed bytes (each record's
            wire form, the bundle without its framing)

and bare Ed25519 verification over the same messages on one core, the
anchor of issue 28's floors. Medians over `--rounds`; the goals printed
against them: the rate at 300K at least 90 % of the rate at 30K (goal at 1M:
95 %), the store at most 1.5x the signed bytes at 300K (bar 3x), import at
least 80 % of one-core verify (it verifies on a second core).

    .venv/bin/python bench/import_scale.py --sizes 30000 300000 --rounds 3
    .venv/bin/python bench/import_scale.py --sizes 30000 300000 1000000 --rounds 1
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ingest import build_messages, time_bare_verify, write_bundle_file

TANGLED = str(Path(sys.executable).with_name("tangled"))
FRAMING = 4  # a bundle record's length prefix


def bundles(sizes: list[int], args: argparse.Namespace) -> dict[int, tuple[Path, int]]:
    """A bundle per size (a prefix of the largest), with its signed bytes; cached."""
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    tag = f"f{args.feeds}-t{args.tangles}-s{args.seed}-c{args.content}"
    paths = {size: cache / f"import-{tag}-{size}.bundle" for size in sizes}
    if not all(path.exists() for path in paths.values()):
        started = time.perf_counter()
        print(f"building {max(sizes):,} signed messages (kept in {cache})...", flush=True)
        raws = build_messages(
            max(sizes), args.feeds, args.tangles, args.seed, 4, text_bytes=text_range(args)
        )
        for size, path in paths.items():
            write_bundle_file(raws[:size], path)
        print(f"  built in {time.perf_counter() - started:.0f} s", flush=True)
        del raws
    found = {}
    for size, path in paths.items():
        magic = 4  # the bundle's header
        found[size] = path, path.stat().st_size - magic - FRAMING * size
    return found


def text_range(args: argparse.Namespace) -> tuple[int, int]:
    return args.content, args.content + 100


def import_once(bundle: Path, size: int) -> dict[str, float]:
    """One `tangled import` of `bundle` into a fresh data directory: its figures."""
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        env = {**os.environ, "TANGLED_LOG_LEVEL": "debug", "TANGLED_LOG_FORMAT": "json"}
        base = [TANGLED, "--data-dir", str(Path(tmp) / "data")]
        subprocess.run([*base, "init"], env=env, check=True, capture_output=True)
        started = time.perf_counter()
        done = subprocess.run(
            [*base, "import", "--json", str(bundle)], env=env, capture_output=True, text=True
        )
        wall = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"import failed ({done.returncode}): {done.stderr[-2000:]}")
        summary = json.loads(done.stdout)
        if summary["accepted"] != size:
            raise SystemExit(f"import accepted {summary['accepted']} of {size}")
        store = (Path(tmp) / "data" / "store" / "data.mdb").stat().st_size
        commits = [
            (datetime.fromisoformat(line["timestamp"]).timestamp(), line["records"])
            for line in map(json.loads, filter(None, done.stderr.splitlines()))
            if line.get("event") == "import committed"
        ]
    return {"wall": wall, "store": store, **slices(commits, size)}


def slices(commits: list[tuple[float, int]], size: int) -> dict[str, float]:
    """msgs/s of the first and the last tenth of the commits (two at least), from their
    times: each span runs from one commit's end to another's."""
    if len(commits) < 3:
        return {}
    k = max(1, len(commits) // 10)

    def rate(start: int, stop: int) -> float:
        (t0, n0), (t1, n1) = commits[start], commits[stop]
        return (n1 - n0) / (t1 - t0) if t1 > t0 else float("nan")

    return {"first": rate(0, k), "last": rate(len(commits) - 1 - k, len(commits) - 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[30_000, 300_000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--feeds", type=int, default=64)
    parser.add_argument("--tangles", type=int, default=256)
    parser.add_argument("--content", type=int, default=250, help="content text bytes, at least")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "tanglenode-bench"))
    args = parser.parse_args()
    sizes = sorted(set(args.sizes))
    print(f"{platform.node()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    found = bundles(sizes, args)
    sample = build_messages(
        3000, args.feeds, args.tangles, args.seed, 4, text_bytes=text_range(args)
    )
    runs: dict[int, list[dict[str, float]]] = {size: [] for size in sizes}
    verify: list[float] = []
    for round_no in range(args.rounds):
        verify.append(len(sample) / time_bare_verify(sample))
        order = sizes if round_no % 2 == 0 else list(reversed(sizes))
        for size in order:
            figures = import_once(found[size][0], size)
            runs[size].append(figures)
            print(
                f"  round {round_no + 1}, {size:>9,}: {size / figures['wall']:>7,.0f} msgs/s, "
                f"store {figures['store'] / found[size][1]:.2f}x signed",
                flush=True,
            )
    anchor = statistics.median(verify)
    print(f"\nmedians of {args.rounds} rounds; bare Ed25519 verify, one core: {anchor:,.0f} msgs/s")
    print(
        f"  {'messages':>10} {'msgs/s':>8} {'of verify':>9} {'first':>8} {'last':>8} "
        f"{'last/first':>10} {'store/signed':>12}"
    )
    rates = {}
    for size in sizes:
        median = {
            key: statistics.median(r[key] for r in runs[size] if key in r)
            for key in ("wall", "store", "first", "last")
            if any(key in r for r in runs[size])
        }
        rates[size] = size / median["wall"]
        first, last = median.get("first", float("nan")), median.get("last", float("nan"))
        print(
            f"  {size:>10,} {rates[size]:>8,.0f} {rates[size] / anchor:>9.0%} {first:>8,.0f} "
            f"{last:>8,.0f} {last / first:>10.2f} {median['store'] / found[size][1]:>11.2f}x"
        )
    base = rates[sizes[0]]
    print(f"\ngoals (against {sizes[0]:,}):")
    for size in sizes[1:]:
        goal = 0.95 if size >= 1_000_000 else 0.90
        share = rates[size] / base
        print(
            f"  {size:,}: {share:.0%} of the rate at {sizes[0]:,} "
            f"(goal >= {goal:.0%}): {'met' if share >= goal else 'MISSED'}"
        )
    for size in sizes:
        if size >= 300_000:
            ratio = statistics.median(r["store"] for r in runs[size]) / found[size][1]
            verdict = "met" if ratio <= 1.5 else ("bar met (3x)" if ratio <= 3 else "MISSED")
            print(f"  store at {size:,}: {ratio:.2f}x the signed bytes (goal <= 1.5x): {verdict}")
    two_core = max(rates.values()) / anchor
    print(
        f"  import, two cores: {two_core:.0%} of one-core verify (goal >= 80 %): "
        f"{'met' if two_core >= 0.8 else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
