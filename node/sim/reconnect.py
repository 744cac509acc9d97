"""The scenario `reconnect`: what connecting costs nodes that carry many feeds and differ in few.

Theory of operation
-------------------
Before any link is made, every node is given the same `feeds` feeds: one
signed message (seq 1) of each of `feeds` authors, drawn from the run's
generator, none of them a node. Of those, `differ` feeds have a second
message (seq 2), which node 0 alone holds: two nodes then differ in
`differ` feeds by one message each. The messages are signed once, checked
once (`storage.feeds.ingest.prepare`, in batches) and stored into every
node from the same checked batches through its service
(`StoreService.ingest_prepared`, the path a gossip batch takes after its
signatures), so 5,000 feeds cost a few seconds, not 5,000 checks a node.

Then the topology's links are made at once (two nodes: one link), and
the run waits until every node holds every second message. From the
moment of connecting to then:

    sync_bytes          gossip bytes sent on all links (every frame, both
                        ways: HELLO, CLOCK, WANT, the messages, credit)
    sync_seconds        virtual seconds
    sync_round_trips    sync_seconds over the round trip (2 x latency): it
                        counts learning what differs and fetching it

With `differ` 0 nothing is to fetch, and the end is when the links fall
quiet (no byte in flight while every task waits): the cost of learning
that nothing differs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from tanglenode.node.sim.erasure import quiet
from tanglenode.protocol.identity import Keypair
from tanglenode.protocol.message import Message, sign_message
from tanglenode.storage.feeds.ingest import PreparedBatch, prepare

if TYPE_CHECKING:
    from tanglenode.node.sim.network import SimConfig, _Deliveries
    from tanglenode.node.sim.wiring import Wiring

BATCH = 1000  # messages checked and stored together
TIMESTAMP = 1_800_000_000_000  # the feeds' messages' time (ms): as the run's clock starts


async def build_and_connect(
    config: SimConfig, wiring: Wiring, graph, deliveries: _Deliveries
) -> dict:
    """Give every node the feeds, connect, wait until all hold the same (or `settle`
    passes); the scenario's SimResult fields, and `wire_bytes` and `received`."""
    firsts, seconds = _feeds(config, wiring)
    nodes = wiring.nodes
    limits = nodes[0].store.limits
    for start in range(0, len(firsts), BATCH):
        batch = prepare([m.raw for m in firsts[start : start + BATCH]], limits)
        for node in nodes:
            await node.service.ingest_prepared(_copy(batch))
    await nodes[0].service.ingest_prepared(prepare([m.raw for m in seconds], limits))
    deliveries.expected = len(seconds) * (len(nodes) - 1)
    began = trio.current_time()
    for message in seconds:
        deliveries.published[(message.author, message.seq)] = began
        deliveries.sizes.append(len(message.raw))
    for i, j in graph:
        wiring.connect(i, j)
    with trio.move_on_after(config.settle):
        if seconds:
            await deliveries.done.wait()
        else:
            await quiet(wiring, config.settle)
    synced = deliveries.done.is_set() or not seconds
    took = trio.current_time() - began
    sent = wiring.bytes_sent
    return {
        "wire_bytes": sent,
        "received": sum(node.received for node in nodes),
        "virtual": took,
        "sync_bytes": sent if synced else None,
        "sync_seconds": round(took, 3) if synced else None,
        "sync_round_trips": round(took / (2 * config.latency), 2)
        if synced and config.latency
        else None,
    }


def _feeds(config: SimConfig, wiring: Wiring) -> tuple[list[Message], list[Message]]:
    """The first message of each of `feeds` authors, and the second of the first `differ`."""
    firsts, seconds = [], []
    for number in range(config.feeds):
        author = Keypair(wiring.rng.randbytes(32))
        first = _sign(author, 1, None, number)
        firsts.append(first)
        if number < config.differ:
            seconds.append(_sign(author, 2, first.id, number))
    return firsts, seconds


def _sign(author: Keypair, seq: int, prev: bytes | None, number: int) -> Message:
    return sign_message(
        author,
        seq=seq,
        prev=prev,
        timestamp=TIMESTAMP + seq,
        timeframe={},
        tangles={},
        content={"type": "post", "feed": number, "seq": seq},
    )


def _copy(batch: PreparedBatch) -> PreparedBatch:
    """A checked batch for one more store (each store's ingest fills in its results)."""
    return PreparedBatch(list(batch.ids), list(batch.messages), list(batch.results))
