"""Gossip within a replication scope: a node asks for, advertises and serves only the feeds it
carries (storage/scope.py), follows what it newly carries while connected, and drops a peer
that pushes a feed it never asked for. Real stores and services, real `gossip()`, over
trio's memory streams (tests/node/test_gossip_session.py has the harness)."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from tanglenode.node.service.store_service import SCOPE_REFRESH_GAP
from tanglenode.protocol.contacts import FOLLOW, contact_content
from tanglenode.protocol.gossip import FrameKind, GossipConnection
from tanglenode.protocol.message import author_of
from tanglenode.storage.scope import BOUND, Scope
from tests.factories import Feed
from tests.node.test_gossip_session import (
    Side,
    Wire,
    chain,
    open_side,
    raw_peer,
    start,
)
from tests.storage.test_scope import contact
from tests.storage.test_scope_bounds import flooding_feed

pytestmark = pytest.mark.timeout(20)
__all__ = ["open_side"]  # the fixture, used by name


async def follow(side: Side, feed: bytes, hops: int = 1) -> None:
    """`side` follows `feed` and carries what `hops` reach from it."""
    side.service.hops = hops
    await side.service.publish(contact_content(feed, following=True, blocking=False), None)
    await side.service.refresh_scope()


def advertised(wire: Wire, sender: str) -> set[bytes]:
    """Every feed `sender`'s HELLO and CLOCK frames named."""
    named: set[bytes] = set()
    for frame in wire.of(sender, FrameKind.HELLO):
        named |= set(frame[2])
    for frame in wire.of(sender, FrameKind.CLOCK):
        named |= set(frame[1])
    return named


async def test_a_node_asks_for_advertises_and_serves_only_what_it_carries(
    open_side, autojump_clock
):
    carol, dave, zed = chain("carol", 12), chain("dave", 7), chain("zed", 5)
    a = open_side("a", zed)  # zed: held from before a chose a scope
    b = open_side("b", carol, dave, own=3)
    await follow(a, carol[0].author)
    wire = Wire()
    async with trio.open_nursery() as nursery:
        # as two nodes that do not walk: every feed told and asked for by key, read off the wire
        sa, sb = start(nursery, a, b, wire, walk=False)
        await a.until(lambda: a.service.clock.get(carol[0].author) == 12)
        await b.until(lambda: b.service.clock.get(a.keypair.public) == 1)  # a's follow
        published = await b.service.publish({"not": "followed"}, None)
        await a.service.publish({"after": "b published"}, None)
        await b.until(lambda: b.service.clock.get(a.keypair.public) == 2)
        assert not sa.ended.is_set() and not sb.ended.is_set()
        nursery.cancel_scope.cancel()
    assert dave[0].author not in a.service.clock and b.keypair.public not in a.service.clock
    assert published.id not in {m.id for m in a.store.feeds.read_feed(b.keypair.public)}
    wanted = {feed for frame in wire.of("a", FrameKind.WANT) for feed in frame[1]}
    assert wanted == {carol[0].author}
    assert a.keypair.public in advertised(wire, "a")
    assert advertised(wire, "a") <= {a.keypair.public, carol[0].author}  # never zed
    assert zed[0].author not in b.service.clock


async def test_a_feed_followed_while_connected_is_asked_for_at_once(open_side, autojump_clock):
    carol, dave = chain("carol", 4), chain("dave", 6)
    a = open_side("a")
    b = open_side("b", carol, dave)
    await follow(a, carol[0].author)
    wire = Wire()
    async with trio.open_nursery() as nursery:
        sa, _sb = start(nursery, a, b, wire)
        await a.until(lambda: a.service.clock.get(carol[0].author) == 4)
        assert dave[0].author not in a.service.clock
        await follow(a, dave[0].author)
        await a.until(lambda: a.service.clock.get(dave[0].author) == 6)
        assert not sa.ended.is_set()
        nursery.cancel_scope.cancel()


async def test_a_feed_two_hops_away_is_carried_and_a_blocked_one_is_not(open_side, autojump_clock):
    dave, erin = chain("dave", 3), chain("erin", 3)
    bob = open_side("bob")  # follows dave and erin
    for whom in (dave, erin):
        content = contact_content(whom[0].author, following=True, blocking=False)
        await bob.service.publish(content, None)
    b = open_side("b", dave, erin, bob.store.feeds.read_feed(bob.keypair.public))
    a = open_side("a")
    await a.service.publish(contact_content(erin[0].author, following=False, blocking=True), None)
    await follow(a, bob.keypair.public, hops=2)
    assert not a.service.scope.carries(dave[0].author)  # whom bob follows: not known yet
    async with trio.open_nursery() as nursery:
        await nursery.start(a.service.keep_scope)  # as the node runs it
        start(nursery, a, b, Wire())
        await a.until(lambda: a.service.clock.get(bob.keypair.public) == 2)
        await a.until(lambda: a.service.clock.get(dave[0].author) == 3)
        nursery.cancel_scope.cancel()
    assert a.service.scope.carries(dave[0].author)
    assert not a.service.scope.carries(erin[0].author)
    assert erin[0].author not in a.service.clock
    assert a.store.feeds.scope() == a.service.scope  # kept in the store


async def test_a_peer_pushing_a_feed_never_asked_for_is_dropped(open_side, autojump_clock):
    a = open_side("a")
    await follow(a, chain("carol", 1)[0].author)
    session, their_end = raw_peer(a)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: session.run(window=16))
        theirs = GossipConnection(window=16)
        await their_end.send_all(theirs.hello({}))
        while not theirs.peer_said_hello:
            theirs.receive_data(await their_end.receive_some())
        await their_end.send_all(theirs.messages([m.raw for m in chain("spam", 3)]))
        await session.ended.wait()
    assert session.reason is not None and "a feed we never asked for" in session.reason
    assert chain("spam", 1)[0].author not in a.service.clock


async def test_a_feed_unfollowed_and_followed_again_is_caught_up_and_nobody_is_dropped(
    open_side, autojump_clock
):
    carol = chain("carol", 12)
    a = open_side("a")
    b = open_side("b", carol[:4])
    await follow(a, carol[0].author)
    wire = Wire()
    async with trio.open_nursery() as nursery:
        sa, sb = start(nursery, a, b, wire)
        await a.until(lambda: a.service.clock.get(carol[0].author) == 4)
        unfollow = contact_content(carol[0].author, following=False, blocking=None)
        await a.service.publish(unfollow, None)
        await a.service.refresh_scope()
        await b.service.ingest([m.raw for m in carol[4:8]])  # pushed, or not, while out of scope
        await b.until(lambda: b.service.clock.get(a.keypair.public) == 2)  # a's unfollow
        assert a.service.clock.get(carol[0].author) == 4
        await follow(a, carol[0].author)
        await b.service.ingest([m.raw for m in carol[8:]])
        await a.until(lambda: a.service.clock.get(carol[0].author) == 12)
        assert not sa.ended.is_set() and not sb.ended.is_set()  # nobody dropped anybody
        nursery.cancel_scope.cancel()


async def test_proofs_travel_only_about_feeds_the_node_carries(open_side, autojump_clock):
    carol, zed = Feed("proof-carol"), Feed("proof-zed")
    branches = {}
    for feed in (carol, zed):
        first = feed.append({"n": 0})
        feed.append({"n": 1})
        twin = Feed(feed.keypair)
        twin.messages = [first]
        branches[feed.public] = (feed.messages, twin.append({"n": "the other branch"}))
    # b carries everything, and holds both proofs
    b = open_side("b", *[[*one, other] for one, other in branches.values()], inline=True)
    assert len(b.store.feeds.evidence()) == 2
    # a holds the first message of each, and carries carol's feed only: its clock names carol
    a = open_side("a", branches[carol.public][0][:1], branches[zed.public][0][:1], inline=True)
    await follow(a, carol.public)
    wire = Wire()
    async with trio.open_nursery() as nursery:
        sa, _sb = start(nursery, a, b, wire)
        await a.until(lambda: carol.public in a.service.invalid)
        assert not sa.ended.is_set()
        nursery.cancel_scope.cancel()
    assert [proof.messages[0].author for proof in a.store.feeds.evidence()] == [carol.public]
    assert zed.public not in a.service.invalid
    sent_by_b = [frame[1][0] for frame in wire.of("b", FrameKind.EVIDENCE)]
    assert [author_of(raw) for raw in sent_by_b] == [carol.public]  # none about zed
    assert wire.of("a", FrameKind.EVIDENCE) == []  # what a keeps came from b


async def test_contact_messages_arriving_together_refresh_the_scope_once(open_side, autojump_clock):
    a = open_side("a", inline=True)
    bob, people = Feed("gap-bob"), [Feed(f"gap-{n}") for n in range(10)]
    await follow(a, bob.public, hops=2)
    refreshes = []
    refresh = a.service.refresh_scope

    async def counted() -> bool:
        refreshes.append(trio.current_time())
        return await refresh()

    a.service.refresh_scope = counted
    async with trio.open_nursery() as nursery:
        await nursery.start(a.service.keep_scope)
        began = trio.current_time()
        for person in people:  # bob follows ten people, one message every 0.1 s
            await a.service.ingest([contact(bob, person, FOLLOW).raw])
            await trio.sleep(0.1)
        await a.until(lambda: all(a.service.scope.carries(p.public) for p in people))
        nursery.cancel_scope.cancel()
    assert len(refreshes) <= 3  # at start, then at most once a second: not once per message
    assert refreshes[-1] - began <= 1 + SCOPE_REFRESH_GAP + 0.5


async def test_a_feed_blocked_and_unblocked_while_connected_comes_back_whole(
    open_side, autojump_clock
):
    zed = chain("unblock-zed", 5)
    a = open_side("a", inline=True)
    b = open_side("b", zed, inline=True)
    await a.service.set_scope(Scope(None))  # every feed
    async with trio.open_nursery() as nursery:
        sa, sb = start(nursery, a, b, Wire())
        await a.until(lambda: a.service.clock.get(zed[0].author) == 5)
        await a.service.set_scope(Scope(None, {}, frozenset({zed[0].author})))
        assert zed[0].author not in a.service.clock  # its messages left
        assert a.store.feeds.read_feed(zed[0].author) == []
        await a.service.set_scope(Scope(None))
        await a.until(lambda: a.service.clock.get(zed[0].author) == 5)  # asked again from 0
        assert not sa.ended.is_set() and not sb.ended.is_set()
        nursery.cancel_scope.cancel()
    assert [m.seq for m in a.store.feeds.read_feed(zed[0].author)] == [1, 2, 3, 4, 5]


@pytest.mark.slow  # about 9 s: 20,500 messages signed, verified and stored
@pytest.mark.timeout(120)
async def test_a_hop_two_feed_arrives_though_a_followed_feed_follows_twenty_thousand(
    open_side, autojump_clock
):
    """Issue 41: a followed feed that sorts first and follows 20,500 feeds once filled the
    whole scope, so the feeds the others follow were never asked for."""
    flood, dora = flooding_feed(), chain("dora", 5)
    bob = open_side("bob")  # follows dora
    await bob.service.publish(contact_content(dora[0].author, following=True, blocking=False), None)
    b = open_side("b", dora, bob.store.feeds.read_feed(bob.keypair.public), inline=True)
    await follow(b, bob.keypair.public, hops=2)  # b carries bob and dora, not the flood
    a = open_side("a", flood.messages, inline=True)  # holds the flood, as after a catch-up
    assert flood.public < bob.keypair.public  # its follows are offered first
    await follow(a, flood.public, hops=2)
    await follow(a, bob.keypair.public, hops=2)
    async with trio.open_nursery() as nursery:
        await nursery.start(a.service.keep_scope)
        start(nursery, a, b, Wire())
        with trio.move_on_after(60):  # virtual seconds: the old scope never asked for dora
            await a.until(lambda: a.service.clock.get(dora[0].author) == 5)
        nursery.cancel_scope.cancel()
    assert a.service.clock.get(dora[0].author) == 5
    assert a.service.scope.feeds[dora[0].author].via == bob.keypair.public
    assert a.service.scope.left_out[flood.public].reasons == (BOUND,)
    assert a.store.feeds.scope() == a.service.scope  # what was left out is kept too
