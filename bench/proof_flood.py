"""A flood of fork proofs about throwaway feeds, against the goals of docs/PEERS.md, "Proofs".

One victim node (a real store behind a real `StoreService`) runs real gossip
sessions with `--peers` honest nodes and with a flooder, each over trio's
in-memory streams on the real clock. The flooder speaks the gossip protocol
itself and sends `--proofs` EVIDENCE frames, each a fork at seq 1 of a fresh
feed nobody holds, as fast as its credit allows (the victim's proof rate is
raised past the flood for this, so what is measured is what each proof costs,
not the cap). Meanwhile the first honest node publishes a message every
0.1 s and the victim's receipt of each is timed.

Figures, against their goals:

  cost      seconds for the victim to store each 500 proofs: the last 500
            within 1.5x of the first 500
  latency   honest publish -> victim stored, median during the flood, within
            2x of the same measured idle (before the flood)
  new node  a fresh node connecting to the victim after the flood: seconds
            until it holds every honest message, and the proofs it was sent
            (it holds none of the flooded feeds: none are of use to it),
            within 10 s

Usage: .venv/bin/python bench/proof_flood.py [--proofs 4000] [--peers 3] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import trio
import trio.testing

from tanglenode.node.gossip.session import gossip
from tanglenode.node.net.peers import PeerState
from tanglenode.node.service.store_service import StoreService
from tanglenode.protocol.framing import FrameDecoder
from tanglenode.protocol.gossip import FrameKind, GossipConnection
from tanglenode.protocol.identity import Keypair
from tanglenode.protocol.message import sign_message
from tanglenode.storage.store import FeedStore

BLOCK = 500
PUBLISH_GAP = 0.1


class Link:
    """What `gossip()` uses of a SecureStream, over an in-memory stream."""

    def __init__(self, stream: trio.abc.Stream, peer: bytes) -> None:
        self.stream, self.peer = stream, peer
        self._lock = trio.Lock()

    async def send_all(self, data: bytes) -> None:
        async with self._lock:
            await self.stream.send_all(data)

    async def receive_some(self) -> bytes:
        return await self.stream.receive_some(65536)

    async def aclose(self) -> None:
        await self.stream.aclose()


def fork_pairs(count: int) -> list[list[bytes]]:
    pairs = []
    for _ in range(count):
        key = Keypair.generate()
        pairs.append(
            [
                sign_message(
                    key, seq=1, prev=None, timestamp=1, timeframe={}, tangles={}, content=n
                ).raw
                for n in ("one", "two")
            ]
        )
    return pairs


def node(root: Path, name: str) -> StoreService:
    store = FeedStore(root / name, keypair=Keypair.generate(), map_size=2**30)
    return StoreService(store)


def join(nursery, a: StoreService, b: StoreService, **options) -> None:
    ours, theirs = trio.testing.memory_stream_pair()
    for service, end, other in ((a, ours, b), (b, theirs, a)):
        key = other.store.keypair.public
        nursery.start_soon(lambda s=service, e=end, k=key: gossip(Link(e, k), s, PeerState(k)))


async def flood(victim: StoreService, pairs: list[list[bytes]]) -> None:
    """Send every proof as credit allows, until the victim holds them all."""
    ours, theirs = trio.testing.memory_stream_pair()
    key = Keypair.generate().public
    rate = {"rate": 1e9, "burst": 1 << 30}
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: gossip(Link(ours, key), victim, PeerState(key), proof_rate=rate))
        machine = GossipConnection(window=64)
        await theirs.send_all(machine.hello({}))
        while not machine.peer_said_hello:
            machine.receive_data(await theirs.receive_some())
        for pair in pairs:
            while machine.send_credit < 2:
                machine.receive_data(await theirs.receive_some())
            await theirs.send_all(machine.evidence(pair))
        while len(victim.invalid) < len(pairs):
            await victim.wait_changed(victim.version)
        nursery.cancel_scope.cancel()


async def watch_blocks(victim: StoreService, total: int, stamps: list[float]) -> None:
    start = trio.current_time()
    for block in range(1, total // BLOCK + 1):
        while len(victim.invalid) < block * BLOCK:
            await victim.wait_changed(victim.version)
        stamps.append(trio.current_time() - start)


async def latencies(author: StoreService, victim: StoreService, stop: trio.Event) -> list[float]:
    found = []
    while not stop.is_set():
        published = await author.publish({"at": time.time()}, None)
        sent = trio.current_time()
        while victim.clock.get(published.author, 0) < published.seq:
            await victim.wait_changed(victim.version)
        found.append(trio.current_time() - sent)
        await trio.sleep(PUBLISH_GAP)
    return found


async def one_round(proofs: int, peers: int) -> dict:
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        victim = node(root, "victim")
        honest = [node(root, f"honest-{n}") for n in range(peers)]
        pairs = fork_pairs(proofs)
        figures: dict = {}
        async with trio.open_nursery() as nursery:
            for other in honest:
                join(nursery, victim, other)
            stop = trio.Event()
            idle: list[float] = []
            async with trio.open_nursery() as timing:

                async def measure(into: list[float]) -> None:
                    into.extend(await latencies(honest[0], victim, stop))

                timing.start_soon(measure, idle)
                await trio.sleep(3)
                stop.set()
            stop = trio.Event()
            during: list[float] = []
            stamps: list[float] = []
            async with trio.open_nursery() as flooding:
                flooding.start_soon(measure, during)
                flooding.start_soon(watch_blocks, victim, proofs, stamps)
                await flood(victim, pairs)
                stop.set()
            blocks = [b - a for a, b in zip([0.0, *stamps], stamps, strict=False)]
            newcomer = node(root, "new")
            started = trio.current_time()
            sent_to_new = []
            ours, theirs = trio.testing.memory_stream_pair()
            decoder = FrameDecoder()

            class Counting(Link):
                async def send_all(self, data: bytes) -> None:
                    decoder.receive_data(data)
                    while (frame := decoder.next_frame()) is not None:
                        if frame[0] == FrameKind.EVIDENCE:
                            sent_to_new.append(frame)
                    await super().send_all(data)

            vkey, nkey = victim.store.keypair.public, newcomer.store.keypair.public
            nursery.start_soon(lambda: gossip(Counting(ours, nkey), victim, PeerState(nkey)))
            nursery.start_soon(lambda: gossip(Link(theirs, vkey), newcomer, PeerState(vkey)))
            target = {f: s for f, s in victim.clock.items()}
            while any(newcomer.clock.get(f, 0) < s for f, s in target.items()):
                await newcomer.wait_changed(newcomer.version)
            figures["new_node_s"] = trio.current_time() - started
            figures["proofs_to_new"] = len(sent_to_new)
            nursery.cancel_scope.cancel()
        for service in [victim, newcomer, *honest]:
            service.store.close()
        figures["first_block_s"], figures["last_block_s"] = blocks[0], blocks[-1]
        figures["idle_ms"] = statistics.median(idle) * 1000
        figures["flood_ms"] = statistics.median(during) * 1000
        figures["flood_max_ms"] = max(during) * 1000
        figures["blocks"] = blocks
        return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--proofs", type=int, default=4000)
    parser.add_argument("--peers", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"{args.proofs} proofs, {args.peers} honest peers, {args.rounds} rounds"
    )
    rounds = []
    for number in range(args.rounds):
        figures = trio.run(one_round, args.proofs, args.peers)
        rounds.append(figures)
        blocks = " ".join(f"{b:.2f}" for b in figures["blocks"])
        print(
            f"round {number + 1}: per {BLOCK} proofs (s): {blocks}; idle "
            f"{figures['idle_ms']:.1f} ms, flood {figures['flood_ms']:.1f} ms (max "
            f"{figures['flood_max_ms']:.0f}); new node {figures['new_node_s']:.2f} s, "
            f"{figures['proofs_to_new']} proofs sent to it"
        )

    def median(key: str) -> float:
        return statistics.median(r[key] for r in rounds)

    ratio = median("last_block_s") / median("first_block_s")
    slow = median("flood_ms") / median("idle_ms")
    print(f"{'figure':<34}{'median':>12}{'goal':>14}  met")
    print(f"{'last 500 / first 500 proofs':<34}{ratio:>11.2f}x{'<= 1.5x':>14}  {ratio <= 1.5}")
    print(f"{'first 500 proofs (s)':<34}{median('first_block_s'):>12.2f}")
    print(f"{'last 500 proofs (s)':<34}{median('last_block_s'):>12.2f}")
    print(f"{'honest latency idle (ms)':<34}{median('idle_ms'):>12.1f}")
    print(f"{'honest latency in flood (ms)':<34}{median('flood_ms'):>12.1f}")
    print(f"{'flood / idle latency':<34}{slow:>11.2f}x{'<= 2x':>14}  {slow <= 2}")
    new = median("new_node_s")
    print(f"{'new node caught up (s)':<34}{new:>12.2f}{'<= 10 s':>14}  {new <= 10}")
    print(f"{'proofs sent to the new node':<34}{median('proofs_to_new'):>12.0f}")


if __name__ == "__main__":
    main()
