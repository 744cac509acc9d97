"""A message's wire form: `[header, content]`, read without decoding the header.

A message travels (and is stored in bundles and archives) as the msgpack
array `[header, content]`, both bin: the signed header (docs/FORMAT.md) and
the canonical bytes of its content, nil where the content is absent
(erased, purged, or refused for not matching the header's hash). Its id is
the hash of the header alone (protocol/identity.py, `message_id`), so a
message keeps its id without its content. `split_wire` refuses any other
encoding of the pair (shortest bin lengths only, nothing after it), so one
message has one wire form. No import of this package's: identity reads it.
"""

from __future__ import annotations

import struct

_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")


class BadWire(ValueError):
    """Bytes that are not one message's wire form; `canonical` False when they are the pair
    encoded another way than the shortest."""

    def __init__(self, detail: str, canonical: bool = True) -> None:
        super().__init__(detail)
        self.canonical = canonical


def bin_header(size: int) -> bytes:
    """msgpack's shortest bin header for `size` bytes."""
    if size < 0x100:
        return bytes((0xC4, size))
    if size < 0x10000:
        return b"\xc5" + _U16.pack(size)
    return b"\xc6" + _U32.pack(size)


def _read_bin(raw: bytes, at: int) -> tuple[int, int]:
    """(start, end) of the bin at `at`; `BadWire` for anything else."""
    kind = raw[at] if at < len(raw) else None
    if kind == 0xC4:
        start, size = at + 2, raw[at + 1] if at + 1 < len(raw) else -1
        shortest = True
    elif kind == 0xC5:
        start, size = at + 3, _U16.unpack_from(raw, at + 1)[0] if at + 3 <= len(raw) else -1
        shortest = size >= 0x100
    elif kind == 0xC6:
        start, size = at + 5, _U32.unpack_from(raw, at + 1)[0] if at + 5 <= len(raw) else -1
        shortest = size >= 0x10000
    else:
        raise BadWire("a message is [header, content]: two bin values (content nil if absent)")
    if size < 0 or start + size > len(raw):
        raise BadWire("a message's bin value runs past its end")
    if not shortest:
        raise BadWire("a bin length not in its shortest form", canonical=False)
    return start, start + size


def split_wire(raw: bytes) -> tuple[bytes, bytes | None]:
    """The header and content (None if absent) of a message's wire form; `BadWire` if
    `raw` is not exactly one canonical `[header, content]`."""
    if not raw or raw[0] != 0x92:
        raise BadWire("a message is a msgpack array of 2: [header, content]")
    start, end = _read_bin(raw, 1)
    header = raw[start:end]
    if end < len(raw) and raw[end] == 0xC0:
        if end + 1 != len(raw):
            raise BadWire("bytes after a message's end")
        return header, None
    content_start, content_end = _read_bin(raw, end)
    if content_end != len(raw):
        raise BadWire("bytes after a message's end")
    return header, raw[content_start:content_end]


def header_of(raw: bytes) -> bytes:
    """The signed header inside wire bytes (the bytes themselves if they are not a pair,
    whose decoding then refuses them: never raises)."""
    if raw[:1] != b"\x92":
        return raw
    try:
        start, end = _read_bin(raw, 1)
    except (BadWire, struct.error):
        return raw
    return raw[start:end]


def wire(header: bytes, content: bytes | None) -> bytes:
    """The wire form of a header and its content (None: the header alone)."""
    tail = b"\xc0" if content is None else bin_header(len(content)) + content
    return b"\x92" + bin_header(len(header)) + header + tail
