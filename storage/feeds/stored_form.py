"""The stored form of a message: its header and content, smaller, rebuilt exactly on read.

Theory of operation
-------------------
A message's header (docs/FORMAT.md) repeats what the store knows already.
A message is found by its position, author + seq (the `message-at` index,
storage.feeds.bodies), so the author need not be in the value; and a
timeframe names up to thousands of feeds by their 32-byte keys, the same
few keys in every message. So the value is

    form 3:  0x03, len(M) (u8), M, len(T) (u32 BE), T, len(R) (u32 BE), R, C

where the header is `HEAD + author + M + timeframe map + R`:

    HEAD  0x9a 0x03 0xc4 0x20   the 10-element array, version 3, the author's bin 8 header
    M     seq, prev, timestamp, verbatim
    T     msgpack array [n1, s1, t1, n2, s2, t2, ...]: each timeframe entry as its
          feed's number (the `feeds` table), its seq and its tag, in the
          message's key order
    R     tangles, content hash, content size and signature, verbatim
    C     the content's canonical bytes, to the value's end; nothing where the
          content is absent (a content is never empty: msgpack's shortest is 1 byte)

The content is last so that dropping it (an erasure, a purge:
`without_content`) cuts the value short and leaves the header's bytes as
they are. Because the encoding is canonical, the timeframe map's bytes are
a function of its entries in ascending key order: msgpack's packer writes
them back exactly (map header, bin 8 keys, shortest integers). `encode`
checks that on the way in: it cuts the map out only where packing the
decoded timeframe gives the very bytes found there, else it keeps the wire
form verbatim as form 0 (0x00 + the wire bytes). Reads rebuild and never
trust a guess; tests check byte equality and ids.

Feed numbers (`feeds`: key -> u32 number, and u32 number -> key, one table,
told apart by key length) are assigned in order, 0 up, when a timeframe
first names a feed, and never change or go away (a feed cut back for a fork
keeps its number). So a number another transaction has committed maps to
the same key forever, and `storage.feeds.bodies.Bodies` caches those in
memory; a number from the current write transaction is not cached (it would
be wrong if the transaction aborted). Numbers below the count a write transaction started
with are committed: that count is what the cache may hold.
"""

from __future__ import annotations

import struct

import msgpack

from tanglenode.protocol.limits import UNLIMITED
from tanglenode.protocol.message import Message, decode_message
from tanglenode.protocol.wire import header_of, split_wire, wire

HEAD = b"\x9a\x03\xc4\x20"
VERBATIM, COMPACT = 0, 3
_U32 = struct.Struct(">I")
_pack = msgpack.Packer(use_bin_type=True).pack
_unpack = msgpack.unpackb


def _uint_size(value: int) -> int:
    """Bytes of msgpack's shortest encoding of a non-negative int."""
    if value < 0x80:
        return 1
    if value < 0x100:
        return 2
    if value < 0x10000:
        return 3
    return 5 if value < 0x100000000 else 9


def encode(message: Message, number_of) -> bytes:
    """The stored value of `message`; `number_of(feed key) -> int` names timeframe feeds."""
    header = message.header
    if header[:4] != HEAD:
        return verbatim(message.raw)
    start = 36 + _uint_size(message.seq) + (1 if message.prev is None else 34)
    start += _uint_size(message.timestamp)
    timeframe, tags = message.timeframe, message.timeframe_tags
    packed = _pack({feed: (seq, tags[feed]) for feed, seq in timeframe.items()})
    end = start + len(packed)
    if header[start:end] != packed:  # never for a canonical message; kept safe all the same
        return verbatim(message.raw)
    flat: list[int | bytes] = []
    for feed, seq in timeframe.items():
        flat.append(number_of(feed))
        flat.append(seq)
        flat.append(tags[feed])
    compact = _pack(flat)
    middle, rest = header[36:start], header[end:]
    return b"".join(
        (
            bytes((COMPACT, len(middle))),
            middle,
            _U32.pack(len(compact)),
            compact,
            _U32.pack(len(rest)),
            rest,
            message.content_bytes or b"",
        )
    )


def _parts(value: bytes) -> tuple[int, int, int, int]:
    """Where a form-3 value's compact timeframe starts and ends, and its R."""
    middle_end = 2 + value[1]
    (size,) = _U32.unpack_from(value, middle_end)
    compact_start = middle_end + 4
    rest_start = compact_start + size + 4
    (rest_size,) = _U32.unpack_from(value, compact_start + size)
    return middle_end, compact_start, rest_start, rest_start + rest_size


def decode(author: bytes, value: bytes, key_of) -> bytes:
    """The wire bytes of stored `value` of `author`; `key_of(number) -> feed key`."""
    value = bytes(value)
    if value[0] == VERBATIM:
        return value[1:]
    middle_end, compact_start, rest_start, rest_end = _parts(value)
    flat = _unpack(value[compact_start : rest_start - 4])
    timeframe = {key_of(flat[i]): (flat[i + 1], flat[i + 2]) for i in range(0, len(flat), 3)}
    header = b"".join(
        (HEAD, author, value[2:middle_end], _pack(timeframe), value[rest_start:rest_end])
    )
    return wire(header, value[rest_end:] or None)


def without_content(value: bytes) -> bytes:
    """Stored `value` with its content dropped: the header's bytes as they were."""
    value = bytes(value)
    if value[0] == VERBATIM:
        return verbatim(wire(header_of(value[1:]), None))
    return value[: _parts(value)[3]]


def has_content(value: bytes) -> bool:
    """Whether stored `value` holds its message's content."""
    value = bytes(value)
    if value[0] == VERBATIM:  # read from the pair: a content's bytes may end as nil does
        return split_wire(value[1:])[1] is not None
    return len(value) > _parts(value)[3]


def verbatim(raw: bytes) -> bytes:
    """The stored value holding wire bytes `raw` as they are (form 0)."""
    return bytes((VERBATIM,)) + raw


def parse_stored(raw: bytes) -> Message:
    """Parse wire bytes the store accepted earlier (no signature check, no size limits).

    Limits may have been lowered since, and the signature was checked on the
    way in; `storage.feeds.check` verifies everything again when asked.
    """
    return decode_message(bytes(raw), UNLIMITED, verify_signature=False)
