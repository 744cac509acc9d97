"""Presence over a real gossip session (node/gossip/session.py, docs/PEERS.md "Presence"): a
peer that never offered presence (a version-5 node that predates it) is never sent a PRESENCE
frame and gossips on; a PRESENCE frame whose envelope is not one payload of 1..160 bytes ends
the session (a breach, like any malformed frame); hostile payloads are each dropped with their
typed reason, the peer kept; a good one reaches the node's hub; ours goes to a peer that
offered it."""

from __future__ import annotations

import msgpack
import trio
import trio.testing

from tanglenode.node.gossip.presence import BURST, MISSED_SECONDS, PUBLIC, UNKNOWN, PresenceHub
from tanglenode.node.ipc.presence import presence_drops
from tanglenode.node.net.peers import PeerState
from tanglenode.protocol.framing import FrameDecoder, encode_frame
from tanglenode.protocol.gossip import FrameKind, GossipConnection
from tanglenode.protocol.identity import Keypair
from tanglenode.protocol.presence import MAX_PRESENCE_BYTES, Presence, encode_presence
from tests.node.test_gossip_session import Link, Session, Wire, open_side

__all__ = ["open_side"]  # the fixture, used by name


async def frames_until(stream, decoder: FrameDecoder, kinds: list[int], done) -> None:
    """Read the peer's end, noting each frame's kind, until `done()`."""
    while not done():
        data = await stream.receive_some()
        if not data:
            return
        decoder.receive_data(data)
        while (frame := decoder.next_frame()) is not None:
            kinds.append(frame[0])


async def test_a_peer_that_never_offered_presence_is_never_sent_it(open_side, autojump_clock):
    a = open_side("a", own=1, inline=True)  # store calls on the loop: no race with autojump
    doc = a.store.documents.create_document("notes").id
    old = Keypair.generate()  # a version-5 node before presence: it never sends [CREDIT, 0]
    ours, theirs = trio.testing.memory_stream_pair()
    session = Session(a, Link(ours, "a", old.public, Wire()), PeerState(old.public))
    hub = a.service.shared(PresenceHub)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(session.run)
        await theirs.send_all(GossipConnection(window=8).hello({}))
        kinds: list[int] = []
        decoder = FrameDecoder(1 << 20)
        await frames_until(theirs, decoder, kinds, lambda: FrameKind.HELLO in kinds)
        mine = Presence(doc, a.keypair.public, None, None)
        for _ in range(3):
            hub.put(mine, trio.current_time(), access=PUBLIC)
        published = await a.service.publish({"after": "presence"}, None)
        assert published is not None
        await theirs.send_all(GossipConnection(window=8).want({a.keypair.public: 0}))
        with trio.move_on_after(5):
            await frames_until(theirs, decoder, kinds, lambda: FrameKind.MESSAGES in kinds)
        assert FrameKind.MESSAGES in kinds  # it gossips on
        assert FrameKind.PRESENCE not in kinds  # and was never sent PRESENCE
        assert not session.ended.is_set()
        nursery.cancel_scope.cancel()


async def test_hostile_presence_frames_are_dropped_with_their_reasons_and_the_peer_kept(
    open_side, autojump_clock
):
    a = open_side("a", own=1, inline=True)  # store calls on the loop: no race with autojump
    doc = a.store.documents.create_document("notes").id
    peer = Keypair.generate()
    ours, theirs = trio.testing.memory_stream_pair()
    session = Session(a, Link(ours, "a", peer.public, Wire()), PeerState(peer.public))
    hub = a.service.shared(PresenceHub)
    good = Presence(doc, peer.public, None, None)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(session.run)
        gossip = GossipConnection(window=8)
        await theirs.send_all(gossip.hello({}))
        while not gossip.peer_said_hello:
            gossip.receive_data(await theirs.receive_some())
        gossip.peer_offered_presence = True  # a's offer came with its HELLO

        def raw(payload) -> bytes:
            return encode_frame([FrameKind.PRESENCE, payload])

        # before our offer: dropped, not offered
        await theirs.send_all(raw(encode_presence(good)))
        await theirs.send_all(GossipConnection(window=8).offer_presence())
        hostile = [
            raw(msgpack.packb([doc, peer.public, None])),
            raw(b"\xc1"),  # no msgpack value
            raw(msgpack.packb({"doc": doc})),
            raw(encode_presence(Presence(doc, a.keypair.public, None, None))),  # not its own
            raw(encode_presence(Presence(b"u" * 32, peer.public, None, None))),
        ]
        await theirs.send_all(b"".join(hostile))
        await theirs.send_all(gossip.presence(encode_presence(good)))
        while len(hub.kept) < 1 or sum(hub.dropped.values()) < 6:
            await trio.sleep(0.01)  # virtual time: the session reads them meanwhile
        assert dict(hub.dropped) == {
            "presence-not-offered": 1,
            "presence-malformed": 3,
            "presence-not-the-peers": 1,
            "presence-unknown-document": 1,
        }
        assert [seen.presence for seen in hub.kept.values()] == [good]
        drops = presence_drops(a.service)  # /metrics' tanglenode_presence_dropped_total
        assert drops["presence-malformed"] == 3 and drops["presence-not-a-member"] == 0
        # a flood: past the burst, dropped as too frequent, the peer still kept
        await theirs.send_all(gossip.presence(encode_presence(good)) * (BURST + 10))
        while hub.dropped["presence-too-frequent"] < 9:
            await trio.sleep(0.001)
        assert not session.ended.is_set()
        # ours goes to it, now that it offered
        kinds: list[int] = []
        hub.put(Presence(doc, a.keypair.public, None, None), trio.current_time(), access=PUBLIC)
        decoder = FrameDecoder(1 << 20)
        with trio.move_on_after(5):
            await frames_until(theirs, decoder, kinds, lambda: FrameKind.PRESENCE in kinds)
        assert FrameKind.PRESENCE in kinds
        nursery.cancel_scope.cancel()


async def test_a_presence_frame_of_another_envelope_ends_the_session(open_side, autojump_clock):
    """Junk under PRESENCE costs its decoding once, then the connection: one payload of 1 to
    MAX_PRESENCE_BYTES bytes, or a breach, as any other malformed frame."""
    a = open_side("a", own=1, inline=True)
    hub = a.service.shared(PresenceHub)
    for frame in (
        [FrameKind.PRESENCE, b"\x00" * (MAX_PRESENCE_BYTES + 1)],
        [FrameKind.PRESENCE, "not bytes"],
        [FrameKind.PRESENCE, b""],
        [FrameKind.PRESENCE],
        [FrameKind.PRESENCE, [[]] * 10_000],  # a frame that is costly to decode
    ):
        peer = Keypair.generate()
        ours, theirs = trio.testing.memory_stream_pair()
        session = Session(a, Link(ours, "a", peer.public, Wire()), PeerState(peer.public))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.run)
            gossip = GossipConnection(window=8)
            await theirs.send_all(gossip.hello({}) + gossip.offer_presence())
            await theirs.send_all(encode_frame(frame, 1 << 20))
            with trio.fail_after(5):
                await session.ended.wait()
            nursery.cancel_scope.cancel()
    assert sum(hub.dropped.values()) == 0  # breaches, not drops: the peers are gone


async def test_documents_named_at_random_cost_no_walk_of_the_store_each(
    open_side, autojump_clock, monkeypatch
):
    """Who may see a document is looked up in memory: the store's documents are walked at
    most once every MISSED_SECONDS however many unknown documents frames name."""
    a = open_side("a", own=1, inline=True)
    doc = a.store.documents.create_document("notes").id
    hub = a.service.shared(PresenceHub)
    walks = 0
    held = a.store.documents.held

    def counted():
        nonlocal walks
        walks += 1
        return held()

    monkeypatch.setattr(a.store.documents, "held", counted)
    assert await hub.access_of(a.service, doc) == PUBLIC
    for n in range(1000):
        assert await hub.access_of(a.service, n.to_bytes(32, "big")) == UNKNOWN
    assert walks == 1
    await trio.sleep(MISSED_SECONDS)
    later = a.store.documents.create_document("later").id
    assert await hub.access_of(a.service, later) == PUBLIC  # a new one is found a second on
    assert walks == 2
