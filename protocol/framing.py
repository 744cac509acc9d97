"""Length-prefixed msgpack frames over a byte stream (the gossip and IPC wire).

Each frame is a 4-byte big-endian length, then that many bytes of msgpack.
The decoder is fed bytes in any chunking and hands out whole decoded frames;
a length over the cap, a zero length, or a body that is not one msgpack
value raises `FrameError` before anything is buffered beyond the cap, so a
peer cannot make us hold more than one frame's worth of its bytes.
"""

from __future__ import annotations

import struct
from typing import Any

import msgpack

from tanglenode.protocol.errors import LocalProtocolError, RemoteProtocolError

LENGTH_PREFIX = struct.Struct(">I")  # also the record prefix of backup bundles
DEFAULT_MAX_FRAME = 1 << 20  # gossip
MAX_IPC_FRAME = 4 << 20  # the IPC socket: replies carry pages of messages


class FrameError(RemoteProtocolError):
    """The other side sent a frame that is too large, empty or not msgpack."""


def encode_frame(value: Any, max_frame: int = DEFAULT_MAX_FRAME) -> bytes:
    body = msgpack.packb(value, use_bin_type=True)
    if len(body) > max_frame:
        raise LocalProtocolError(f"a frame of {len(body)} bytes exceeds the cap of {max_frame}")
    return LENGTH_PREFIX.pack(len(body)) + body


class FrameDecoder:
    """Bytes in, decoded frames out."""

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.max_frame = max_frame
        self._buffer = bytearray()

    def receive_data(self, data: bytes) -> None:
        self._buffer += data
        if len(self._buffer) >= LENGTH_PREFIX.size:
            (length,) = LENGTH_PREFIX.unpack_from(self._buffer)
            if length == 0 or length > self.max_frame:
                raise FrameError(f"a frame of {length} bytes (1..{self.max_frame} allowed)")

    def next_frame(self) -> Any | None:
        """The next whole frame's value, or None until more bytes arrive."""
        if len(self._buffer) < LENGTH_PREFIX.size:
            return None
        (length,) = LENGTH_PREFIX.unpack_from(self._buffer)
        if length == 0 or length > self.max_frame:
            raise FrameError(f"a frame of {length} bytes (1..{self.max_frame} allowed)")
        end = LENGTH_PREFIX.size + length
        if len(self._buffer) < end:
            return None
        body = bytes(self._buffer[LENGTH_PREFIX.size : end])
        del self._buffer[:end]
        try:
            return msgpack.unpackb(body, raw=False, strict_map_key=False)
        except (ValueError, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError) as error:
            raise FrameError(f"a frame is not one msgpack value: {error}") from None

    @property
    def buffered(self) -> int:
        return len(self._buffer)
