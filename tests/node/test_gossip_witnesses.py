"""Witnesses over gossip: a node fetches the message of a feed it does not carry that a
timeframe names (ASK / WITNESS / UNHELD, protocol/gossip.py), learns from it which message
of a carried feed must come first, and gives an entry up when no peer holds it
(storage/feeds/witnesses.py, node/gossip/witness_fetch.py). Real stores, services and `gossip()`
over trio's memory streams (tests/node/test_gossip_session.py has the harness)."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from tanglenode.node.gossip.witness_fetch import ASK_WAIT, PATIENCE
from tanglenode.node.net.peers import PeerState
from tanglenode.protocol.gossip import (
    MAX_ASK,
    FrameKind,
    GossipConnection,
    PeerAsks,
    PeerWitnesses,
)
from tanglenode.protocol.identity import Keypair
from tests.factories import Feed
from tests.node.test_gossip_scope import follow
from tests.node.test_gossip_session import Link, Session, Wire, open_side, raw_peer, start
from tests.protocol.test_gossip import raw_frame

pytestmark = pytest.mark.timeout(20)
__all__ = ["open_side"]  # the fixture, used by name


def through_a_stranger():
    """bob's post y; a stranger's x, written after processing y; carol's m, after x: m's
    timeframe names only x, which stands for y."""
    bob, stranger, carol = Feed("w-bob"), Feed("w-stranger"), Feed("w-carol")
    y = bob.append({"type": "post", "text": "first"})
    x = stranger.append({"type": "post", "text": "read bob"}, timeframe={bob.public: y})
    m = carol.append({"type": "post", "text": "after the stranger"}, timeframe={stranger.public: x})
    return y, x, m


def processed(side) -> list[bytes]:
    return [feed for _i, feed, _seq in side.store.feeds.processed(0, 1000)]


async def test_a_witness_makes_a_message_wait_for_what_its_author_had_processed(
    open_side, autojump_clock
):
    y, x, m = through_a_stranger()
    a = open_side("a", inline=True)
    b = open_side("b", [x], [m], inline=True)  # carries everything, but has not got bob's post yet
    await follow(a, m.author)
    await follow(a, y.author)
    wire = Wire()
    async with trio.open_nursery() as nursery:
        sa, sb = start(nursery, a, b, wire)
        await a.until(lambda: a.service.clock.get(m.author) == 1)

        def waits_on_bob() -> bool:
            return [(s.needs_feed, s.witness) for s in a.store.feeds.stalls()] == [
                (y.author, False)
            ]

        await a.until(waits_on_bob)  # the witness came: m now waits on bob's y
        assert m.author not in processed(a)
        await b.service.ingest([y.raw])  # bob's post reaches b, then a
        await a.until(lambda: m.author in processed(a))
        assert processed(a).index(y.author) < processed(a).index(m.author)
        assert not sa.ended.is_set() and not sb.ended.is_set()
        nursery.cancel_scope.cancel()
    assert x.author not in a.service.clock  # kept apart: never carried nor advertised
    assert a.store.feeds.get(x.id) is None
    [asked] = wire.of("a", FrameKind.ASK)
    assert asked[1] == [[x.author, 1, x.id[:16]]]
    assert [frame[1] for frame in wire.of("b", FrameKind.WITNESS)] == [[x.raw]]


async def test_a_witness_no_peer_holds_is_given_up_and_nothing_stalls(open_side, autojump_clock):
    _y, x, m = through_a_stranger()
    a = open_side("a", inline=True)
    b = open_side("b", [m], inline=True)  # holds carol's m, not the stranger's x
    await follow(a, m.author)
    wire, began = Wire(), trio.current_time()
    async with trio.open_nursery() as nursery:
        start(nursery, a, b, wire)
        await a.until(lambda: m.author in processed(a))
        nursery.cancel_scope.cancel()
    assert a.store.feeds.stalls() == []
    assert [frame[1] for frame in wire.of("b", FrameKind.UNHELD)] == [[[x.author, 1, x.id[:16]]]]
    assert trio.current_time() - began < PATIENCE  # given up on the answer, not the clock


async def test_a_peer_that_never_answers_an_ask_is_given_up_on_after_the_ask_wait(
    open_side, autojump_clock
):
    _y, x, m = through_a_stranger()
    a = open_side("a", [m], inline=True)
    await follow(a, m.author)
    session, their_end = raw_peer(a)
    began = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: session.run(window=16))
        theirs = GossipConnection(window=16)
        await their_end.send_all(theirs.hello({}))
        asked: list = []
        while not asked:  # read until a's ASK, which is never answered
            events = theirs.receive_data(await their_end.receive_some())
            asked += [event.entries for event in events if isinstance(event, PeerAsks)]
        assert asked == [[(x.author, 1, x.id[:16])]]
        await a.until(lambda: m.author in processed(a))
        assert ASK_WAIT <= trio.current_time() - began < PATIENCE
        assert not session.ended.is_set()  # silence is no breach
        nursery.cancel_scope.cancel()


async def test_a_peer_answering_what_was_never_asked_is_dropped(open_side, autojump_clock):
    a = open_side("a", inline=True)
    session, their_end = raw_peer(a)
    stray = Feed("w-stray").append({"type": "post"})
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: session.run(window=16))
        theirs = GossipConnection(window=16)
        await their_end.send_all(theirs.hello({}) + theirs.witnesses([stray.raw]))
        await session.ended.wait()
    assert "unasked" in session.reason


async def test_asks_are_answered_once_each_and_a_peer_that_never_reads_stops_being_read(
    open_side, autojump_clock
):
    held = Feed("w-held")
    kept = held.append({"type": "post", "padding": "x" * 2000})
    a = open_side("a", [kept], inline=True)
    ours, theirs_end = trio.testing.lockstep_stream_pair()  # no buffer: a send waits for a read
    peer = Keypair.generate()
    session = Session(a, Link(ours, "a", peer.public, Wire()), PeerState(peer.public))
    theirs = GossipConnection(window=16)
    entry = (held.public, 1, kept.id[:16])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: session.run(window=16))
        nursery.start_soon(theirs_end.send_all, theirs.hello({}) + theirs.ask([entry]))
        answers: list = []
        while not answers:
            events = theirs.receive_data(await theirs_end.receive_some())
            answers += [e.answered for e in events if isinstance(e, PeerWitnesses)]
        assert answers == [{entry: kept.raw}]
        flood = raw_frame(FrameKind.ASK, [list(entry)] * MAX_ASK)  # 64 times one entry
        sent = 0
        with trio.move_on_after(60):  # and never read what comes back
            for _ in range(1000):
                await theirs_end.send_all(flood)
                sent += 1
        assert sent < 10  # a stopped reading: its answers wait for us, not its memory
        assert not session.ended.is_set()
        nursery.cancel_scope.cancel()
