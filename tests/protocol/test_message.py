import hashlib
from functools import reduce

import msgpack
import pytest

from tanglenode.protocol.errors import InvalidMessage, Reason
from tanglenode.protocol.identity import message_id
from tanglenode.protocol.limits import Limits
from tanglenode.protocol.message import (
    ROOT_LINK,
    TangleLink,
    UnpublishableMessage,
    decode_message,
    sign_message,
)
from tests.factories import Feed, keypair, sign_raw, unsigned_fields

ALICE = keypair("alice")
BOB = keypair("bob")
ID_A = b"\x01" * 32
ID_B = b"\x02" * 32


def test_sign_and_decode_round_trip():
    message = sign_message(
        ALICE,
        seq=2,
        prev=ID_A,
        timestamp=123,
        timeframe={BOB.public: 7},
        tangles={"chat": TangleLink(ID_A, (ID_B, ID_A))},
        content={"type": "post", "text": "hi", "data": b"\x00\x01"},
    )
    decoded = decode_message(message.raw)
    assert decoded == message
    assert decoded.id == hashlib.blake2b(message.raw, digest_size=32).digest()
    assert decoded.tangles["chat"] == TangleLink(ID_A, (ID_A, ID_B))  # previous is sorted
    assert decoded.timeframe == {BOB.public: 7}
    assert decoded.tangle_root("chat") == ID_A


def test_a_root_message_names_itself_as_the_tangle_root():
    root = Feed("alice").root("chat")
    assert root.tangles["chat"].is_root
    assert root.tangle_root("chat") == root.id


def test_what_sign_message_returns_is_what_a_receiver_decodes():
    """sign_message does not verify its own signature: a receiver's full check must pass."""
    message = sign_message(
        ALICE,
        seq=1,
        prev=None,
        timestamp=5,
        timeframe={BOB.public: 1},
        tangles={"chat": ROOT_LINK, "doc": TangleLink(ID_B, (ID_A,))},
        content=[1.5, {"b": None, "a": (True, b"x")}],
    )
    assert decode_message(message.raw, verify_signature=True) == message
    assert message.content == [1.5, {"a": [True, b"x"], "b": None}]


def test_signing_is_deterministic():
    first = Feed("alice").append({"n": 1})
    again = Feed("alice").append({"n": 1})
    assert first.raw == again.raw


def fields(**changes):
    return unsigned_fields(ALICE, **changes)


def valid_tangle(**changes):
    return {"chat": {"root": ID_A, "previous": [ID_A]} | changes}


# Each case: signed bytes that break exactly one rule, and the reason code expected.
CASES = {
    "too large": (sign_raw(ALICE, fields(content="x" * 17_000)), Reason.TOO_LARGE),
    "not msgpack": (b"\xc1", Reason.MALFORMED),
    "not an array": (msgpack.packb({"version": 1}), Reason.MALFORMED),
    "empty array": (msgpack.packb([]), Reason.MALFORMED),
    "eight fields": (msgpack.packb(fields(), use_bin_type=True), Reason.MALFORMED),
    "content nested 33 deep": (
        sign_raw(
            ALICE,
            fields(content=reduce(lambda inner, _: [inner], range(33), 0)),
            canonical=False,
        ),
        Reason.TOO_DEEP,
    ),
    "NaN in the content": (
        sign_raw(ALICE, fields(content={"x": float("nan")}), canonical=False),
        Reason.NON_FINITE_FLOAT,
    ),
    "an ext type in the content": (
        sign_raw(ALICE, fields(content=msgpack.ExtType(7, b"")), canonical=False),
        Reason.EXT_TYPE,
    ),
    "unsorted content map": (
        sign_raw(ALICE, fields(content={"b": 1, "a": 2}), canonical=False),
        Reason.NON_CANONICAL,
    ),
    "unsorted timeframe keys": (
        sign_raw(ALICE, fields(timeframe={ID_B: 1, ID_A: 1}), canonical=False),
        Reason.NON_CANONICAL,
    ),
    "unsorted tangle names": (
        sign_raw(
            ALICE,
            fields(
                tangles={
                    "b": {"previous": None, "root": None},
                    "a": {"previous": None, "root": None},
                }
            ),
            canonical=False,
        ),
        Reason.NON_CANONICAL,
    ),
    "link keys out of order": (
        sign_raw(ALICE, fields(tangles={"a": {"root": None, "previous": None}}), canonical=False),
        Reason.NON_CANONICAL,
    ),
    "seq in a longer integer form": (
        sign_raw(ALICE, fields()).replace(
            b"\xc4\x20" + ALICE.public + b"\x01", b"\xc4\x20" + ALICE.public + b"\xcd\x00\x01"
        ),
        Reason.NON_CANONICAL,
    ),
    "tangle name not utf-8": (
        sign_raw(ALICE, fields(tangles={"ab": {"previous": None, "root": None}})).replace(
            b"\xa2ab", b"\xa2\xff\xfe"
        ),
        Reason.MALFORMED,
    ),
    "version 2": (sign_raw(ALICE, fields(version=2)), Reason.UNKNOWN_VERSION),
    "version 2 with ten fields": (
        msgpack.packb([2, *fields()[1:], b"\x00" * 64, "extra"], use_bin_type=True),
        Reason.UNKNOWN_VERSION,
    ),
    "version true": (sign_raw(ALICE, fields(version=True)), Reason.UNKNOWN_VERSION),
    "short author": (
        msgpack.packb([1, b"\x00" * 31, *fields()[2:], b"\x00" * 64], use_bin_type=True),
        Reason.BAD_AUTHOR,
    ),
    "seq 0": (sign_raw(ALICE, fields(seq=0)), Reason.BAD_SEQ),
    "seq as string": (sign_raw(ALICE, fields(seq="1")), Reason.BAD_SEQ),
    "seq as bool": (sign_raw(ALICE, fields(seq=True)), Reason.BAD_SEQ),
    "seq 1 with prev": (sign_raw(ALICE, fields(seq=1, prev=ID_A)), Reason.BAD_PREV),
    "seq 2 without prev": (sign_raw(ALICE, fields(seq=2)), Reason.BAD_PREV),
    "short prev": (sign_raw(ALICE, fields(seq=2, prev=b"\x01" * 31)), Reason.BAD_PREV),
    "negative timestamp": (sign_raw(ALICE, fields(timestamp=-1)), Reason.BAD_TIMESTAMP),
    "float timestamp": (sign_raw(ALICE, fields(timestamp=1.5)), Reason.BAD_TIMESTAMP),
    "timeframe list": (sign_raw(ALICE, fields(timeframe=[1])), Reason.BAD_TIMEFRAME),
    "timeframe short key": (
        sign_raw(ALICE, fields(timeframe={b"\x01" * 31: 1})),
        Reason.BAD_TIMEFRAME,
    ),
    "timeframe string key": (sign_raw(ALICE, fields(timeframe={"a": 1})), Reason.BAD_TIMEFRAME),
    "timeframe own feed": (
        sign_raw(ALICE, fields(timeframe={ALICE.public: 1})),
        Reason.BAD_TIMEFRAME,
    ),
    "timeframe seq 0": (sign_raw(ALICE, fields(timeframe={BOB.public: 0})), Reason.BAD_TIMEFRAME),
    "timeframe seq text": (
        sign_raw(ALICE, fields(timeframe={BOB.public: "3"})),
        Reason.BAD_TIMEFRAME,
    ),
    "tangles list": (sign_raw(ALICE, fields(tangles=[])), Reason.BAD_TANGLES),
    "tangle name empty": (
        sign_raw(ALICE, fields(tangles={"": {"root": None, "previous": None}})),
        Reason.BAD_TANGLES,
    ),
    "tangle name too long": (
        sign_raw(ALICE, fields(tangles={"n" * 65: {"root": None, "previous": None}})),
        Reason.BAD_TANGLES,
    ),
    "tangle extra key": (sign_raw(ALICE, fields(tangles=valid_tangle(x=1))), Reason.BAD_TANGLES),
    "tangle root without previous": (
        sign_raw(ALICE, fields(tangles=valid_tangle(previous=None))),
        Reason.BAD_TANGLES,
    ),
    "tangle previous without root": (
        sign_raw(ALICE, fields(tangles=valid_tangle(root=None))),
        Reason.BAD_TANGLES,
    ),
    "tangle previous empty": (
        sign_raw(ALICE, fields(tangles=valid_tangle(previous=[]))),
        Reason.BAD_TANGLES,
    ),
    "tangle previous unsorted": (
        sign_raw(ALICE, fields(tangles=valid_tangle(previous=[ID_B, ID_A]))),
        Reason.BAD_TANGLES,
    ),
    "tangle previous repeated": (
        sign_raw(ALICE, fields(tangles=valid_tangle(previous=[ID_A, ID_A]))),
        Reason.BAD_TANGLES,
    ),
    "tangle previous short id": (
        sign_raw(ALICE, fields(tangles=valid_tangle(previous=[b"\x01"]))),
        Reason.BAD_TANGLES,
    ),
    "17 tangles": (
        sign_raw(
            ALICE, fields(tangles={f"t{i:02}": {"root": None, "previous": None} for i in range(17)})
        ),
        Reason.TOO_MANY_TANGLES,
    ),
    "17 previous": (
        sign_raw(
            ALICE, fields(tangles=valid_tangle(previous=[bytes([i]) * 32 for i in range(17)]))
        ),
        Reason.TOO_MANY_PREVIOUS,
    ),
    "signed by someone else": (
        msgpack.packb(
            [*fields(), BOB.sign(msgpack.packb(fields(), use_bin_type=True))], use_bin_type=True
        ),
        Reason.BAD_SIGNATURE,
    ),
    "short signature": (
        msgpack.packb([*fields(), b"\x00" * 63], use_bin_type=True),
        Reason.BAD_SIGNATURE,
    ),
    "content changed after signing": (
        msgpack.packb(
            [
                *fields(content="after"),
                ALICE.sign(msgpack.packb(fields(content="befor"), use_bin_type=True)),
            ],
            use_bin_type=True,
        ),
        Reason.BAD_SIGNATURE,
    ),
}


@pytest.mark.parametrize("raw, reason", CASES.values(), ids=CASES.keys())
def test_every_rule_has_its_reason_code(raw, reason):
    with pytest.raises(InvalidMessage) as caught:
        decode_message(raw)
    assert caught.value.reason is reason
    assert caught.value.detail


def test_every_reason_of_the_protocol_layer_is_covered():
    storage_reasons = {
        Reason.MISSING_PREVIOUS,
        Reason.CHAIN_MISMATCH,
        Reason.FORKED_FEED,
        Reason.TIMEFRAME_CYCLE,
    }
    covered = {reason for _, reason in CASES.values()}
    covered.add(Reason.TOO_MANY_TIMEFRAME_ENTRIES)  # below, with a configured limit
    assert covered == set(Reason) - storage_reasons


def test_limits_are_configurable():
    raw = sign_raw(ALICE, fields(timeframe={BOB.public: 1, keypair("carol").public: 2}))
    assert decode_message(raw).seq == 1
    with pytest.raises(InvalidMessage) as caught:
        decode_message(raw, Limits(max_timeframe_entries=1))
    assert caught.value.reason is Reason.TOO_MANY_TIMEFRAME_ENTRIES
    with pytest.raises(InvalidMessage) as caught:
        decode_message(sign_raw(ALICE, fields(content="x" * 2000)), Limits(max_message_bytes=1024))
    assert caught.value.reason is Reason.TOO_LARGE


def test_signing_an_invalid_message_is_a_local_error():
    with pytest.raises(UnpublishableMessage) as caught:
        sign_message(
            ALICE, seq=1, prev=None, timestamp=0, timeframe={}, tangles={}, content="x" * 20_000
        )
    assert caught.value.reason is Reason.TOO_LARGE


def test_skipping_signature_verification_still_checks_the_rest():
    forged = CASES["signed by someone else"][0]
    assert decode_message(forged, verify_signature=False).author == ALICE.public
    with pytest.raises(InvalidMessage):
        decode_message(CASES["seq 0"][0], verify_signature=False)


def test_ids_are_blake2b_of_the_signed_bytes():
    message = Feed("alice").root("chat", {"hello": "world"})
    assert message.id == message_id(message.raw)
    assert ROOT_LINK.is_root
