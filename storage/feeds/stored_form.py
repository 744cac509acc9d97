"""The stored form of a message: its signed bytes, smaller, rebuilt exactly on read.

Theory of operation
-------------------
A message's signed bytes (docs/FORMAT.md) repeat what the store knows
already. A message is found by its position, author + seq (the
`message-at` index, storage.feeds.bodies), so the author need not be in the
value; and a timeframe names up to thousands of feeds by their
32-byte keys, the same few keys in every message. So the value is

    form 1:  0x01, len(M) (u8), M, len(T) (u32 BE), T, R

where the signed bytes are `HEAD + author + M + timeframe map + R`:

    HEAD  0x99 0x02 0xc4 0x20   the 9-element array, version 2, the author's bin 8 header
    M     seq, prev, timestamp, verbatim
    T     msgpack array [n1, s1, t1, n2, s2, t2, ...]: each timeframe entry as its
          feed's number (the `feeds` table), its seq and its tag, in the
          message's key order
    R     tangles, content and signature, verbatim

Because the encoding is canonical, the timeframe map's bytes are a function
of its entries in ascending key order: msgpack's packer writes them back
exactly (map header, bin 8 keys, shortest integers). `encode` checks that on
the way in: it cuts the map out only where packing the decoded timeframe
gives the very bytes found there, else it keeps the value verbatim as form 0
(0x00 + the signed bytes). Reads rebuild and never trust a guess; tests
check byte equality and ids.

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

HEAD = b"\x99\x02\xc4\x20"
VERBATIM, COMPACT = 0, 1
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
    raw = message.raw
    if raw[:4] != HEAD:
        return verbatim(raw)
    start = 36 + _uint_size(message.seq) + (1 if message.prev is None else 34)
    start += _uint_size(message.timestamp)
    timeframe, tags = message.timeframe, message.timeframe_tags
    packed = _pack({feed: (seq, tags[feed]) for feed, seq in timeframe.items()})
    end = start + len(packed)
    if raw[start:end] != packed:  # never for a canonical message; kept safe all the same
        return verbatim(raw)
    flat: list[int | bytes] = []
    for feed, seq in timeframe.items():
        flat.append(number_of(feed))
        flat.append(seq)
        flat.append(tags[feed])
    compact = _pack(flat)
    middle = raw[36:start]
    return b"".join(
        (bytes((COMPACT, len(middle))), middle, _U32.pack(len(compact)), compact, raw[end:])
    )


def decode(author: bytes, value: bytes, key_of) -> bytes:
    """The signed bytes of stored `value` of `author`; `key_of(number) -> feed key`."""
    value = bytes(value)
    if value[0] == VERBATIM:
        return value[1:]
    middle_end = 2 + value[1]
    (size,) = _U32.unpack_from(value, middle_end)
    compact_start = middle_end + 4
    flat = _unpack(value[compact_start : compact_start + size])
    timeframe = {key_of(flat[i]): (flat[i + 1], flat[i + 2]) for i in range(0, len(flat), 3)}
    return b"".join(
        (HEAD, author, value[2:middle_end], _pack(timeframe), value[compact_start + size :])
    )


def verbatim(raw: bytes) -> bytes:
    """The stored value holding `raw` as it is (form 0)."""
    return bytes((VERBATIM,)) + raw


def parse_stored(raw: bytes) -> Message:
    """Parse signed bytes the store accepted earlier (no signature check, no size limits).

    Limits may have been lowered since, and the signature was checked on the
    way in; `storage.feeds.check` verifies everything again when asked.
    """
    return decode_message(bytes(raw), UNLIMITED, verify_signature=False)
