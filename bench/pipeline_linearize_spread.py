"""Issue 48: `pipeline linearize` with the spacetime spread over blocks, against one task.

Builds (or reuses, `--archive`) an archive of N signed messages of F feeds
with `bench/pipeline.py`'s generator (each message follows its feed, names
the head of one random other feed in its timeframe and extends one of T
tangles; timestamps in causal order), then, in one Spark session
(`--master`, default local[2]), alternately for `--runs` rounds:

  spread   linearize as `tangled pipeline linearize` runs it: the spacetime
           (above the spread threshold) ranked in rounds over blocks
  grouped  today's single-task engine: every timeline one group, the
           spacetime one task (`spread_threshold=None`)

each written to Parquet. Per run: wall seconds, tasks, rounds and
longest_task_share (pipeline/tasks.py); then the medians, the goal
(longest_task_share <= 0.25 on local[2]) and spread/grouped wall time. The
two results are compared row for row once (they must be equal).

    .venv/bin/python bench/pipeline_linearize_spread.py [--messages 200000] [--feeds 2000]
        [--tangles 1000] [--runs 3] [--archive DIR] [--master local[2]]
"""

from __future__ import annotations

import argparse
import importlib.util
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


from tanglenode.pipeline.archive import read_messages, write
from tanglenode.pipeline.linearize import SPREAD_THRESHOLD, linearize
from tanglenode.pipeline.session import spark_session
from tanglenode.pipeline.tasks import TaskWatch


def _bench_module(name: str):
    """A sibling bench script as a module (bench/pipeline.py shares its name with the
    project's pipeline package, so it is loaded by path, never imported by name)."""
    spec = importlib.util.spec_from_file_location(
        f"bench_{name}", Path(__file__).with_name(f"{name}.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build_archive = _bench_module("pipeline").build_archive  # the archive of signed messages

GOAL = 0.25  # longest_task_share on local[2], issue 48


def run(spark, messages, out: Path, name: str, spread_threshold) -> dict:
    rounds: list[int] = []
    started = time.perf_counter()
    with TaskWatch(spark, name) as watch:
        frame = linearize(
            messages,
            spread_threshold=spread_threshold,
            on_round=lambda number, _blocks: rounds.append(number),
        )
        write(frame, out, name)
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "rounds": len(rounds), **watch.spread()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--feeds", type=int, default=2000)
    parser.add_argument("--tangles", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--archive", type=Path, help="reuse (or build once into) this folder")
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    print(f"# {platform.node()} {platform.machine()} python {platform.python_version()}")
    with tempfile.TemporaryDirectory(prefix="bench-spread-") as tmp:
        archive = args.archive or Path(tmp) / "archive"
        if not (archive / "messages").exists():
            started = time.perf_counter()
            build_archive(archive, args.messages, args.feeds, args.tangles, args.seed)
            print(f"built {args.messages:,} messages in {time.perf_counter() - started:.0f} s")
        spark = spark_session(args.master, driver_memory="4g")
        messages = read_messages(spark, [archive])
        print(f"{messages.count():,} messages; spread threshold {SPREAD_THRESHOLD:,} members")
        results: dict[str, list[dict]] = {"spread": [], "grouped": []}
        for n in range(args.runs):
            for name, threshold in (("spread", SPREAD_THRESHOLD), ("grouped", None)):
                result = run(spark, messages, Path(tmp) / "out", name, threshold)
                results[name].append(result)
                print(
                    f"run {n + 1} {name:<8} {result['seconds']:7.1f} s  tasks {result['tasks']:>6,}"
                    f"  rounds {result['rounds']:>3}  longest_task_share "
                    f"{result['longest_task_share']}",
                    flush=True,
                )
        written = [spark.read.parquet(str(Path(tmp) / "out" / name)) for name in results]
        differ = written[0].exceptAll(written[1]).count() + written[1].exceptAll(written[0]).count()
        spark.stop()
    median = {
        name: {key: statistics.median(r[key] for r in runs) for key in runs[0]}
        for name, runs in results.items()
    }
    for name, m in median.items():
        print(
            f"median {name:<8} {m['seconds']:7.1f} s  tasks {m['tasks']:>8,.0f}  rounds "
            f"{m['rounds']:>4.0f}  longest_task_share {m['longest_task_share']:.3f}"
        )
    share = median["spread"]["longest_task_share"]
    verdict = "met" if share <= GOAL else "MISSED"
    print(f"goal: longest_task_share <= {GOAL} -> {share:.3f} ({verdict})")
    ratio = median["spread"]["seconds"] / median["grouped"]["seconds"]
    print(f"wall time spread / grouped: {ratio:.2f}x; rows that differ: {differ}")


if __name__ == "__main__":
    main()
