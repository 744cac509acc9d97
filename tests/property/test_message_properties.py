"""Hypothesis: signed messages survive round trips and no corruption gets through."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tanglenode.protocol.canonical import decode_canonical, encode_canonical
from tanglenode.protocol.errors import InvalidMessage
from tanglenode.protocol.identity import Keypair
from tanglenode.protocol.message import ROOT_LINK, TangleLink, decode_message, sign_message

ids = st.binary(min_size=32, max_size=32)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
    | st.binary(max_size=40)
)
content = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
tangle_links = st.one_of(
    st.just(ROOT_LINK),
    st.builds(
        lambda root, previous: TangleLink(root, tuple(sorted(previous))),
        ids,
        st.sets(ids, min_size=1, max_size=16),
    ),
)


# Up to 64 UTF-8 bytes, so both fixstr and str8 headers occur.
tangle_names = st.text(min_size=1, max_size=40).filter(lambda name: len(name.encode()) <= 64)


@st.composite
def signed(draw):
    """(author keypair, a valid signed message of theirs)."""
    author = Keypair(draw(ids))
    seq = draw(st.integers(min_value=1, max_value=2**40))
    message = sign_message(
        author,
        seq=seq,
        prev=None if seq == 1 else draw(ids),
        timestamp=draw(st.integers(min_value=0, max_value=2**63 - 1)),
        timeframe=draw(
            st.dictionaries(
                ids.filter(lambda k: k != author.public),
                st.integers(min_value=1, max_value=2**63 - 1),
                max_size=8,
            )
        ),
        tangles=draw(st.dictionaries(tangle_names, tangle_links, max_size=4)),
        content=draw(content),
    )
    return author, message


@given(signed())
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
def test_a_decoded_message_re_encodes_to_the_same_bytes(pair):
    author, message = pair
    decoded = decode_message(message.raw)  # with its signature verified: sign_message skips that
    assert decoded == message
    assert encode_canonical(decode_canonical(message.raw)) == message.raw
    rebuilt = sign_message(
        author,
        seq=decoded.seq,
        prev=decoded.prev,
        timestamp=decoded.timestamp,
        timeframe=decoded.timeframe,
        tangles=decoded.tangles,
        content=decoded.content,
    )
    assert rebuilt.raw == message.raw


def assert_bit_flip_rejected(raw: bytes, bit: int) -> None:
    corrupted = bytearray(raw)
    corrupted[bit // 8] ^= 1 << (bit % 8)
    with pytest.raises(InvalidMessage):
        decode_message(bytes(corrupted))


def assert_rejected_cleanly_or_canonical(raw: bytes) -> None:
    try:
        message = decode_message(raw)
    except InvalidMessage:
        return
    assert message.raw == raw


@given(signed(), st.data())
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_any_single_bit_flip_is_rejected(pair, data):
    _, message = pair
    bit = data.draw(st.integers(min_value=0, max_value=len(message.raw) * 8 - 1))
    assert_bit_flip_rejected(message.raw, bit)


@given(st.binary(max_size=300))
@settings(max_examples=500)
def test_arbitrary_bytes_are_rejected_cleanly_or_are_a_canonical_message(raw):
    assert_rejected_cleanly_or_canonical(raw)


@pytest.mark.slow
@given(signed(), st.data())
@settings(max_examples=5000, suppress_health_check=[HealthCheck.too_slow], deadline=None)
def test_any_single_bit_flip_is_rejected_thoroughly(pair, data):
    _, message = pair
    bit = data.draw(st.integers(min_value=0, max_value=len(message.raw) * 8 - 1))
    assert_bit_flip_rejected(message.raw, bit)


@pytest.mark.slow
@given(st.binary(max_size=2000))
@settings(max_examples=20000, deadline=None)
def test_arbitrary_bytes_thoroughly(raw):
    assert_rejected_cleanly_or_canonical(raw)
