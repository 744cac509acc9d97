"""The gossip machine and its framing: events, credit, and every way a peer can break it."""

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tanglenode.protocol.errors import LocalProtocolError
from tanglenode.protocol.framing import FrameDecoder, FrameError, encode_frame
from tanglenode.protocol.gossip import (
    CLOCK_CHUNK,
    MAX_ASK,
    VERSION,
    Breach,
    FrameKind,
    GossipConnection,
    GossipError,
    PeerAsks,
    PeerClock,
    PeerCredit,
    PeerEvidence,
    PeerHello,
    PeerMessages,
    PeerUnheld,
    PeerWants,
    PeerWitnesses,
)
from tanglenode.protocol.identity import message_id

FEED = bytes(range(32))
TAG = b"t" * 16


def pair(window=4):
    return GossipConnection(window), GossipConnection(window)


@given(st.lists(st.binary(max_size=300), max_size=8), st.integers(1, 50))
def test_frames_survive_any_chunking(values, step):
    wire = b"".join(encode_frame(value) for value in values)
    decoder = FrameDecoder()
    decoded = []
    for start in range(0, len(wire), step):
        decoder.receive_data(wire[start : start + step])
        while (value := decoder.next_frame()) is not None:
            decoded.append(value)
    assert decoded == values and decoder.buffered == 0


@pytest.mark.parametrize(
    "wire",
    [b"\x00\x00\x00\x00", b"\x00\x10\x00\x01", b"\x00\x00\x00\x02\xc1\xc1"],
    ids=["empty", "over-cap", "not-msgpack"],
)
def test_bad_frames_are_refused(wire):
    decoder = FrameDecoder(max_frame=1 << 16)
    with pytest.raises(FrameError):
        decoder.receive_data(wire)
        decoder.next_frame()


def test_a_conversation_turns_into_events_and_tracks_credit():
    alice, bob = pair(window=4)
    events = bob.receive_data(alice.hello({FEED: (7, TAG)}))
    assert events == [PeerHello({FEED: (7, TAG)})] and bob.send_credit == 4
    alice.receive_data(bob.hello({}))
    wire = bob.clock({FEED: (1, TAG)}) + bob.want({FEED: 0}) + bob.messages([b"m1"])
    wire += bob.evidence([b"e1", b"e2"])  # a proof: a fork's two messages
    assert alice.receive_data(wire) == [
        PeerClock({FEED: (1, TAG)}),
        PeerWants({FEED: 0}),
        PeerMessages([b"m1"]),
        PeerEvidence([b"e1", b"e2"]),
    ]
    assert bob.send_credit == 1 and alice.receive_allowance == 1
    with pytest.raises(LocalProtocolError):
        bob.messages([b"m3", b"m4"])
    with pytest.raises(LocalProtocolError, match="credit"):
        bob.evidence([b"e3", b"e4"])
    assert bob.receive_data(alice.grant(5)) == [PeerCredit(5)] and bob.send_credit == 6


@pytest.mark.parametrize("count", [0, 1, 3])
def test_we_never_send_evidence_that_is_not_a_fork_proof(count):
    sender = GossipConnection(window=4)
    sender.receive_data(GossipConnection(window=4).hello({}))
    with pytest.raises(LocalProtocolError, match="a proof is 2 messages"):
        sender.evidence([b"e"] * count)
    assert sender.send_credit == 4


def test_a_large_clock_goes_out_in_chunks_and_arrives_whole():
    clock = {index.to_bytes(32, "big"): (index + 1, TAG) for index in range(CLOCK_CHUNK + 5)}
    sender, receiver = GossipConnection(4), GossipConnection(4, max_feeds=CLOCK_CHUNK)
    events = receiver.receive_data(sender.hello(clock))
    assert isinstance(events[0], PeerHello) and isinstance(events[1], PeerClock)
    assert {**events[0].clock, **events[1].changes} == clock


def test_a_clock_over_the_feed_cap_is_refused():
    receiver = GossipConnection(4, max_feeds=3)
    receiver.hello({})
    clock = {index.to_bytes(32, "big"): [1, TAG] for index in range(4)}
    with pytest.raises(GossipError, match="limit is 3") as refused:
        receiver.receive_data(raw_frame(FrameKind.HELLO, VERSION, clock, 1))
    assert refused.value.reason is Breach.TOO_MANY_FEEDS


def raw_frame(*items):
    body = msgpack.packb(list(items), use_bin_type=True)
    return len(body).to_bytes(4, "big") + body


HELLO = raw_frame(FrameKind.HELLO, VERSION, {}, 1)


@pytest.mark.parametrize(
    "frames, why, reason",
    [
        ([raw_frame(FrameKind.CLOCK, {})], "first frame", Breach.NO_HELLO),
        (
            [raw_frame(FrameKind.HELLO, 99, {}, 1)],
            f"version 99; we speak {VERSION}",
            Breach.VERSION,
        ),
        (
            [raw_frame(FrameKind.HELLO, VERSION, {b"short": [1, TAG]}, 1)],
            "32 bytes",
            Breach.MALFORMED,
        ),
        (
            [raw_frame(FrameKind.HELLO, VERSION, {FEED: [-1, TAG]}, 1)],
            "seq, 16-byte tag",
            Breach.MALFORMED,
        ),
        ([raw_frame(FrameKind.HELLO, VERSION, {FEED: 1}, 1)], "seq, 16-byte tag", Breach.MALFORMED),
        ([raw_frame(FrameKind.HELLO, VERSION, {})], r"not \[HELLO, version", Breach.BAD_HELLO),
        ([HELLO, raw_frame(FrameKind.WANT, {FEED: -1})], "WANT", Breach.MALFORMED),
        ([HELLO, raw_frame(FrameKind.EVIDENCE, "x")], "byte strings", Breach.MALFORMED),
        ([HELLO, HELLO], "second", Breach.SECOND_HELLO),
        ([HELLO, raw_frame(99, 1)], "unknown", Breach.UNKNOWN_KIND),
        ([HELLO, raw_frame(True, {})], "not a", Breach.NOT_A_FRAME),  # true is no kind
        ([HELLO, raw_frame(FrameKind.ASK, [])], "non-empty", Breach.MALFORMED),
        ([HELLO, raw_frame(FrameKind.ASK, [[FEED, 0, TAG]])], "an entry", Breach.MALFORMED),
        ([HELLO, raw_frame(FrameKind.ASK, [[FEED, 1, b"x"]])], "an entry", Breach.MALFORMED),
        (
            [HELLO, raw_frame(FrameKind.ASK, [[FEED, 1, TAG]] * (MAX_ASK + 1))],
            f"the limit is {MAX_ASK}",
            Breach.TOO_MANY_ASKS,
        ),
        (
            [
                HELLO,
                *[  # never answered: distinct entries, 64 to a frame
                    raw_frame(FrameKind.ASK, [[FEED, 64 * f + n, TAG] for n in range(1, 65)])
                    for f in range(5)
                ],
            ],
            "unanswered",
            Breach.TOO_MANY_ASKS,
        ),
        ([HELLO, raw_frame(FrameKind.WITNESS, [b"any"])], "did not ask", Breach.UNASKED),
        ([HELLO, raw_frame(FrameKind.UNHELD, [[FEED, 1, TAG]])], "did not ask", Breach.UNASKED),
        ([HELLO, raw_frame(FrameKind.MESSAGES, [b"a", 3])], "byte strings", Breach.MALFORMED),
        ([HELLO, raw_frame(FrameKind.MESSAGES, [b"a"] * 3)], "credit", Breach.OVER_CREDIT),
        ([HELLO, raw_frame(FrameKind.CREDIT, "lots")], "count", Breach.MALFORMED),
        ([HELLO, raw_frame(FrameKind.WANT)], "one argument", Breach.MALFORMED),
        ([HELLO, raw_frame("hello")], "not a", Breach.NOT_A_FRAME),
        # A proof is a fork's two messages: any other EVIDENCE is refused, even within credit.
        ([HELLO, raw_frame(FrameKind.EVIDENCE, [b"a"])], "carries 1 messages", Breach.BAD_EVIDENCE),
        ([HELLO, raw_frame(FrameKind.EVIDENCE, [])], "carries 0 messages", Breach.BAD_EVIDENCE),
        (
            [HELLO, raw_frame(FrameKind.EVIDENCE, [b"a", b"b", b"c"])],
            "carries 3 messages; a proof",
            Breach.BAD_EVIDENCE,
        ),
    ],
)
def test_protocol_breaches_are_named(frames, why, reason):
    receiver = GossipConnection(window=2)
    receiver.hello({})
    with pytest.raises(GossipError, match=why) as refused:
        for frame in frames:
            receiver.receive_data(frame)
    assert refused.value.reason is reason and str(refused.value).startswith(f"{reason}: ")


@pytest.mark.parametrize(
    "hello, said",
    [
        # Version 2's HELLO had this shape; any other is named by its version all the same.
        (raw_frame(FrameKind.HELLO, 2, {FEED: [1, TAG]}, 8192), "gossip version 2"),
        (raw_frame(FrameKind.HELLO, 1, {FEED: 1}), "gossip version 1"),
        (raw_frame(FrameKind.HELLO, 3, {FEED: [1, TAG]}, 8192), "gossip version 3"),
        # Version 4's HELLO has our shape, but its peer sends messages of format 2.
        (raw_frame(FrameKind.HELLO, 4, {FEED: [1, TAG]}, 8192), "gossip version 4"),
        (raw_frame(FrameKind.HELLO, 6, {}, 1, "later fields"), "gossip version 6"),
        (raw_frame(FrameKind.HELLO), "no gossip version we can read"),
        (raw_frame(FrameKind.HELLO, "x" * 10_000, {}, 1), "no gossip version we can read"),
        (raw_frame(FrameKind.HELLO, True, {}, 1), "no gossip version we can read"),
    ],
)
def test_a_peer_of_another_version_is_refused_with_both_versions_named(hello, said):
    receiver = GossipConnection(window=2)
    with pytest.raises(GossipError) as refused:
        receiver.receive_data(hello)
    assert refused.value.reason is Breach.VERSION
    assert str(refused.value) == f"gossip-version: the peer speaks {said}; we speak {VERSION}"
    assert VERSION == 5 and not receiver.peer_said_hello


def test_each_ask_is_answered_once_by_a_witness_or_an_unheld():
    asker, holder = GossipConnection(window=2), GossipConnection(window=2)
    holder.receive_data(asker.hello({}))
    asker.receive_data(holder.hello({}))
    held = b"signed bytes"
    wanted = (FEED, 3, message_id(held)[:16])
    missing = (FEED, 4, TAG)
    [asks] = holder.receive_data(asker.ask([wanted, missing]))
    assert asks == PeerAsks([wanted, missing]) and holder.asked_of_us == 2
    events = asker.receive_data(holder.witnesses([held]) + holder.unheld([missing]))
    assert events == [PeerWitnesses({wanted: held}), PeerUnheld([missing])]
    assert asker.asking == {} and holder.asked_of_us == 0
    with pytest.raises(GossipError, match="did not ask"):  # answered once: not again
        asker.receive_data(holder.witnesses([held]))


def test_two_asks_of_one_tag_are_never_unanswered_at_once():
    """A stranger may name two messages by one invented tag; answers are matched by tag."""
    asker = GossipConnection(window=2)
    one, two, other = (FEED, 1, TAG), (b"g" * 32, 1, TAG), (FEED, 2, b"u" * 16)
    assert asker.may_ask([one, two, other]) == [one, other]
    asker.ask([one])
    assert asker.may_ask([two, other]) == [other]  # `one` is unanswered still
    with pytest.raises(LocalProtocolError, match="one tag"):
        asker.ask([two])
