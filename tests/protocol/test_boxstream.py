"""Box-stream limits that the vectors do not cover: frame sizes, goodbye, hangup."""

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st
from nacl import bindings

from tanglenode.protocol.boxstream import (
    MAX_CHUNK,
    BoxStreamError,
    BoxStreamReader,
    BoxStreamWriter,
)
from tanglenode.protocol.errors import LocalProtocolError

KEY, NONCE = bytes(range(32)), bytes(range(24))


def handcrafted_frame(length: int, body: bytes) -> bytes:
    """A well-sealed frame whose header claims `length`, whatever the body's size."""
    sealed = bindings.crypto_secretbox(body, (1).to_bytes(24, "big"), KEY)
    header = bindings.crypto_secretbox(struct.pack(">H", length) + sealed[:16], bytes(24), KEY)
    return header + sealed[16:]


def read_all(reader: BoxStreamReader) -> list[bytes]:
    chunks = []
    while (chunk := reader.next_chunk()) is not None:
        chunks.append(chunk)
    return chunks


@pytest.mark.parametrize("length, body", [(0, b""), (MAX_CHUNK + 1, bytes(MAX_CHUNK + 1))])
def test_frame_lengths_outside_1_to_4096_close_the_stream(length, body):
    reader = BoxStreamReader(KEY, bytes(24))
    reader.receive_data(handcrafted_frame(length, body))
    with pytest.raises(BoxStreamError, match="frame of"):
        read_all(reader)


def test_a_full_size_frame_is_accepted():
    reader = BoxStreamReader(KEY, bytes(24))
    reader.receive_data(handcrafted_frame(MAX_CHUNK, bytes(MAX_CHUNK)))
    assert read_all(reader) == [bytes(MAX_CHUNK)]


def test_bytes_after_goodbye_and_hangup_without_goodbye_are_errors():
    writer = BoxStreamWriter(KEY, NONCE)
    reader = BoxStreamReader(KEY, NONCE)
    reader.receive_data(writer.seal(b"hello"))
    assert read_all(reader) == [b"hello"]
    with pytest.raises(BoxStreamError, match="hangup"):
        reader.end_of_input()
    reader.receive_data(writer.goodbye() + b"x")
    with pytest.raises(BoxStreamError, match="after the goodbye"):
        read_all(reader)
    with pytest.raises(LocalProtocolError, match="goodbye"):
        writer.seal(b"more")


def test_nonce_counter_wraps_around():
    top = b"\xff" * 24
    writer, reader = BoxStreamWriter(KEY, top), BoxStreamReader(KEY, top)
    reader.receive_data(writer.seal(b"a") + writer.seal(b"b"))
    assert read_all(reader) == [b"a", b"b"]


@given(st.lists(st.binary(max_size=9000), max_size=6), st.integers(1, 5000))
def test_any_writes_in_any_chunking_come_back_in_order(writes, step):
    writer, reader = BoxStreamWriter(KEY, NONCE), BoxStreamReader(KEY, NONCE)
    wire = b"".join(writer.seal(data) for data in writes) + writer.goodbye()
    received = []
    for start in range(0, len(wire), step):
        reader.receive_data(wire[start : start + step])
        assert reader.bytes_wanted >= 0
        received.extend(read_all(reader))
    assert b"".join(received) == b"".join(writes)
    assert all(1 <= len(chunk) <= MAX_CHUNK for chunk in received)
    reader.end_of_input()
