"""protocol/wire.py: a message's wire form `[header bin, content bin | nil]`, on any bytes.

`split_wire` reads only the one canonical encoding of the pair (shortest bin lengths,
nothing after it) and refuses everything else with `BadWire`, never another exception;
`header_of` never raises at all (the ids of whatever a peer sends are taken with it).
"""

import hashlib
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tanglenode.protocol.identity import message_id
from tanglenode.protocol.wire import BadWire, bin_header, header_of, split_wire, wire
from tests.factories import Feed

# Sizes on both sides of each bin header's range: bin 8 up to 255, bin 16 up to 65535.
EDGES = [0, 1, 255, 256, 65535, 65536]


def blob(size: int) -> bytes:
    return bytes(index % 251 for index in range(size))


@pytest.mark.parametrize("size", EDGES)
def test_bin_header_is_msgpacks_shortest(size):
    expected = b"\xc4" if size < 0x100 else b"\xc5" if size < 0x10000 else b"\xc6"
    assert bin_header(size)[:1] == expected
    assert len(bin_header(size)) == {b"\xc4": 2, b"\xc5": 3, b"\xc6": 5}[expected]


@pytest.mark.parametrize("header_size", EDGES)
@pytest.mark.parametrize("content_size", [None, *EDGES])
def test_split_wire_gives_back_what_wire_put_in(header_size, content_size):
    header = blob(header_size)
    content = None if content_size is None else blob(content_size)[::-1]
    raw = wire(header, content)
    assert split_wire(raw) == (header, content)
    assert header_of(raw) == header
    assert raw[-1:] == b"\xc0" if content is None else raw.endswith(content)


def longer(size: int) -> bytes:
    """A bin header for `size` bytes one length form longer than the shortest."""
    return b"\xc5" + struct.pack(">H", size) if size < 0x100 else b"\xc6" + struct.pack(">I", size)


@pytest.mark.parametrize("size", [0, 5, 255, 256, 65535])
def test_a_bin_length_in_a_longer_form_is_not_canonical(size):
    header, content = blob(size), b"\x01"
    for raw in (
        b"\x92" + longer(size) + header + bin_header(1) + content,
        b"\x92" + bin_header(1) + content + longer(size) + header,
    ):
        with pytest.raises(BadWire) as caught:
            split_wire(raw)
        assert caught.value.canonical is False
    # `header_of` finds no header in them either: it gives the bytes back, as it does for
    # anything that is not a pair (their decoding refuses them).
    raw = b"\x92" + longer(size) + header + b"\xc0"
    assert header_of(raw) == raw


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\x92",
        b"\x91\xc4\x00",  # an array of one
        b"\x93\xc4\x00\xc0\xc0",  # an array of three
        b"\xdc\x00\x02\xc4\x00\xc0",  # an array of 2 in array 16's form
        b"\x92\xc0\xc0",  # no header
        b"\x92\xa1x\xc0",  # the header a str
        b"\x92\xc4\x00",  # no content, not even nil
        b"\x92\xc4\x00\xa1x",  # the content a str
        b"\x92\xc4\x02x",  # the header runs past the end
        b"\x92\xc4\x00\xc4\x02x",  # the content runs past the end
        b"\x92\xc5\x01",  # a bin 16 length cut short
        b"\x92\xc6\x00\x00\x01",  # a bin 32 length cut short
        b"\x92\xc4\x00\xc0\x00",  # a byte after nil content
        b"\x92\xc4\x00\xc4\x00\x00",  # a byte after the content
    ],
)
def test_split_wire_refuses_what_is_not_the_pair(raw):
    with pytest.raises(BadWire) as caught:
        split_wire(raw)
    assert caught.value.canonical is True and str(caught.value)
    assert isinstance(header_of(raw), bytes)


def test_the_id_is_the_hash_of_the_header_in_or_out_of_the_pair():
    message = Feed("wire").append({"text": "hello"})
    assert header_of(message.raw) == message.header
    expected = hashlib.blake2b(message.header, digest_size=32).digest()
    assert message_id(message.raw) == message_id(message.header) == expected
    assert message_id(wire(message.header, None)) == expected
    assert message_id(wire(message.header, b"anything else")) == expected


def wire_forms():
    """Wire forms of any header and content (None: absent), canonical."""
    return st.builds(wire, st.binary(max_size=300), st.none() | st.binary(max_size=300))


@st.composite
def hostile(draw):
    """Bytes near a wire form: one cut short, lengthened, with bytes flipped or overwritten,
    or any bytes at all that start as a pair does."""
    raw = bytearray(draw(wire_forms()))
    how = draw(st.sampled_from(["cut", "extend", "flip", "overwrite", "any"]))
    if how == "cut":
        return bytes(raw[: draw(st.integers(0, len(raw) - 1))])
    if how == "extend":
        return bytes(raw) + draw(st.binary(min_size=1, max_size=8))
    if how == "flip":
        for _ in range(draw(st.integers(1, 3))):
            raw[draw(st.integers(0, len(raw) - 1))] ^= 1 << draw(st.integers(0, 7))
        return bytes(raw)
    if how == "overwrite":  # a marker or a length byte where the framing is
        at = draw(st.integers(0, min(len(raw) - 1, 8)))
        raw[at] = draw(st.sampled_from([0x92, 0xC0, 0xC4, 0xC5, 0xC6, 0x00, 0xFF]))
        return bytes(raw)
    return b"\x92" + draw(st.binary(max_size=40))


def assert_split_or_bad_wire(raw: bytes) -> None:
    """`split_wire` gives the pair whose wire form is exactly `raw`, or raises `BadWire`;
    `header_of` never raises, and agrees with `split_wire` where it accepts."""
    header = header_of(raw)
    assert isinstance(header, bytes)
    if raw[:1] != b"\x92":
        assert header == raw
    try:
        parts = split_wire(raw)
    except BadWire:
        return
    assert wire(*parts) == raw  # one wire form per pair: what is accepted is canonical
    assert header == parts[0]


@given(wire_forms())
@settings(max_examples=300)
def test_any_wire_form_splits_back(raw):
    header, content = split_wire(raw)
    assert wire(header, content) == raw and header_of(raw) == header


@given(hostile())
@settings(max_examples=1000)
def test_bytes_near_a_wire_form_split_to_themselves_or_raise_bad_wire(raw):
    assert_split_or_bad_wire(raw)


@given(st.binary(max_size=300))
@settings(max_examples=500)
def test_any_bytes_split_to_themselves_or_raise_bad_wire(raw):
    assert_split_or_bad_wire(raw)


@given(wire_forms(), st.data())
@settings(max_examples=300)
def test_a_wire_form_cut_short_or_lengthened_is_refused(raw, data):
    cut = raw[: data.draw(st.integers(0, len(raw) - 1))]
    with pytest.raises(BadWire):
        split_wire(cut)
    with pytest.raises(BadWire):
        split_wire(raw + data.draw(st.binary(min_size=1, max_size=8)))
    assert isinstance(header_of(cut), bytes)


@pytest.mark.slow
@given(hostile())
@settings(max_examples=5000, deadline=None)
def test_bytes_near_a_wire_form_thoroughly(raw):
    assert_split_or_bad_wire(raw)
