"""Catch-up replication between two real nodes, against bare signature verification.

A source node's store is filled offline with N pre-signed messages (the
workload of bench/ingest.py: F feeds, T tangles, timeframes of the other
feeds). Then, per round:

  catch-up  a fresh sink node (`tangled run`, its own data directory)
            dials the source; timed from the sink's READY=1 until its
            status counts all N messages (polled every 50 ms)
  verify    nacl.bindings.crypto_sign_open over the same N messages in
            this process: the receiver's bare verify rate

and prints msgs/s of both and their ratio (medians over rounds). Both nodes
run on this machine, so sender, receiver and benchmark share its cores.

    .venv/bin/python bench/replication.py [--messages 100000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ingest import build_messages, time_bare_verify

from tanglenode.node.localnet import Node
from tanglenode.storage.store import FeedStore


def fill(node: Node, raws: list[bytes]) -> None:
    with FeedStore(node.data_dir / "store") as store:
        for start in range(0, len(raws), 2000):
            store.ingest(raws[start : start + 2000])


async def catch_up(root: Path, source: Node, count: int, round_no: int) -> float:
    sink = Node(root, f"sink{round_no}")
    await sink.start([source])
    started = time.perf_counter()
    async with await sink.client() as client:
        while (await client.status())["messages"] < count:
            await trio.sleep(0.05)
    elapsed = time.perf_counter() - started
    await sink.stop()
    return elapsed


async def run(args) -> None:
    raws = build_messages(args.messages, args.feeds, args.tangles, args.seed, args.timeframe_feeds)
    mean = sum(map(len, raws)) / len(raws)
    print(f"# {platform.node()} {platform.machine()} python {platform.python_version()}")
    print(f"{len(raws)} messages, {args.feeds} feeds, mean {mean:.0f} bytes; {args.rounds} rounds")
    with tempfile.TemporaryDirectory(prefix="bench-replication-") as tmp:
        root = Path(tmp)
        source = Node(root, "source")
        fill(source, raws)
        await source.start()
        rows = []
        for round_no in range(args.rounds):
            catch_up_s = await catch_up(root, source, len(raws), round_no)
            verify_s = time_bare_verify(raws)
            rows.append((len(raws) / catch_up_s, len(raws) / verify_s, verify_s / catch_up_s))
            print(
                f"round {round_no}: catch-up {rows[-1][0]:,.0f} msgs/s, "
                f"verify {rows[-1][1]:,.0f} msgs/s, ratio {rows[-1][2]:.1%}",
                flush=True,
            )
        await source.stop()
    print(
        f"median: catch-up {statistics.median(r[0] for r in rows):,.0f} msgs/s, "
        f"verify {statistics.median(r[1] for r in rows):,.0f} msgs/s, "
        f"catch-up/verify {statistics.median(r[2] for r in rows):.1%}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--feeds", type=int, default=64)
    parser.add_argument("--tangles", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeframe-feeds", type=int, default=None)
    trio.run(run, parser.parse_args())


if __name__ == "__main__":
    main()
