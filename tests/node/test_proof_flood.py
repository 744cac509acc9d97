"""Proofs that scale: a new proof costs a session no read of every kept proof, a peer's proofs
are capped by a rate, and a proof goes only to a peer whose clock names its feed. Real stores
and services, real `gossip()`, over trio's memory streams (tests/node/test_gossip_session.py
has the harness)."""

from __future__ import annotations

import pytest
import trio

from tanglenode.protocol.gossip import FrameKind, GossipConnection
from tanglenode.protocol.message import author_of
from tests.factories import Feed
from tests.node.test_gossip_session import Wire, open_side, raw_peer, start

pytestmark = pytest.mark.timeout(30)
__all__ = ["open_side"]  # the fixture, used by name


def forked(label: str) -> tuple[list, object]:
    """A feed's first two messages, and another message at its seq 2: the pair is a proof."""
    feed = Feed(f"flood-{label}")
    first, second = feed.append({"n": 0}), feed.append({"n": 1})
    twin = Feed(feed.keypair)
    twin.messages = [first]
    return [first, second], twin.append({"n": "the other branch"})


async def test_a_new_proof_costs_a_session_no_read_of_every_kept_proof(open_side, autojump_clock):
    old = [forked(f"old-{n}") for n in range(40)]
    new = [forked(f"new-{n}") for n in range(5)]
    b = open_side("b", *[[*chain, other] for chain, other in old], inline=True)
    # a holds the first message of every feed: its clock names them all
    a = open_side("a", [chain[0] for chain, _ in old + new], inline=True)
    whole_reads, read_after = [], []
    evidence, proofs_after = b.store.feeds.evidence, b.store.feeds.proofs_after
    b.store.feeds.evidence = lambda: whole_reads.append(1) or evidence()
    b.store.feeds.proofs_after = lambda n, limit: (
        read_after.append(proofs_after(n, limit)) or (read_after[-1])
    )
    async with trio.open_nursery() as nursery:
        sa, sb = start(nursery, a, b, Wire())
        await a.until(lambda: len(a.service.invalid) == 40)  # the old ones, by a's clock
        read_after.clear()
        for chain, other in new:
            await b.service.ingest([m.raw for m in chain])
            await b.service.ingest([other.raw])
            await a.until(lambda f=chain[0].author: f in a.service.invalid)
        assert not sa.ended.is_set() and not sb.ended.is_set()
        nursery.cancel_scope.cancel()
    assert whole_reads == []  # never every kept proof
    # Each new proof was read once by b's session, whatever b held before it.
    assert sum(len(page) for page in read_after) == len(new)
    assert len(a.store.feeds.evidence()) == 45


async def test_a_peer_over_its_proof_rate_is_refused_with_a_reason_and_not_dropped(
    open_side, autojump_clock
):
    proofs = [forked(f"rate-{n}") for n in range(8)]
    a = open_side("a", [chain[0] for chain, _ in proofs], inline=True)
    session, their_end = raw_peer(a)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: session.run(window=64, proof_rate={"rate": 0.1, "burst": 3}))
        theirs = GossipConnection(window=64)
        await their_end.send_all(theirs.hello({}))
        while not theirs.peer_said_hello:
            theirs.receive_data(await their_end.receive_some())
        for chain, other in proofs:
            await their_end.send_all(theirs.evidence([chain[1].raw, other.raw]))
        granted = 0
        while granted < 2 * len(proofs):  # every proof's credit comes back, refused or not
            for event in theirs.receive_data(await their_end.receive_some()):
                granted += getattr(event, "granted", 0)
        assert not session.ended.is_set()  # not dropped for it
        nursery.cancel_scope.cancel()
    assert len(a.store.feeds.evidence()) == 3  # the burst; the rest refused, never checked
    assert session.peer.proofs_refused == 5
    assert session.reason is None


async def test_a_proof_goes_to_a_peer_only_once_its_clock_names_the_feed(open_side, autojump_clock):
    feed = Feed("flood-unheld")
    first = feed.append({"n": 0})
    twin = Feed(feed.keypair)
    other = twin.append({"n": "the other first"})
    b = open_side("b", [first, other], inline=True)  # the proof, and nothing of the feed
    a = open_side("a", inline=True)  # holds nothing of the forked feed either
    wire = Wire()
    async with trio.open_nursery() as nursery:
        sa, sb = start(nursery, a, b, wire)
        published = await b.service.publish({"after": "the proof"}, None)
        await a.until(lambda: a.service.clock.get(published.author) == 1)
        assert wire.of("b", FrameKind.EVIDENCE) == []  # a cannot use it
        assert feed.public not in a.service.invalid
        await a.service.ingest([first.raw])  # from another peer: a's CLOCK names the feed
        await a.until(lambda: feed.public in a.service.invalid)
        assert not sa.ended.is_set() and not sb.ended.is_set()
        nursery.cancel_scope.cancel()
    (frame,) = wire.of("b", FrameKind.EVIDENCE)
    assert {author_of(raw) for raw in frame[1]} == {feed.public}
    assert feed.public not in a.service.clock  # cut back: the fork is at its first message
