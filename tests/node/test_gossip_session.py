"""Two gossip sessions in one process, joined by trio's in-memory streams.

Each side is a real `FeedStore` in a tmp dir behind a real `StoreService`,
running the real `gossip()`. The two ends of a
`trio.testing.memory_stream_pair` stand in for the secret-handshake
connection: `Link` gives `gossip()` what it takes from a `SecureStream`
(`send_all` serialised by a lock, `receive_some`, `aclose`, `peer`) and
notes every frame its side sends, decoded, on one shared `Wire`, so a test
can check what crossed (credit, evidence, which messages) as well as what
each store ends with.

The clock is trio's `autojump_clock`: a slow receiver's pauses cost no real
time. The stores work in worker threads, and the autojump clock jumps to
the next deadline whenever the loop waits on a thread, so these tests set
no `trio.fail_after` of their own (it would fire while a store call runs);
a real-time `pytest.mark.timeout` bounds each test instead, and every wait
is on a store change (`StoreService.wait_changed`) or a session's end.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest
import trio
import trio.testing

from tanglenode.node.gossip.session import gossip
from tanglenode.node.net.peers import PeerState
from tanglenode.node.service.store_service import StoreService
from tanglenode.protocol import identity
from tanglenode.protocol.framing import FrameDecoder, encode_frame
from tanglenode.protocol.gossip import VERSION, FrameKind, GossipConnection, PeerWants, tag_of
from tanglenode.protocol.identity import Keypair
from tanglenode.protocol.message import message_id
from tanglenode.storage.feeds.processor import SuspectedFork
from tanglenode.storage.store import FeedStore
from tests.factories import Feed, break_signature, keypair, sign_raw, unsigned_fields
from tests.node.test_hostile_peers import fork
from tests.storage.test_invalidation import state

pytestmark = pytest.mark.timeout(20)


@dataclass
class Wire:
    """Every frame either side sent, decoded, in the order it was sent."""

    frames: list[tuple[str, FrameKind, list]] = field(default_factory=list)

    def of(self, sender: str, kind: FrameKind) -> list[list]:
        return [frame for who, k, frame in self.frames if who == sender and k is kind]

    def raws_from(self, sender: str) -> list[bytes]:
        """The messages `sender` sent in MESSAGES frames, in order."""
        return [raw for frame in self.of(sender, FrameKind.MESSAGES) for raw in frame[1]]

    def most_in_flight(self, sender: str) -> tuple[int, int]:
        """(the most messages `sender` had sent beyond the credit granted it, its window).

        Grants are counted when the receiver sends them, before the sender can
        have them, so the sender may never be above zero.
        """
        window = granted = sent = 0
        worst = -(1 << 30)
        for who, kind, frame in self.frames:
            if who != sender and kind is FrameKind.HELLO:
                window = granted = frame[3]
            elif who != sender and kind is FrameKind.CREDIT:
                granted += frame[1]
            elif who == sender and kind in (FrameKind.MESSAGES, FrameKind.EVIDENCE):
                sent += len(frame[1])
                worst = max(worst, sent - granted)
        return worst, window


class Link:
    """What `gossip()` uses of a `SecureStream`, over one end of an in-memory stream pair."""

    def __init__(
        self, stream: trio.abc.Stream, name: str, peer: bytes, wire: Wire, leads: bool = True
    ) -> None:
        self.stream, self.name, self.peer, self.wire = stream, name, peer, wire
        self.session_salt, self.leads = b"salt of the pair", leads  # as a SecureStream's
        self.receive_delay = 0.0  # seconds before each read: a slow receiver
        self.hold = trio.Event()  # reads wait until it is set: the peer's frames held back
        self.hold.set()
        self._decoder = FrameDecoder()
        self._send_lock = trio.Lock()  # the reader and the writer both send, as on a SecureStream

    async def send_all(self, data: bytes) -> None:
        async with self._send_lock:
            self._decoder.receive_data(data)
            while (frame := self._decoder.next_frame()) is not None:
                self.wire.frames.append((self.name, FrameKind(frame[0]), frame))
            await self.stream.send_all(data)

    async def receive_some(self) -> bytes:
        await self.hold.wait()
        if self.receive_delay:
            await trio.sleep(self.receive_delay)
        return await self.stream.receive_some(65536)

    async def aclose(self) -> None:
        await self.stream.aclose()


@dataclass
class Side:
    """One node: a real store behind a real service."""

    name: str
    keypair: Keypair
    store: FeedStore
    service: StoreService

    async def until(self, condition) -> None:
        """Until `condition()` holds, woken by every change of the store (never polling)."""
        while not condition():
            await self.service.wait_changed(self.service.version)


@dataclass
class Session:
    """A running `gossip()` on one side of a link; `reason` once it ended."""

    side: Side
    link: Link
    peer: PeerState
    ended: trio.Event = field(default_factory=trio.Event)
    reason: str | None = None

    async def run(self, **options) -> None:
        self.reason = await gossip(self.link, self.side.service, self.peer, **options)
        self.ended.set()


@pytest.fixture
def open_side(tmp_path):
    """`open_side("a", feeds..., own=n)`: a node whose store holds those feeds' messages
    (each list ingested as one batch) and `n` messages of its own; `inline=True` runs its
    store calls on the event loop, taking no virtual time (for a test whose node acts on
    time passing: a worker thread's call would let the autojump clock race meanwhile)."""
    stores: list[FeedStore] = []

    def opener(name: str, *feeds: list, own: int = 0, inline: bool = False) -> Side:
        me = keypair(f"session-{name}")
        store = FeedStore(tmp_path / name, keypair=me, map_size=2**26)
        stores.append(store)
        for messages in feeds:
            store.writes.ingest([message.raw for message in messages])
        for n in range(own):
            store.writes.publish({"own": n, "of": name})
        return Side(name, me, store, StoreService(store, inline=inline))

    yield opener
    for store in stores:
        store.close()


def raw_peer(side: Side) -> tuple[Session, trio.abc.Stream]:
    """A session of `side` with a peer the test speaks for itself, frame by frame: the
    session (not started) and the peer's end of the stream."""
    key = Keypair.generate()
    ours, theirs = trio.testing.memory_stream_pair()
    return Session(side, Link(ours, side.name, key.public, Wire()), PeerState(key.public)), theirs


def start(
    nursery, a: Side, b: Side, wire: Wire, a_options=None, b_options=None, **both
) -> tuple[Session, Session]:
    """Join `a` and `b` by a memory stream pair and run `gossip()` at both ends.

    `both` are `gossip()`'s options (window, batch, max_peer_feeds) for both
    sides; `a_options` and `b_options` add to them for one side.
    """
    a_end, b_end = trio.testing.memory_stream_pair()
    sessions = (
        Session(a, Link(a_end, a.name, b.keypair.public, wire), PeerState(b.keypair.public)),
        Session(
            b, Link(b_end, b.name, a.keypair.public, wire, leads=False), PeerState(a.keypair.public)
        ),
    )
    nursery.start_soon(lambda: sessions[0].run(**both, **(a_options or {})))
    nursery.start_soon(lambda: sessions[1].run(**both, **(b_options or {})))
    return sessions


async def converse_until(a, b, wire: Wire, done) -> None:
    """Connect `a` and `b` over `wire` until `done(side)` holds on both; neither of them
    may drop the other on the way."""
    async with trio.open_nursery() as nursery:
        sa, sb = start(nursery, a, b, wire)
        for side in (a, b):
            await side.until(lambda s=side: done(s))
        assert not sa.ended.is_set() and not sb.ended.is_set()  # nobody dropped anybody
        nursery.cancel_scope.cancel()


def chain(label: str, length: int) -> list:
    feed = Feed(label)
    for n in range(length):
        feed.append({"n": n, "of": label})
    return feed.messages


# -- catching up and pushing live ----------------------------------------------


async def test_two_stores_catch_up_both_ways_and_nothing_is_sent_twice(open_side, autojump_clock):
    carol, dave = chain("carol", 30), chain("dave", 20)
    a = open_side("a", carol, own=40)
    b = open_side("b", carol[:10], dave)
    expected = {carol[0].author: 30, dave[0].author: 20, a.keypair.public: 40}
    wire = Wire()
    async with trio.open_nursery() as nursery:
        sa, sb = start(nursery, a, b, wire, window=32, batch=16)
        await a.until(lambda: a.service.clock == expected)
        await b.until(lambda: b.service.clock == expected)
        assert not sa.ended.is_set() and not sb.ended.is_set()  # a subscription stays open
        nursery.cancel_scope.cancel()
    assert a.store.feeds.frontier() == b.store.feeds.frontier() == expected
    assert state(a.store) == state(b.store)  # the same timelines, built from the same messages
    # Each side sent exactly what the other lacked: b already held carol's first ten.
    sent_by_a = Counter(message_id(raw) for raw in wire.raws_from("a"))
    assert sum(sent_by_a.values()) == len(sent_by_a) == 40 + 20
    assert {m.id for m in carol[:10]}.isdisjoint(sent_by_a)
    assert len(wire.raws_from("b")) == len(set(wire.raws_from("b"))) == 20
    assert all(len(frame[1]) <= 16 for frame in wire.of("a", FrameKind.MESSAGES))
    assert (sa.peer.sent, sa.peer.received, sb.peer.sent, sb.peer.received) == (60, 20, 20, 60)


async def test_after_catching_up_new_messages_are_pushed_without_asking_again(
    open_side, autojump_clock
):
    a = open_side("a", chain("erin", 5), own=2)
    b = open_side("b")
    wire = Wire()

    def asks(side: str) -> int:
        """The WANTs `side` sent, by key or by position (node/gossip/feed_names.py)."""
        kinds = (FrameKind.WANT, FrameKind.WANT_NAMED, FrameKind.WANT_AGREED)
        return sum(len(wire.of(side, kind)) for kind in kinds)

    async with trio.open_nursery() as nursery:
        sa, sb = start(nursery, a, b, wire)
        await b.until(lambda: b.service.clock == a.service.clock)
        asked = asks("b")
        for n in range(3):  # a's own feed, which b subscribed to when it caught up
            published = await a.service.publish({"live": n}, None)
            await b.until(lambda m=published: b.service.clock.get(m.author) == m.seq)
            assert b.store.feeds.get(published.id).raw == published.raw
        assert asks("b") == asked  # pushed along the open subscription, never asked again
        asked = asks("a")
        answer = await b.service.publish({"reply": True}, None)  # a feed a has not seen
        await a.until(lambda: a.service.clock.get(answer.author) == 1)
        assert a.store.feeds.get(answer.id).raw == answer.raw
        assert asks("a") == asked + 1  # told by CLOCK, asked for once
        assert not sa.ended.is_set() and not sb.ended.is_set()
        nursery.cancel_scope.cancel()
    assert a.store.feeds.frontier() == b.store.feeds.frontier()
    assert a.store.feeds.frontier()[a.keypair.public] == 5


# -- flow control ----------------------------------------------------------------


async def test_a_sender_never_exceeds_the_window_of_a_slow_receiver(open_side, autojump_clock):
    a = open_side("a", chain("frank", 100))
    b = open_side("b")
    wire = Wire()
    async with trio.open_nursery() as nursery:
        began = trio.current_time()
        _sa, sb = start(nursery, a, b, wire, a_options={"batch": 128}, b_options={"window": 8})
        sb.link.receive_delay = 1.0  # b reads one chunk a second
        await b.until(lambda: b.service.clock == a.service.clock)
        took = trio.current_time() - began
        nursery.cancel_scope.cancel()
    worst, window = wire.most_in_flight("a")
    assert window == 8
    assert worst == 0  # it filled the window, and never went past it
    frames = wire.of("a", FrameKind.MESSAGES)
    assert all(len(frame[1]) <= 8 for frame in frames) and len(frames) >= 100 // 8
    assert sum(frame[1] for frame in wire.of("b", FrameKind.CREDIT)) >= 100 - 8
    # Paced by the receiver: one window per read of b's, each read a second apart.
    assert took >= 100 // 8
    assert b.store.feeds.frontier() == a.store.feeds.frontier()


# -- forks and proofs ------------------------------------------------------------


@pytest.mark.parametrize("shared", [1, 3], ids=["fork-at-2", "fork-at-4"])
async def test_a_fork_between_the_two_stores_is_found_and_both_end_before_it(
    open_side, autojump_clock, shared
):
    one, two = fork(f"sessions-{shared}", shared, 6)
    a = open_side("a", one.messages)
    b = open_side("b", two.messages)
    author = one.public
    assert a.service.clock[author] == b.service.clock[author] == 6  # neither knows yet
    await converse_until(
        a,
        b,
        Wire(),
        lambda s: (
            s.service.invalid.get(author) == shared + 1 and s.service.clock.get(author) == shared
        ),
    )
    assert state(a.store) == state(b.store)
    (proof,) = a.store.feeds.evidence()
    assert {m.seq for m in proof.messages} == {shared + 1}
    assert {m.id for m in proof.messages} == {one.messages[shared].id, two.messages[shared].id}
    assert a.store.feeds.get_by_seq(author, shared).id == one.messages[shared - 1].id


async def test_proofs_cross_the_connection_both_ways(open_side, autojump_clock):
    one, two = fork("crossing", 3, 6)
    other_one, other_two = fork("crossing-other", 1, 3)
    # Each side holds one proof, and all of the first branch the other's proof cuts.
    a = open_side("a", one.messages, [two.messages[3]], other_one.messages)
    b = open_side("b", one.messages, other_one.messages, [other_two.messages[1]])
    ((a_proof,), (b_proof,)) = a.store.feeds.evidence(), b.store.feeds.evidence()
    assert (a_proof.kind, b_proof.kind) == ("fork", "fork")
    wire = Wire()
    expected_invalid = {one.public: 4, other_one.public: 2}
    async with trio.open_nursery() as nursery:
        sa, sb = start(nursery, a, b, wire)
        # Each writer has its first look before the peer's HELLO (and with it, credit) is
        # read: neither side wants a message, so only that HELLO can set the proofs going.
        sa.link.hold, sb.link.hold = trio.Event(), trio.Event()
        await trio.testing.wait_all_tasks_blocked(0.05)
        sa.link.hold.set()
        sb.link.hold.set()
        await a.until(lambda: a.service.invalid == expected_invalid)
        await b.until(lambda: b.service.invalid == expected_invalid)
        # A message each way after that: each writer has had its look at the proofs since.
        for here, there in ((a, b), (b, a)):
            published = await here.service.publish({"after": "proofs"}, None)
            await there.until(lambda m=published, t=there: t.service.clock.get(m.author) == m.seq)
        assert not sa.ended.is_set() and not sb.ended.is_set()
        nursery.cancel_scope.cancel()
    # Each proof crossed as EVIDENCE once, from the side that held it, and never came back.
    a_raws, b_raws = (sorted(m.raw for m in p.messages) for p in (a_proof, b_proof))
    from_a = [sorted(frame[1]) for frame in wire.of("a", FrameKind.EVIDENCE)]
    from_b = [sorted(frame[1]) for frame in wire.of("b", FrameKind.EVIDENCE)]
    assert from_a == [a_raws] and from_b == [b_raws]
    assert state(a.store) == state(b.store)
    assert b.service.clock.get(one.public) == 3  # b's branch one cut back by a's proof
    assert a.service.clock.get(other_one.public) == 1  # and a's by b's


async def test_a_peer_further_along_another_branch_is_not_dropped_for_its_branch(
    open_side, autojump_clock
):
    """b's branch runs three messages past a's head: the first does not chain to a's head
    (chain-mismatch), the others miss their previous. An honest peer sends just that: a
    keeps it, asks for its message at a's head's seq, and the two make the proof."""
    one, two = fork("further", 1, 5)
    author = one.public
    a = open_side("a", one.messages[:2])
    b = open_side("b", two.messages)
    wire = Wire()
    await converse_until(a, b, wire, lambda s: s.service.invalid.get(author) == 2)
    assert wire.raws_from("b")[:3] == [m.raw for m in two.messages[2:5]]  # one frame, as said
    assert [frame[1][author] for frame in wire.of("a", FrameKind.WANT) if author in frame[1]] == [
        2,
        1,
    ]
    assert state(a.store) == state(b.store)


def processed_ids(store: FeedStore) -> set[bytes]:
    return {
        message.id for _index, message in store.feeds.processed_page(0, 1000, 1 << 20) if message
    }


def suspect_of(label: str, one: Feed, two: Feed, seq: int):
    """An honest message naming branch `two` of a forked feed at `seq`, and the suspicion it
    makes in a store that holds branch `one` there."""
    named, held = two.messages[seq - 1], one.messages[seq - 1]
    honest = Feed(f"honest-{label}")
    message = honest.append({"saw": "branch two"}, timeframe={one.public: named})
    suspected = SuspectedFork(
        one.public, seq, identity.tag_of(named.id), identity.tag_of(held.id), honest.public
    )
    return message, suspected


async def test_a_suspected_fork_is_fetched_from_a_peer_holding_the_other_branch(
    open_side, autojump_clock
):
    """a holds branch one of a forker up to seq 2 and an honest message naming branch two's
    seq 2: a suspected fork, the honest message held back. b holds branch two, further on.
    a asks b for the feed from seq 2 straight away (not from its head, as a chain mismatch
    would): b's message there and a's make the proof, which goes back to b, and the honest
    message is processed on both."""
    one, two = fork("suspect", 1, 4)
    author = one.public
    honest, suspected = suspect_of("at-start", one, two, 2)
    a = open_side("a", one.messages[:2], [honest])
    b = open_side("b", two.messages)
    assert a.store.feeds.suspected_forks() == [suspected]
    assert honest.id not in processed_ids(a.store)
    wire = Wire()
    await converse_until(
        a,
        b,
        wire,
        lambda s: s.service.invalid.get(author) == 2 and honest.author in s.service.clock,
    )
    # One WANT of the forked feed, from the suspect's seq; b, ahead on it, asked nothing.
    assert [frame[1][author] for frame in wire.of("a", FrameKind.WANT) if author in frame[1]] == [1]
    assert not [frame for frame in wire.of("b", FrameKind.WANT) if author in frame[1]]
    (proof,) = a.store.feeds.evidence()
    assert {m.id for m in proof.messages} == {one.messages[1].id, two.messages[1].id}
    assert [sorted(frame[1]) for frame in wire.of("a", FrameKind.EVIDENCE)] == [
        sorted(m.raw for m in proof.messages)
    ]
    for side in (a, b):
        assert side.store.feeds.suspected_forks() == [] and side.store.feeds.stalls() == []
        assert honest.id in processed_ids(side.store)
        assert side.service.clock[author] == 1
    assert state(a.store) == state(b.store)


async def test_a_suspicion_that_arises_while_connected_is_asked_for_at_once(
    open_side, autojump_clock
):
    """A peer whose clock shows nothing wrong (its head is below ours, on another branch) is
    asked for the forked feed once the honest message naming its branch arrives."""
    one, two = fork("suspect-live", 1, 4)
    author = one.public
    honest, suspected = suspect_of("live", one, two, 2)
    a = open_side("a", one.messages)
    peer = Keypair.generate()
    async with trio.open_nursery() as nursery:
        a_end, their_end = trio.testing.memory_stream_pair()
        session = Session(a, Link(a_end, "a", peer.public, Wire()), PeerState(peer.public))
        nursery.start_soon(session.run)
        theirs = GossipConnection(window=16)
        await their_end.send_all(theirs.hello({author: (3, tag_of(two.messages[2].id))}))
        wants: list[dict[bytes, int]] = []
        asked = trio.Event()

        async def read_wants() -> None:
            while data := await their_end.receive_some():
                wants.extend(e.wants for e in theirs.receive_data(data) if isinstance(e, PeerWants))
                if wants:
                    asked.set()

        nursery.start_soon(read_wants)
        await trio.testing.wait_all_tasks_blocked(0.05)
        assert wants == []  # its head, at 3, is below a's: nothing to ask for
        await a.service.ingest([honest.raw])
        assert a.store.feeds.suspected_forks() == [suspected]
        await asked.wait()
        assert wants == [{author: 1}]
        await their_end.send_all(theirs.messages([two.messages[1].raw]))
        await a.until(lambda: a.service.invalid.get(author) == 2)
        await a.until(lambda: honest.id in processed_ids(a.store))
        assert a.store.feeds.suspected_forks() == [] and not session.ended.is_set()
        nursery.cancel_scope.cancel()


# -- a peer that breaks the protocol ---------------------------------------------


def _forged() -> bytes:
    liar = keypair("session-forger")
    return break_signature(sign_raw(liar, unsigned_fields(liar, content="forged")))


def _too_many_messages(gossip: GossipConnection) -> bytes:
    raws = [message.raw for message in chain("flood", gossip.send_credit + 1)]
    return encode_frame([FrameKind.MESSAGES, raws])  # past the credit the honest side granted


def _wide_clock(gossip: GossipConnection) -> bytes:
    """Two CLOCK frames, each under the cap of 10 feeds, together past it."""
    heads = [(n.to_bytes(32, "big"), (1, tag_of(bytes(32)))) for n in range(11)]
    return gossip.clock(dict(heads[:6])) + gossip.clock(dict(heads[6:]))


BREACHES: dict[str, tuple[Any, str]] = {
    "messages-before-hello": (
        lambda _gossip: encode_frame([FrameKind.MESSAGES, []]),
        "the first frame must be HELLO",
    ),
    "wrong-version": (
        lambda _gossip: encode_frame([FrameKind.HELLO, VERSION + 1, {}, 8]),
        f"gossip version {VERSION + 1}; we speak {VERSION}",
    ),
    "older-version": (  # a node of the version before ours (no witnesses), same HELLO shape
        lambda _gossip: encode_frame([FrameKind.HELLO, VERSION - 1, {}, 8]),
        f"gossip-version: the peer speaks gossip version {VERSION - 1}; we speak {VERSION}",
    ),
    "second-hello": (lambda gossip: gossip.hello({}), "second-hello: a second HELLO"),
    "evidence-not-a-proof": (
        lambda _gossip: encode_frame([FrameKind.EVIDENCE, [chain("lone", 1)[0].raw]]),
        "bad-evidence: EVIDENCE carries 1 messages",
    ),
    "over-credit": (_too_many_messages, "messages sent with only 16 credit granted"),
    "forged-signature": (lambda gossip: gossip.messages([_forged()]), "bad-signature"),
    "clock-past-the-cap": (_wide_clock, "its clock names more than 10 feeds"),
    "not-a-frame": (lambda _gossip: b"\x00\x00\x00\x03abc", "not one msgpack value"),
}


@pytest.mark.parametrize("breach", list(BREACHES))
async def test_a_peer_breaking_the_protocol_is_dropped_with_its_reason(
    open_side, autojump_clock, breach
):
    make_frame, expected = BREACHES[breach]
    a = open_side("a", chain("grace", 3))
    c = open_side("c")  # an honest bystander, also connected to a
    breaker = Keypair.generate()
    wire = Wire()
    async with trio.open_nursery() as nursery:
        _sa, _sc = start(nursery, a, c, wire)
        await c.until(lambda: c.service.clock == a.service.clock)
        a_end, their_end = trio.testing.memory_stream_pair()
        link = Link(a_end, "a", breaker.public, Wire())
        dropped = Session(a, link, PeerState(breaker.public))
        nursery.start_soon(lambda: dropped.run(window=16, max_peer_feeds=10))
        theirs = GossipConnection(window=16)
        if breach not in ("messages-before-hello", "wrong-version", "older-version"):
            await their_end.send_all(theirs.hello({}))
            while not theirs.peer_said_hello:  # a's HELLO, and with it a's credit
                theirs.receive_data(await their_end.receive_some())
        await their_end.send_all(make_frame(theirs))
        await dropped.ended.wait()
        assert dropped.reason is not None and expected in dropped.reason
        while await their_end.receive_some():  # a hung up on it
            pass
        # Only that connection ended: the bystander is still served, live.
        published = await a.service.publish({"still": "serving"}, None)
        await c.until(lambda: c.service.clock.get(published.author) == 1)
        nursery.cancel_scope.cancel()
    assert set(a.store.feeds.frontier()) == {chain("grace", 1)[0].author, a.keypair.public}
