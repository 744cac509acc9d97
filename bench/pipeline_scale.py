"""Issue 48: a job at archive scale on this machine, and its time projected on E executors.

Runs one job in one Spark session (`--master`, default local[2], `--memory`
as `tangled pipeline --memory`), as the command runs it:

  linearize  `--archive DIR` linearized and written to Parquet
  generate   an archive of `--messages` / `--feeds` written to `--out`

and prints the wall time, the peak memory of the whole process tree (this
driver, the JVM, the Python workers; sampled every second), Spark's tasks,
rounds and longest_task_share, then the projection.

Projection, from the measured per-task times (pipeline/tasks.py's stages):
on E executors a stage takes at least its longest task and at least its
summed task time over E, so T(E) = driver + sum over stages of
max(longest, summed / E), where `driver` is the wall time no stage covered
(planning, collecting counts, Python on the driver). The same formula at
E = the cores used is printed beside the measured wall time: how far it is
off says how far to trust it. It assumes executors as fast as these cores
and shuffles no slower; it leaves out a cluster's network.

    .venv/bin/python bench/pipeline_scale.py linearize --archive DIR [--memory 2g]
    .venv/bin/python bench/pipeline_scale.py generate --messages N --feeds F --out DIR
        [--executors 16 64] [--master local[2]] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tanglenode.pipeline.session import spark_session_for
from tanglenode.pipeline.tasks import TaskWatch


class TreeMemory:
    """The peak summed RSS of this process and every descendant, sampled in a thread."""

    def __init__(self, every: float = 1.0) -> None:
        self.every, self.peak, self._stop = every, 0, threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> TreeMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.wait(self.every):
            self.peak = max(self.peak, _tree_rss(os.getpid()))


def _tree_rss(root: int) -> int:
    """Bytes resident in `root` and its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parent = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(parent, []).append(int(entry))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


def projected(stages: list[dict], wall_s: float, executors: int) -> float:
    """T(E) in seconds (the module's docstring)."""
    covered = sum((stage["wall_ms"] or 0) for stage in stages) / 1000
    driver = max(0.0, wall_s - covered)
    return (
        driver
        + sum(max(stage["longest_ms"], stage["task_ms"] / executors) for stage in stages) / 1000
    )


def run_linearize(spark, archive: Path, out: Path, rounds: list[int]) -> dict:
    from tanglenode.pipeline.archive import read_messages, write
    from tanglenode.pipeline.linearize import linearize

    started = time.perf_counter()

    def on_round(number: int, blocks: int) -> None:
        rounds.append(number)
        elapsed = time.perf_counter() - started
        print(f"[{elapsed:7.1f} s] round {number}: {blocks} blocks", file=sys.stderr, flush=True)

    order = linearize(read_messages(spark, [archive]), on_round=on_round)
    target = write(order, out, "linearize")
    return {"rows": spark.read.parquet(str(target)).count()}


def run_generate(spark, out: Path, messages: int, feeds: int) -> dict:
    from tanglenode.pipeline.generate import generate

    return generate(spark, out, messages, feeds, 0, force=True, progress=lambda _text: None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("job", choices=("linearize", "generate"))
    parser.add_argument("--archive", type=Path)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--messages", type=int)
    parser.add_argument("--feeds", type=int)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--memory", default="2g")
    parser.add_argument("--executors", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.job == "linearize" and (args.archive is None or not args.archive.is_dir()):
        parser.error("linearize needs --archive DIR, an archive folder")
    if args.job == "generate" and not (args.messages and args.feeds and args.out):
        parser.error("generate needs --messages N, --feeds F and --out DIR")
    cores = int(args.master[6:-1]) if args.master.startswith("local[") else os.cpu_count()
    out = args.out or Path(f"/tmp/tanglenode-scale-{args.job}")
    spark = spark_session_for(args.master, args.memory)
    rounds: list[int] = []
    try:
        with TreeMemory() as memory, TaskWatch(spark, args.job) as watch:
            started = time.perf_counter()
            if args.job == "linearize":
                result = run_linearize(spark, args.archive, out, rounds)
            else:
                result = run_generate(spark, out, args.messages, args.feeds)
            wall = time.perf_counter() - started
        stages = watch.stages()
        spread = watch.spread()
    finally:
        spark.stop()
    report = {
        "job": args.job,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "master": args.master,
        "memory": args.memory,
        "wall_s": round(wall, 1),
        "peak_rss_gib": round(memory.peak / 2**30, 2),
        "stages": len(stages),
        "rounds": len(rounds) if args.job == "linearize" else result.get("rounds"),
        **spread,
        "model_at_cores_s": round(projected(stages, wall, cores), 1),
        "projected_s": {e: round(projected(stages, wall, e), 1) for e in args.executors},
        **{k: v for k, v in result.items() if k in ("rows", "messages", "feeds")},
        "heaviest_stages": sorted(
            stages, key=lambda stage: max(stage["longest_ms"], stage["task_ms"] / cores)
        )[-8:],
    }
    if args.json:
        print(json.dumps(report))
        return
    for key, value in report.items():
        print(f"{key:>20}: {value}")


if __name__ == "__main__":
    main()
