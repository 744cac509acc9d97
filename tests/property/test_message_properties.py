"""Hypothesis: signed messages survive round trips and no corruption gets through."""

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tanglenode.protocol.canonical import decode_canonical, encode_canonical
from tanglenode.protocol.errors import InvalidMessage, Reason
from tanglenode.protocol.identity import TAG_BYTES, Keypair
from tanglenode.protocol.limits import TIMEFRAME_CAP
from tanglenode.protocol.message import (
    ROOT_LINK,
    Named,
    TangleLink,
    decode_message,
    sign_message,
)
from tanglenode.protocol.wire import split_wire, wire
from tests.factories import sign_raw, unsigned_fields

ids = st.binary(min_size=32, max_size=32)
tags = st.binary(min_size=TAG_BYTES, max_size=TAG_BYTES)
seqs = st.integers(min_value=1, max_value=2**63 - 1)
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


def timeframes(author: bytes, max_size: int = TIMEFRAME_CAP):
    """Timeframes of `author` as format 3 signs them: other feeds -> Named(seq, 16-byte tag)."""
    return st.dictionaries(
        ids.filter(lambda key: key != author), st.builds(Named, seqs, tags), max_size=max_size
    )


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
        timeframe=draw(timeframes(author.public)),
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
    assert encode_canonical(decode_canonical(message.header)) == message.header
    assert message.raw == wire(message.header, message.content_bytes)
    rebuilt = sign_message(
        author,
        seq=decoded.seq,
        prev=decoded.prev,
        timestamp=decoded.timestamp,
        timeframe=decoded.named(),
        tangles=decoded.tangles,
        content=decoded.content,
    )
    assert rebuilt.raw == message.raw


@given(st.data())
@settings(max_examples=150)
def test_a_timeframe_of_tagged_entries_survives_signing_and_decoding(data):
    author = Keypair(data.draw(ids))
    timeframe = data.draw(timeframes(author.public))
    message = sign_message(
        author, seq=1, prev=None, timestamp=0, timeframe=timeframe, tangles={}, content=None
    )
    decoded = decode_message(message.raw)
    assert decoded.named() == timeframe
    assert decoded.timeframe == {feed: entry.seq for feed, entry in timeframe.items()}
    assert decoded.timeframe_tags == {feed: entry.tag for feed, entry in timeframe.items()}


@given(st.data())
@settings(max_examples=100)
def test_format_1_timeframes_and_version_1_are_refused(data):
    """Bare seqs as entries (format 1's shape) are bad-timeframe; a version 1 message is refused
    for its version, whatever its timeframe."""
    author = Keypair(data.draw(ids))
    timeframe = data.draw(timeframes(author.public, max_size=8).filter(bool))
    bare = {feed: entry.seq for feed, entry in sorted(timeframe.items())}
    with pytest.raises(InvalidMessage) as caught:
        decode_message(sign_raw(author, unsigned_fields(author, timeframe=bare)))
    assert caught.value.reason is Reason.BAD_TIMEFRAME
    signed = {feed: list(entry) for feed, entry in sorted(timeframe.items())}
    for old in (bare, signed, {}):
        with pytest.raises(InvalidMessage) as caught:
            decode_message(sign_raw(author, unsigned_fields(author, timeframe=old, version=1)))
        assert caught.value.reason is Reason.UNKNOWN_VERSION
    assert decode_message(sign_raw(author, unsigned_fields(author, timeframe=signed))).named() == (
        timeframe
    )


def any_bit(data, message) -> int:
    """A bit of the message's wire form: anywhere, or one of its content's bytes (a small
    part of the whole, so drawn on its own half the time)."""
    bits = len(message.raw) * 8
    content_bits = len(message.content_bytes) * 8
    return data.draw(
        st.integers(min_value=0, max_value=bits - 1)
        | st.integers(min_value=bits - content_bits, max_value=bits - 1)
    )


def assert_bit_flip_refused_or_content_dropped(message, bit: int) -> None:
    """The rule of a single bit flip: in the wire pair's framing or in the signed header,
    the message is refused; in the content's bytes, the content no longer has the header's
    hash, so it alone is dropped (`content-mismatch`) and the header kept, same id."""
    corrupted = bytearray(message.raw)
    corrupted[bit // 8] ^= 1 << (bit % 8)
    content_starts = len(message.raw) - len(message.content_bytes)
    if bit // 8 < content_starts:
        with pytest.raises(InvalidMessage):
            decode_message(bytes(corrupted))
        return
    decoded = decode_message(bytes(corrupted))
    assert decoded.content_refused is Reason.CONTENT_MISMATCH
    assert decoded.header == message.header and decoded.id == message.id
    assert decoded == replace(message.without_content(), content_refused=Reason.CONTENT_MISMATCH)


def assert_rejected_cleanly_or_canonical(raw: bytes) -> None:
    """Refused with a reason, or a canonical message: its wire form the very bytes, or its
    header alone where the content beside it did not match."""
    try:
        message = decode_message(raw)
    except InvalidMessage:
        return
    if message.content_refused is None:
        assert message.raw == raw
    else:
        assert message.content_refused is Reason.CONTENT_MISMATCH
        assert message.raw == wire(split_wire(raw)[0], None)


@given(signed(), st.data())
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_any_single_bit_flip_is_refused_or_drops_the_content(pair, data):
    _, message = pair
    assert_bit_flip_refused_or_content_dropped(message, any_bit(data, message))


@given(st.binary(max_size=300))
@settings(max_examples=500)
def test_arbitrary_bytes_are_rejected_cleanly_or_are_a_canonical_message(raw):
    assert_rejected_cleanly_or_canonical(raw)


@pytest.mark.slow
@given(signed(), st.data())
@settings(max_examples=5000, suppress_health_check=[HealthCheck.too_slow], deadline=None)
def test_any_single_bit_flip_is_refused_or_drops_the_content_thoroughly(pair, data):
    _, message = pair
    assert_bit_flip_refused_or_content_dropped(message, any_bit(data, message))


@pytest.mark.slow
@given(st.binary(max_size=2000))
@settings(max_examples=20000, deadline=None)
def test_arbitrary_bytes_thoroughly(raw):
    assert_rejected_cleanly_or_canonical(raw)
