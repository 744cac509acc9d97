"""Presence between peers (protocol/presence.py, node/gossip/presence.py), on plain data: the
offer within gossip version 5 that an older peer reads as a no-op, PRESENCE frames that never
break the connection, and the rule that drops a hostile one with its typed reason."""

from __future__ import annotations

import msgpack
import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from tanglenode.node.gossip.presence import (
    PUBLIC,
    UNKNOWN,
    PresenceHub,
    PresenceRate,
    judge_access,
    judge_frame,
    may_tell,
)
from tanglenode.protocol.errors import LocalProtocolError
from tanglenode.protocol.framing import encode_frame
from tanglenode.protocol.gossip import (
    Breach,
    FrameKind,
    GossipConnection,
    GossipError,
    PeerCredit,
    PeerOffersPresence,
    PeerPresence,
)
from tanglenode.protocol.presence import (
    MAX_PRESENCE_BYTES,
    Presence,
    PresenceDrop,
    PresenceRefused,
    encode_presence,
    parse_presence,
)

PEER = b"p" * 32
OTHER = b"o" * 32
DOC = b"d" * 32
EDIT = b"e" * 32
HERE = Presence(DOC, PEER, (EDIT, 3), (EDIT, 7))


def connected() -> tuple[GossipConnection, GossipConnection]:
    ours, theirs = GossipConnection(window=4), GossipConnection(window=4)
    theirs.receive_data(ours.hello({}))
    ours.receive_data(theirs.hello({}))
    return ours, theirs


def refused(call) -> PresenceDrop:
    with pytest.raises(PresenceRefused) as caught:
        call()
    return caught.value.reason


# -- the protocol: the offer, the frame ------------------------------------------------------


def test_the_offer_is_a_credit_of_nothing_and_opens_presence():
    ours, theirs = connected()
    with pytest.raises(LocalProtocolError):
        ours.presence(encode_presence(HERE))  # no PRESENCE before the peer offered it
    assert ours.receive_data(theirs.offer_presence()) == [PeerOffersPresence()]
    assert ours.peer_offered_presence and ours.send_credit == 4  # it granted nothing
    sent = ours.presence(encode_presence(HERE))
    [event] = theirs.receive_data(sent)
    assert event == PeerPresence(encode_presence(HERE), offered=False)  # they never offered
    assert parse_presence(event.payload) == HERE


def test_an_older_peer_reads_the_offer_as_a_grant_of_nothing():
    """What a version-5 node before presence does with the offer: `[CREDIT, 0]` is a count,
    added to its send credit (the rule it has always had), nothing else."""
    ours, theirs = connected()
    before = ours.send_credit
    frame = msgpack.unpackb(theirs.offer_presence()[4:])
    assert frame == [FrameKind.CREDIT, 0]
    assert before + frame[1] == before
    assert ours.receive_data(theirs.grant(2)) == [PeerCredit(2)]  # a real grant is one still


@pytest.mark.parametrize(
    "frame",
    [
        [FrameKind.PRESENCE],
        [FrameKind.PRESENCE, 1, 2],
        [FrameKind.PRESENCE, "x"],
        [FrameKind.PRESENCE, b""],
        [FrameKind.PRESENCE, b"\x00" * (MAX_PRESENCE_BYTES + 1)],
    ],
)
def test_a_presence_frame_of_another_envelope_is_a_breach(frame):
    ours, _theirs = connected()
    with pytest.raises(GossipError) as breach:
        ours.receive_data(encode_frame(frame))
    assert breach.value.reason is Breach.MALFORMED


def test_a_presence_payload_of_bytes_is_handed_on_for_the_node_to_judge():
    ours, _theirs = connected()
    [event] = ours.receive_data(encode_frame([FrameKind.PRESENCE, b"\xc1"]))
    assert isinstance(event, PeerPresence) and event.payload == b"\xc1"
    assert refused(lambda: judge_frame(event.payload, True, PEER, 0.0, PresenceRate())) is (
        PresenceDrop.MALFORMED
    )


# -- the rule --------------------------------------------------------------------------------


def test_a_presence_of_the_peers_own_author_is_taken():
    assert judge_frame(encode_presence(HERE), True, PEER, 0.0, PresenceRate()) == HERE
    judge_access(HERE, PEER, PUBLIC)
    judge_access(HERE, PEER, frozenset({PEER, OTHER}))


@pytest.mark.parametrize(
    ("payload", "offered", "reason"),
    [
        (encode_presence(HERE), False, PresenceDrop.NOT_OFFERED),
        (b"\x00" * (MAX_PRESENCE_BYTES + 1), True, PresenceDrop.OVERSIZED),
        (b"", True, PresenceDrop.MALFORMED),
        (None, True, PresenceDrop.MALFORMED),
        (b"\xc1", True, PresenceDrop.MALFORMED),  # no msgpack value
        (msgpack.packb([DOC, PEER, None]), True, PresenceDrop.MALFORMED),
        (msgpack.packb([DOC[:31], PEER, None, None]), True, PresenceDrop.MALFORMED),
        (msgpack.packb([DOC, PEER, [EDIT, -1], None]), True, PresenceDrop.MALFORMED),
        (msgpack.packb([DOC, PEER, [EDIT, True], None]), True, PresenceDrop.MALFORMED),
        (msgpack.packb([DOC, PEER, [EDIT, 1 << 32], None]), True, PresenceDrop.MALFORMED),
        (msgpack.packb({"doc": DOC}), True, PresenceDrop.MALFORMED),
        (encode_presence(Presence(DOC, OTHER, None, None)), True, PresenceDrop.NOT_THE_PEERS),
    ],
)
def test_a_hostile_frame_is_dropped_with_its_reason(payload, offered, reason):
    assert refused(lambda: judge_frame(payload, offered, PEER, 0.0, PresenceRate())) is reason


def test_a_presence_of_a_document_the_peer_may_not_see_is_dropped():
    assert refused(lambda: judge_access(HERE, PEER, UNKNOWN)) is PresenceDrop.UNKNOWN_DOCUMENT
    members = frozenset({OTHER})
    assert refused(lambda: judge_access(HERE, PEER, members)) is PresenceDrop.NOT_A_MEMBER
    assert not may_tell(PEER, members) and not may_tell(PEER, UNKNOWN)
    assert may_tell(PEER, PUBLIC) and may_tell(OTHER, members)


def test_too_frequent_frames_are_dropped_and_the_rate_refills():
    rate = PresenceRate(rate=10.0, burst=5, tokens=5, last=0.0)
    payload = encode_presence(HERE)
    for _ in range(5):
        judge_frame(payload, True, PEER, 0.0, rate)
    assert refused(lambda: judge_frame(payload, True, PEER, 0.0, rate)) is (
        PresenceDrop.TOO_FREQUENT
    )
    judge_frame(payload, True, PEER, 0.1, rate)  # a tenth of a second later: one more
    assert refused(lambda: judge_frame(payload, True, PEER, 0.1, rate)) is (
        PresenceDrop.TOO_FREQUENT
    )


@given(st.binary(max_size=400))
def test_no_payload_crashes_the_rule(payload):
    try:
        judge_frame(payload, True, PEER, 0.0, PresenceRate())
    except PresenceRefused as error:
        assert isinstance(error.reason, PresenceDrop)


# -- the hub ---------------------------------------------------------------------------------


def test_the_hub_keeps_each_authors_latest_and_tells_the_sessions_only_our_own():
    async def main() -> None:
        hub = PresenceHub()
        told = []
        hub.senders.add(lambda presence, access: told.append((presence, access)))
        hub.put(HERE, 0.0)  # a peer's: kept, not passed on
        moved = Presence(DOC, PEER, None, None)
        hub.put(moved, 1.0)
        mine = Presence(DOC, OTHER, None, (EDIT, 1))
        hub.put(mine, 1.0, access=PUBLIC)  # ours
        assert told == [(mine, PUBLIC)]
        assert [seen.presence for seen in hub.of(DOC, 0, 1.0)] == [moved, mine]
        assert [seen.presence for seen in hub.of(DOC, 2, 1.0)] == [mine]  # after seq 2
        assert hub.of(DOC, 0, 100.0) == []  # stale after TTL
        assert hub.of(b"x" * 32, 0, 1.0) == []
        with trio.fail_after(1):
            await hub.wait_changed(hub.seq - 1)  # already past: returns

    trio.run(main)
