"""The content rules: nesting depth, finite floats, no extension types; each its own reason."""

import math

import msgpack
import pytest

from tanglenode.protocol.canonical import (
    ExtensionType,
    NonFiniteFloat,
    TooDeep,
    check_value,
    decode_canonical,
    encode_canonical,
)
from tanglenode.protocol.errors import InvalidMessage, Reason
from tanglenode.protocol.limits import UNLIMITED, Limits
from tanglenode.protocol.message import UnpublishableMessage, decode_message, sign_message
from tests.factories import keypair, sign_raw, unsigned_fields

ALICE = keypair("alice")


def nested(depth: int, inner=0, container=list):
    value = inner
    for _ in range(depth):
        value = [value] if container is list else {"k": value}
    return value


def forged(content) -> bytes:
    """A validly signed message whose content skips our own encoder's checks."""
    return sign_raw(ALICE, unsigned_fields(ALICE, content=content), canonical=False)


HOSTILE = {
    "511 deep, as seen from a peer": (nested(511), Reason.TOO_DEEP),
    "33 maps deep": (nested(33, container=dict), Reason.TOO_DEEP),
    "NaN": (float("nan"), Reason.NON_FINITE_FLOAT),
    "inf inside a map": ({"a": [1.5, float("inf")]}, Reason.NON_FINITE_FLOAT),
    "-inf": (float("-inf"), Reason.NON_FINITE_FLOAT),
    "an ext type": (msgpack.ExtType(5, b"xy"), Reason.EXT_TYPE),
    "an ext type inside a list": ([1, msgpack.ExtType(1, b"")], Reason.EXT_TYPE),
    "the timestamp extension": ({"t": msgpack.Timestamp(1, 0)}, Reason.EXT_TYPE),
}


@pytest.mark.parametrize("content, reason", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_peer_message_breaking_a_content_rule_is_refused_with_its_reason(content, reason):
    raw = forged(content)
    assert len(raw) < 16 * 1024
    with pytest.raises(InvalidMessage) as refused:
        decode_message(raw)
    assert refused.value.reason is reason


@pytest.mark.parametrize("content, reason", HOSTILE.values(), ids=HOSTILE.keys())
def test_signing_refuses_the_same_content_with_the_same_reason(content, reason):
    with pytest.raises(UnpublishableMessage) as refused:
        sign_message(
            ALICE, seq=1, prev=None, timestamp=0, timeframe={}, tangles={}, content=content
        )
    assert refused.value.reason is reason


def test_depth_counts_containers_and_the_limit_is_configurable():
    at_limit = nested(32, container=dict)
    assert decode_message(forged(at_limit)).content == at_limit
    with pytest.raises(InvalidMessage, match="too-deep"):
        decode_message(forged(nested(4)), Limits(max_content_depth=3))
    assert decode_message(forged(nested(3)), Limits(max_content_depth=3)).content == nested(3)
    # Bytes already accepted are read back whatever the limit is now.
    assert decode_message(forged(nested(100)), UNLIMITED, verify_signature=False)


def test_finite_floats_and_plain_content_still_pass():
    content = {"s": "text", "x": 1.5, "y": [-0.0, 1e308, {"z": b"\x00"}]}
    assert decode_message(forged(content)).content == content
    assert decode_message(forged(2.5)).content == 2.5


def test_the_walk_is_iterative_however_deep():
    with pytest.raises(TooDeep):
        check_value(nested(100_000), 32)
    with pytest.raises(TooDeep):  # tuples are arrays to the encoder
        encode_canonical(nested(100_000, container=list))


def test_decode_canonical_names_each_rule():
    with pytest.raises(NonFiniteFloat):
        decode_canonical(msgpack.packb(float("nan")))
    with pytest.raises(ExtensionType):
        decode_canonical(msgpack.packb(msgpack.ExtType(5, b"xy")))
    with pytest.raises(TooDeep):
        decode_canonical(msgpack.packb(nested(40)), max_depth=32)
    assert math.isclose(decode_canonical(msgpack.packb(1.25)), 1.25)
