"""The stream plan's cost on an honest catch-up, against the same catch-up without a plan,
in one run.

Honest: a source store holds N pre-signed messages (bench/ingest.py's workload: F feeds,
T tangles, timeframes of at most 4 other feeds); per round a fresh sink store catches up
from it over an in-memory stream, real `gossip()` sessions at both ends (the node's own
code, its worker process checking signatures), alternating:

  plan     the stream plan on, as a node runs (node/gossip/stream_plan.py): each feed claimed,
           reviewed every tick while the sink is behind
  no plan  the plan off (`once = False`, `tangled sim --flood`'s baseline): with one peer
           it is the same subscriptions with no reviews, the reference

timed from the sessions' start until the sink holds all N messages. It prints msgs/s of
each, and the median of the per-round ratios plan / no plan (goal: at least 0.95, i.e.
the plan costs an honest single peer nothing measurable).

    .venv/bin/python bench/stream_plan.py [--messages 30000] [--rounds 5]
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
import trio.testing

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ingest import build_messages

from tanglenode.node.gossip.session import gossip
from tanglenode.node.gossip.stream_plan import StreamPlan
from tanglenode.node.net.peers import PeerState
from tanglenode.node.service.store_service import StoreService
from tanglenode.protocol.identity import Keypair
from tanglenode.storage.store import FeedStore

GOAL = 0.95  # plan / no plan, at least
MAP_SIZE = 2**31


class MemoryLink:
    """What `gossip()` uses of a secure stream, over one end of a memory stream pair."""

    def __init__(self, stream: trio.abc.Stream, peer: bytes) -> None:
        self.stream, self.peer = stream, peer
        self._sending = trio.Lock()  # several tasks send, as on a secure stream

    async def send_all(self, data: bytes) -> None:
        async with self._sending:
            await self.stream.send_all(data)

    async def receive_some(self) -> bytes:
        return await self.stream.receive_some(1 << 16)

    async def aclose(self) -> None:
        await self.stream.aclose()


def open_store(path: Path, seed: int) -> tuple[FeedStore, Keypair]:
    me = Keypair(bytes([seed]) * 32)
    return FeedStore(path, keypair=me, map_size=MAP_SIZE), me


async def catch_up(source: StoreService, source_key: Keypair, root: Path, count: int, once: bool):
    """Seconds until a fresh sink holds what `source` does, over one connection."""
    store, sink_key = open_store(root, 2)
    sink = StoreService(store)
    source.shared(StreamPlan).once = sink.shared(StreamPlan).once = once
    try:
        started = time.perf_counter()
        ours, theirs = trio.testing.memory_stream_pair()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                gossip, MemoryLink(ours, sink_key.public), source, PeerState(sink_key.public)
            )
            nursery.start_soon(
                gossip, MemoryLink(theirs, source_key.public), sink, PeerState(source_key.public)
            )
            while sum(sink.clock.values()) < count:
                await sink.wait_changed(sink.version)
            took = time.perf_counter() - started
            nursery.cancel_scope.cancel()
    finally:
        store.close()
    return took


async def run(args) -> None:
    raws = build_messages(args.messages, args.feeds, args.tangles, args.seed, timeframe_feeds=4)
    with tempfile.TemporaryDirectory(prefix="stream-plan-") as scratch:
        root = Path(scratch)
        store, source_key = open_store(root / "source", 1)
        for start in range(0, len(raws), 2048):
            store.writes.ingest(raws[start : start + 2048])
        source = StoreService(store)
        rates: dict[str, list[float]] = {"plan": [], "no plan": []}
        ratios = []
        for round_ in range(args.rounds):
            took = {}
            for name, once in (("plan", True), ("no plan", False)):
                seconds = await catch_up(
                    source, source_key, root / f"sink-{round_}-{once}", len(raws), once
                )
                took[name] = seconds
                rates[name].append(len(raws) / seconds)
            ratios.append(took["no plan"] / took["plan"])
            print(
                f"round {round_ + 1}: plan {len(raws) / took['plan']:,.0f} msgs/s, "
                f"no plan {len(raws) / took['no plan']:,.0f} msgs/s",
                flush=True,
            )
        store.close()
    ratio = statistics.median(ratios)
    print(
        f"\n{platform.node()}, {args.messages:,} messages, {args.feeds} feeds, median of "
        f"{args.rounds} rounds"
    )
    for name, values in rates.items():
        print(f"  {name:8} {statistics.median(values):>10,.0f} msgs/s")
    verdict = "met" if ratio >= GOAL else "MISSED"
    print(f"  plan / no plan {ratio:.3f} (goal: at least {GOAL}): {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=30_000)
    parser.add_argument("--feeds", type=int, default=64)
    parser.add_argument("--tangles", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    trio.run(run, parser.parse_args())


if __name__ == "__main__":
    main()
