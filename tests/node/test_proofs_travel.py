"""A fork proof reaches every connected node that holds the feed, however it got the feed
(docs/PEERS.md, "Evidence travels"): real nodes on real TCP ports of 127.0.0.1, an attacker
speaking the real gossip protocol (the harness of tests/node/test_hostile_peers.py)."""

from __future__ import annotations

import pytest
import trio

from tanglenode.protocol.gossip import GossipConnection, PeerClock, PeerEvidence, PeerHello, tag_of
from tanglenode.protocol.identity import message_id
from tests.node.test_gossip_session import open_side, raw_peer
from tests.node.test_hostile_peers import attacker, fork, honest, link, push
from tests.storage.test_invalidation import state

pytestmark = pytest.mark.timeout(60)
__all__ = ["honest", "open_side"]  # the fixtures, used by name


async def test_a_proof_found_at_one_end_of_a_chain_of_three_cuts_the_feed_on_all(honest, nursery):
    a, b, c = await honest("a"), await honest("b"), await honest("c")
    link(nursery, a, b)
    link(nursery, b, c)
    await b.until(lambda: b.registry.is_connected(a.keypair.public))
    await c.until(lambda: c.registry.is_connected(b.keypair.public))
    shared = 3
    one, two = fork("chain", shared, 6)
    author = one.public
    async with attacker(a) as (to_a, ga):
        await push(to_a, ga, one.messages)  # the feed reaches b and c through a
        for node in (a, b, c):
            await node.until(lambda n=node: n.service.clock.get(author) == 6)
        await push(to_a, ga, two.messages[: shared + 1])  # the other branch, to a alone
    # The proof a makes cuts the feed there, and travels to b, which got the feed from a,
    # and on to c, which got it from b; within seconds, without a reconnection.
    with trio.fail_after(10):
        for node in (a, b, c):
            await node.until(lambda n=node: n.service.invalid.get(author) == shared + 1)
            await node.until(lambda n=node: n.service.clock.get(author) == shared)
    assert state(a.store) == state(b.store) == state(c.store)
    for node, peer in ((a, b), (b, c)):
        assert node.registry.peers[peer.keypair.public].last_error is None


async def test_a_peer_that_showed_a_head_we_reach_later_hears_of_it_and_gets_the_proof(
    open_side,
):
    """The peer told us a head; we reach that very head through another peer. Its clock
    note is owed nothing (we are not ahead), but it is told we hold the feed, and our proof
    about it goes to it."""
    shared = 2
    one, two = fork("elsewhere", shared, 5)
    author = one.public
    a = open_side("a")
    session, their_end = raw_peer(a)
    theirs = GossipConnection(window=64)
    heard: dict[bytes, int] = {}
    proofs: list[list[bytes]] = []
    arrived = trio.Event()

    async def read_theirs() -> None:
        nonlocal arrived
        while data := await their_end.receive_some():
            arrived.set()
            arrived = trio.Event()
            for event in theirs.receive_data(data):
                if isinstance(event, PeerHello | PeerClock):
                    clock = event.clock if isinstance(event, PeerHello) else event.changes
                    heard.update({feed: seq for feed, (seq, _tag) in clock.items()})
                elif isinstance(event, PeerEvidence):
                    proofs.append(event.raws)

    async def until_heard(condition) -> None:
        with trio.fail_after(10):
            while not condition():
                await arrived.wait()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: session.run(window=64))
        await their_end.send_all(theirs.hello({author: (5, tag_of(one.messages[-1].id))}))
        nursery.start_soon(read_theirs)
        await a.service.ingest([m.raw for m in one.messages])  # from another peer
        await until_heard(lambda: heard.get(author) == 5)
        await a.service.ingest([m.raw for m in two.messages[: shared + 1]])
        await a.until(lambda: a.service.invalid.get(author) == shared + 1)
        await until_heard(lambda: len(proofs) == 1)
        nursery.cancel_scope.cancel()
    assert {message_id(raw) for raw in proofs[0]} == {
        one.messages[shared].id,
        two.messages[shared].id,
    }
