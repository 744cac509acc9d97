"""Sessions that reconcile their clocks by a walk (protocol/reconcile.py), and peers that do
not walk: real stores, real `gossip()`, over trio's memory streams (tests/node/
test_gossip_session.py's harness)."""

from __future__ import annotations

import msgpack
import pytest
import trio
import trio.testing

from tanglenode.protocol.framing import encode_frame
from tanglenode.protocol.gossip import (
    FrameKind,
    GossipConnection,
    PeerClock,
    PeerOffersReconcile,
    PeerReconcile,
    PeerWants,
)
from tanglenode.protocol.reconcile import Reconciliation
from tanglenode.protocol.reconcile_shape import FINGERPRINT
from tests.node.test_gossip_session import Wire, chain, open_side, raw_peer, start

__all__ = ["open_side"]  # the fixture, used by name

pytestmark = pytest.mark.timeout(60)

FEEDS = 300


async def walk_as_a_peer(their_end, theirs: GossipConnection, to_the_end: bool = True):
    """Speak for a peer that walks, with an empty clock: HELLO and the offer, then the walk
    (to its end, or until the node's opening came). A walking peer is told no CLOCK."""
    walk = Reconciliation({}, b"salt of the pair", False)  # the node's end of `raw_peer` leads
    await their_end.send_all(theirs.hello({}) + theirs.offer_reconcile())
    opened = False
    while not (walk.done if to_the_end else opened):
        for event in theirs.receive_data(await their_end.receive_some()):
            assert not isinstance(event, PeerClock)
            if isinstance(event, PeerOffersReconcile):
                await their_end.send_all(theirs.reconcile(walk.opening()))
            elif isinstance(event, PeerReconcile):
                opened = True
                if to_the_end and (reply := walk.receive(event.ranges)) is not None:
                    await their_end.send_all(theirs.reconcile(reply))
    return walk


@pytest.fixture(scope="module")
def feeds() -> list[list]:
    return [chain(f"walked-{n}", 2) for n in range(FEEDS)]


async def test_two_nodes_walk_their_clocks_and_fetch_only_what_differs(
    open_side, autojump_clock, feeds
):
    """300 feeds in common, three a message ahead on one side and two on the other: the
    two learn that in a walk of a few hundred bytes, not in two 300-feed clocks, and each
    then fetches exactly what it lacks."""
    firsts = [feed[0] for feed in feeds]
    a = open_side("a", firsts, [feed[1] for feed in feeds[:3]])
    b = open_side("b", firsts, [feed[1] for feed in feeds[3:5]])
    expected = {feed[0].author: 2 if n < 5 else 1 for n, feed in enumerate(feeds)}
    wire = Wire()
    async with trio.open_nursery() as nursery:
        sa, sb = start(nursery, a, b, wire)
        await a.until(lambda: a.service.clock == expected)
        await b.until(lambda: b.service.clock == expected)
        assert not sa.ended.is_set() and not sb.ended.is_set()
        nursery.cancel_scope.cancel()
    for side in ("a", "b"):
        (hello,) = wire.of(side, FrameKind.HELLO)
        assert hello[2] == {}  # HELLO tells no clock
        assert wire.of(side, FrameKind.RECONCILE)  # the walk did
        assert all(len(frame[1]) <= 5 for frame in wire.of(side, FrameKind.CLOCK))
        # the feeds alike are subscribed to by position: one run of ones, a few bytes
        (agreed,) = wire.of(side, FrameKind.WANT_AGREED)
        assert len(msgpack.packb(agreed)) < 16
        assert sum(len(frame[1]) for frame in wire.of(side, FrameKind.WANT)) <= 5
    assert len(wire.raws_from("a")) == 3 and len(wire.raws_from("b")) == 2
    told = sum(
        len(msgpack.packb(frame))
        for _, kind, frame in wire.frames
        if kind not in (FrameKind.MESSAGES, FrameKind.CREDIT)
    )
    one_clock = len(msgpack.packb({m.author: [1, bytes(16)] for m in firsts}))
    assert told < one_clock / 3  # both ways, all told: under a third of one side's clock


async def test_a_peer_that_does_not_walk_hears_every_head_in_clock(open_side, autojump_clock):
    """A version-5 node from before the walk tells its clock in HELLO and never offers: it
    is told ours in CLOCK at once, and asked for what it is ahead on."""
    carol, dave = chain("carol", 3), chain("dave", 2)
    a = open_side("a", carol, dave[:1])
    session, their_end = raw_peer(a)
    theirs = GossipConnection(window=64)
    heads: dict = {}
    async with trio.open_nursery() as nursery:
        nursery.start_soon(session.run)
        await their_end.send_all(
            theirs.hello({dave[0].author: (2, dave[1].id[:16])}) + theirs.offer_presence()
        )
        wanted = None
        while wanted is None or len(heads) < 2:
            for event in theirs.receive_data(await their_end.receive_some()):
                assert not isinstance(event, PeerReconcile)
                if isinstance(event, PeerClock):
                    heads.update(event.changes)
                elif isinstance(event, PeerWants):
                    wanted = event.wants
        nursery.cancel_scope.cancel()
    assert heads == {carol[0].author: (3, carol[2].id[:16]), dave[0].author: (1, dave[0].id[:16])}
    assert wanted == {dave[0].author: 1}


async def test_a_silent_peer_that_does_not_walk_hears_our_clock_after_the_wait(
    open_side, autojump_clock
):
    from tanglenode.node.gossip.walk_session import UNDECIDED_WAIT

    carol = chain("carol", 2)
    a = open_side("a", carol, inline=True)  # no store work in threads: virtual time is exact
    session, their_end = raw_peer(a)
    theirs = GossipConnection(window=64)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(session.run)
        began = trio.current_time()
        await their_end.send_all(theirs.hello({}))
        told: dict = {}
        while not told:
            for event in theirs.receive_data(await their_end.receive_some()):
                if isinstance(event, PeerClock):
                    told = event.changes
        waited = trio.current_time() - began
        nursery.cancel_scope.cancel()
    assert told == {carol[0].author: (2, carol[1].id[:16])}
    assert UNDECIDED_WAIT <= waited < UNDECIDED_WAIT + 1


async def test_reconcile_from_a_peer_that_did_not_offer_it_drops_the_peer(
    open_side, autojump_clock
):
    a = open_side("a", chain("carol", 1))
    session, their_end = raw_peer(a)
    theirs = GossipConnection(window=64)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(session.run)
        opening = encode_frame([FrameKind.RECONCILE, [[None, FINGERPRINT, bytes(8)]]])
        await their_end.send_all(theirs.hello({}) + theirs.offer_presence() + opening)
        await session.ended.wait()
    assert session.reason is not None and session.reason.startswith("reconcile: ")
    assert "did not offer" in session.reason


async def test_a_walk_that_breaks_its_rules_drops_the_peer_with_the_reason(
    open_side, autojump_clock
):
    a = open_side("a", chain("carol", 1))
    session, their_end = raw_peer(a)
    theirs = GossipConnection(window=64)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(session.run)
        await walk_as_a_peer(their_end, theirs, to_the_end=False)
        await their_end.send_all(theirs.reconcile([[None, 9, None]]))
        await session.ended.wait()
    assert session.reason == "reconcile: unknown range mode 9"


async def test_a_node_that_walks_and_one_that_does_not_gossip_as_before(open_side, autojump_clock):
    """One side speaks as a version-5 node from before the walk (`walk=False`: its clock in
    HELLO, no offer): the other tells it every head in CLOCK, by key, and both catch up."""
    carol, dave = chain("carol", 4), chain("dave", 3)
    a = open_side("a", carol)
    b = open_side("b", dave, carol[:2])
    expected = {carol[0].author: 4, dave[0].author: 3}
    wire = Wire()
    async with trio.open_nursery() as nursery:
        sa, sb = start(nursery, a, b, wire, b_options={"walk": False})
        await a.until(lambda: a.service.clock == expected)
        await b.until(lambda: b.service.clock == expected)
        assert not sa.ended.is_set() and not sb.ended.is_set()
        nursery.cancel_scope.cancel()
    assert not wire.of("a", FrameKind.RECONCILE) and not wire.of("b", FrameKind.RECONCILE)
    assert wire.of("b", FrameKind.HELLO)[0][2]  # b told its clock in HELLO
    assert {carol[0].author} <= {
        feed for frame in wire.of("a", FrameKind.CLOCK) for feed in frame[1]
    }
    for named in (FrameKind.CLOCK_NAMED, FrameKind.WANT_NAMED, FrameKind.WANT_AGREED):
        assert not wire.of("a", named)


async def test_after_the_walk_notes_and_wants_name_feeds_by_position(open_side, autojump_clock):
    """Feeds alike at the walk's end, and feeds named once by key since, go by position."""
    carol, dave = chain("carol", 6), chain("dave", 3)
    a = open_side("a", carol[:2])
    b = open_side("b", carol[:2])
    wire = Wire()
    async with trio.open_nursery() as nursery:
        start(nursery, a, b, wire)
        for message in carol[2:4]:  # a feed alike at the walk's end
            await a.service.ingest([message.raw])
        await b.until(lambda: b.service.clock.get(carol[0].author) == 4)
        await b.service.ingest([dave[0].raw])  # new to both: named by key, once
        await a.until(lambda: a.service.clock.get(dave[0].author) == 1)
        await b.service.ingest([m.raw for m in dave[1:]])
        await a.until(lambda: a.service.clock.get(dave[0].author) == 3)
        nursery.cancel_scope.cancel()
    keyed = [feed for frame in wire.of("b", FrameKind.CLOCK) for feed in frame[1]]
    assert keyed.count(dave[0].author) <= 1  # by key once; by position after
    assert wire.of("a", FrameKind.WANT_NAMED)  # a asked for dave by the position b gave it
    assert all(dave[0].author not in frame[1] for frame in wire.of("a", FrameKind.WANT))
    named = wire.of("a", FrameKind.CLOCK_NAMED) + wire.of("b", FrameKind.CLOCK_NAMED)
    assert all(len(msgpack.packb(frame)) < 40 for frame in named)  # one note: a few bytes


async def test_a_feed_named_by_a_position_not_given_drops_the_peer(open_side, autojump_clock):
    a = open_side("a", chain("carol", 1))
    session, their_end = raw_peer(a)
    theirs = GossipConnection(window=64)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(session.run)
        walk = await walk_as_a_peer(their_end, theirs)
        assert walk.agreed() == []  # nothing alike: no feed is named by position yet
        await their_end.send_all(theirs.clock_named([7, 1, bytes(16)]))
        await session.ended.wait()
    assert session.reason == "reconcile: no feed is named 7 here"


async def test_two_nodes_holding_the_same_clock_exchange_under_200_bytes(
    open_side, autojump_clock, feeds
):
    """300 feeds alike: HELLO, the offers, the crossing openings and the subscription to all
    of them by position, both ways, fit in 200 bytes (each frame with its 4-byte length)."""
    firsts = [feed[0] for feed in feeds]
    a, b = open_side("a", firsts, inline=True), open_side("b", firsts, inline=True)
    wire = Wire()
    async with trio.open_nursery() as nursery:
        start(nursery, a, b, wire)
        await trio.testing.wait_all_tasks_blocked()  # the exchange is over: all wait on it
        nursery.cancel_scope.cancel()
    assert sum(len(msgpack.packb(frame)) + 4 for _, _, frame in wire.frames) < 200
    assert {kind for _, kind, _ in wire.frames} == {
        FrameKind.HELLO,
        FrameKind.CLOCK,  # the offer (of presence too)
        FrameKind.RECONCILE,
        FrameKind.WANT_AGREED,
    }


async def test_reconcile_to_a_node_that_does_not_walk_drops_the_peer_at_the_first_frame(
    open_side, autojump_clock
):
    """A node that does not walk (walk=False) refuses RECONCILE outright, whatever a peer's
    offer said: a frame of a million empty ranges costs its decoding, then the peer."""
    a = open_side("a", chain("carol", 1))
    session, their_end = raw_peer(a)
    theirs = GossipConnection(window=64)
    junk = encode_frame([FrameKind.RECONCILE, [[]] * 250_000])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: session.run(walk=False))
        await their_end.send_all(theirs.hello({}) + theirs.offer_reconcile() + junk)
        await session.ended.wait()
    assert session.reason is not None and session.reason.startswith("reconcile: ")


async def test_a_walk_message_over_its_bounds_drops_the_peer_before_it_is_gathered(
    open_side, autojump_clock
):
    a = open_side("a", chain("carol", 1))
    session, their_end = raw_peer(a)
    theirs = GossipConnection(window=64)
    many = encode_frame(
        [FrameKind.RECONCILE, [[b"\x01" * (1 + n % 31), 0, None] for n in range(20_000)]]
    )
    async with trio.open_nursery() as nursery:
        nursery.start_soon(session.run)
        await their_end.send_all(theirs.hello({}) + theirs.offer_reconcile() + many)
        await session.ended.wait()
    assert session.reason is not None and "ranges" in session.reason
