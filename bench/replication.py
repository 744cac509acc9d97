"""Catch-up replication between two real nodes, against its goal and bare signature verification.

Two workloads, each N pre-signed messages (those of bench/ingest.py: F feeds,
T tangles, random interleaving):

  sparse         every timeframe names at most 4 other feeds (the goal:
                 >= 12,000 msgs/s, at least 6,000)
  full frontier  every timeframe names all the other feeds (about 4 KB messages
                 with tags; what format 1 nodes wrote; reported as a ratio to
                 bare verify)
  heads          every timeframe names the heads, at most 32, as a node writes
                 since format 2 (bench/ingest.py --heads)

For each, a source node's store is filled offline. Then, per round and per
workload, alternating:

  catch-up  a fresh sink node (`tangled run`, its own data directory)
            dials the source; timed from the sink's READY=1 until its
            status counts all N messages (polled every 20 ms); once with
            the sink checking signatures in its worker process (the
            default, `gossip.verify_in_process`), once in a thread
  verify    nacl.bindings.crypto_sign_open over the same N messages in
            this process: the receiver's bare verify rate on one core
  local     store.writes.ingest of the same N messages in batches of 2,048
            into a fresh store in this process (one core): what the
            store alone takes, so catch-up / local is what the network
            path and the second core change

and prints msgs/s of each and their ratio, then a row per workload and
mode with its goal: medians over the rounds (ratios are medians of the
per-round ratios, each catch-up timed right before its verify), and the
sink's data directory on disk once it stopped, against the raw bytes of
the messages (goal <= 1.5x, at most 3x). Both nodes and this benchmark run
on this machine, so they share its cores (and, on a shared machine, the
figures drift with everything else that runs).

    .venv/bin/python bench/replication.py [--messages 30000] [--rounds 3]
    .venv/bin/python bench/replication.py --workload sparse     # one of them
    .venv/bin/python bench/replication.py --verify-in process   # one mode
    .venv/bin/python bench/replication.py --timeframe-feeds 8   # another cap, one workload
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ingest import build_messages, time_bare_verify

from tanglenode.node.localnet import Node
from tanglenode.storage.store import FeedStore

SPARSE_FEEDS = 4
SPARSE_GOAL = (12_000, 6_000)  # msgs/s: goal, at least (the storage diet's issue)
SIZE_GOAL = (1.5, 3.0)  # the sink's data directory / raw message bytes: goal, at most


MODES = {"process": "true", "thread": "false"}  # where the sink verifies: gossip.verify_in_process


@dataclass
class Workload:
    name: str
    timeframe_feeds: int | None
    heads: bool = False
    raws: list[bytes] = field(default_factory=list)
    source: Node | None = None
    catch_up: dict[str, list[float]] = field(default_factory=dict)  # mode -> msgs/s per round
    verify: dict[str, list[float]] = field(default_factory=dict)
    ratio: dict[str, list[float]] = field(default_factory=dict)
    of_local: dict[str, list[float]] = field(default_factory=dict)  # catch-up / local ingest
    local: list[float] = field(default_factory=list)  # msgs/s of store.writes.ingest here
    sink_bytes: list[int] = field(default_factory=list)  # the sink's data directory after it


def time_local_ingest(root: Path, raws: list[bytes], name: str) -> float:
    with FeedStore(root / name) as store:
        started = time.perf_counter()
        for start in range(0, len(raws), 2048):
            store.writes.ingest(raws[start : start + 2048])
        return time.perf_counter() - started


def fill(node: Node, raws: list[bytes]) -> None:
    with FeedStore(node.data_dir / "store") as store:
        for start in range(0, len(raws), 2000):
            store.writes.ingest(raws[start : start + 2000])


def directory_bytes(path: Path) -> int:
    """Bytes the files under `path` take on disk (LMDB's file is sparse until written)."""
    return sum(f.stat().st_blocks * 512 for f in path.rglob("*") if f.is_file())


async def catch_up(root: Path, source: Node, count: int, name: str, mode: str) -> tuple[float, int]:
    """Seconds for a new node to hold `count` messages from `source`, and its data
    directory's bytes once it stopped."""
    sink = Node(root, name)
    await sink.start([source], extra_env={"TANGLED_GOSSIP__VERIFY_IN_PROCESS": MODES[mode]})
    started = time.perf_counter()
    async with await sink.client() as client:
        while (await client.status())["messages"] < count:
            await trio.sleep(0.02)
    elapsed = time.perf_counter() - started
    await sink.stop()
    return elapsed, directory_bytes(sink.data_dir)


def goal_text(rate: float, goal: tuple[float, float]) -> str:
    verdict = "MET" if rate >= goal[0] else "at least" if rate >= goal[1] else "SHORT"
    return f"goal >= {goal[0]:,} msgs/s (at least {goal[1]:,}): {verdict}"


def size_goal_text(ratio: float) -> str:
    verdict = "MET" if ratio <= SIZE_GOAL[0] else "at least" if ratio <= SIZE_GOAL[1] else "SHORT"
    return f"goal <= {SIZE_GOAL[0]}x (at most {SIZE_GOAL[1]}x): {verdict}"


def workloads(args) -> list[Workload]:
    if args.timeframe_feeds is not None:
        return [Workload(f"timeframes of {args.timeframe_feeds} feeds", args.timeframe_feeds)]
    chosen = [
        Workload("sparse", SPARSE_FEEDS),
        Workload("full frontier", None),
        Workload("heads", None, heads=True),
    ]
    both = ("sparse", "full")  # the two of earlier runs
    return [
        w
        for w in chosen
        if args.workload == "all"
        or args.workload == w.name.split()[0]
        or (args.workload == "both" and w.name.split()[0] in both)
    ]


async def run(args) -> None:
    chosen = workloads(args)
    print(
        f"# {platform.node()} {platform.machine()} python {platform.python_version()}, "
        f"{os.cpu_count()} cores (shared with whatever else runs)"
    )
    with tempfile.TemporaryDirectory(prefix="bench-replication-") as tmp:
        root = Path(tmp)
        for work in chosen:
            work.raws = build_messages(
                args.messages, args.feeds, args.tangles, args.seed, work.timeframe_feeds, work.heads
            )
            mean = sum(map(len, work.raws)) / len(work.raws)
            print(
                f"{work.name}: {len(work.raws)} messages, {args.feeds} feeds, mean {mean:.0f} bytes"
            )
            work.source = Node(root, f"source-{work.name.split()[0]}")
            fill(work.source, work.raws)
            await work.source.start()
        print(f"{args.rounds} rounds")
        modes = list(MODES) if args.verify_in == "both" else [args.verify_in]
        for round_no in range(args.rounds):
            for work in chosen:
                local_s = time_local_ingest(root, work.raws, f"local-{id(work)}-{round_no}")
                work.local.append(len(work.raws) / local_s)
                print(
                    f"round {round_no} {work.name}: local ingest {work.local[-1]:,.0f} msgs/s",
                    flush=True,
                )
                for mode in modes:
                    sink = f"sink-{work.name.split()[0]}-{mode}-{round_no}"
                    catch_up_s, sink_bytes = await catch_up(
                        root, work.source, len(work.raws), sink, mode
                    )
                    work.sink_bytes.append(sink_bytes)
                    verify_s = time_bare_verify(work.raws)
                    rate = work.catch_up.setdefault(mode, [])
                    rate.append(len(work.raws) / catch_up_s)
                    work.verify.setdefault(mode, []).append(len(work.raws) / verify_s)
                    work.ratio.setdefault(mode, []).append(verify_s / catch_up_s)
                    work.of_local.setdefault(mode, []).append(rate[-1] / work.local[-1])
                    print(
                        f"round {round_no} {work.name}, verifying in a {mode}: catch-up "
                        f"{rate[-1]:,.0f} msgs/s, verify {work.verify[mode][-1]:,.0f} msgs/s, "
                        f"ratio {work.ratio[mode][-1]:.1%}, sink data directory "
                        f"{sink_bytes / 2**20:.1f} MiB",
                        flush=True,
                    )
        for work in chosen:
            await work.source.stop()
    print(f"\ncatch-up, two nodes, loopback (medians of {args.rounds} rounds)")
    for work in chosen:
        name = f"{work.name}, local ingest"
        print(f"  {name:28s} {statistics.median(work.local):7,.0f} msgs/s  (one core, no network)")
        for mode in work.catch_up:
            rate, verify, ratio, of_local = (
                statistics.median(values[mode])
                for values in (work.catch_up, work.verify, work.ratio, work.of_local)
            )
            name = f"{work.name}, {mode}"
            row = (
                f"  {name:28s} {rate:7,.0f} msgs/s  {ratio:6.1%} of verify ({verify:,.0f}/s), "
                f"{of_local:4.0%} of local ingest"
            )
            if work.timeframe_feeds == SPARSE_FEEDS:
                row += f"  {goal_text(rate, SPARSE_GOAL)}"
            print(row)
        raw = sum(map(len, work.raws))
        ratio = statistics.median(work.sink_bytes) / raw
        print(
            f"  {work.name + ', sink / raw':28s} {statistics.median(work.sink_bytes) / 2**20:7,.1f}"
            f" MiB  {ratio:5.2f}x of {raw / 2**20:.1f} MiB of messages  {size_goal_text(ratio)}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=30_000)
    parser.add_argument("--feeds", type=int, default=64)
    parser.add_argument("--tangles", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--workload", choices=("both", "all", "sparse", "full", "heads"), default="all"
    )
    parser.add_argument(
        "--verify-in",
        choices=("both", *MODES),
        default="both",
        help="where the sink checks signatures: its worker process, a thread, or each in turn",
    )
    parser.add_argument(
        "--timeframe-feeds",
        type=int,
        default=None,
        help="one workload with timeframes capped at this many feeds (instead of --workload)",
    )
    trio.run(run, parser.parse_args())


if __name__ == "__main__":
    main()
