"""Box-stream framing: the encrypted byte stream that follows the secret handshake.

Theory of operation
-------------------
Each direction is its own stream with its own key and a 24-byte big-endian
nonce counter. A chunk `p` (1..4096 bytes) goes on the wire as

    header = secretbox(u16be(len p) ‖ mac of body, n, key)    34 bytes
    body   = secretbox(p, n + 1, key) without its 16-byte mac  len(p) bytes

and the counter advances by two. A header whose 18 plaintext bytes are all
zero is the goodbye: the sender's clean end. The writer splits larger data
into 4096-byte chunks; the reader is fed bytes in any chunking and yields
the chunks. A header or body that does not open, a length of 0 (other than
the goodbye) or over 4096, bytes after the goodbye, and an end of input
without the goodbye are all `BoxStreamError`: the connection is to be
closed. Frames carry no meaning of their own; the layer above reads a byte
stream.
"""

from __future__ import annotations

import struct

from nacl import bindings
from nacl.exceptions import CryptoError

from tanglenode.protocol.errors import LocalProtocolError, RemoteProtocolError

MAX_CHUNK = 4096
HEADER_BYTES = 34
_MAC_BYTES = 16
_NONCE_MODULUS = 1 << 192
_LENGTH = struct.Struct(">H")
_GOODBYE_PLAIN = bytes(18)


class BoxStreamError(RemoteProtocolError):
    """The peer's box-stream is broken: tampered, mis-sized or cut off without a goodbye."""


class _Nonce:
    __slots__ = ("value",)

    def __init__(self, nonce: bytes) -> None:
        if len(nonce) != 24:
            raise LocalProtocolError("a box-stream nonce is 24 bytes")
        self.value = int.from_bytes(nonce, "big")

    def take(self) -> bytes:
        """The current nonce; the counter moves on by one (wrapping around)."""
        current = self.value.to_bytes(24, "big")
        self.value = (self.value + 1) % _NONCE_MODULUS
        return current


class BoxStreamWriter:
    """Seals outgoing bytes into frames."""

    def __init__(self, key: bytes, nonce: bytes) -> None:
        self._key = key
        self._nonce = _Nonce(nonce)
        self.closed = False

    def seal(self, data: bytes) -> bytes:
        """The frames for `data` (nothing for empty data)."""
        if self.closed:
            raise LocalProtocolError("the stream has said goodbye")
        frames = []
        for start in range(0, len(data), MAX_CHUNK):
            chunk = data[start : start + MAX_CHUNK]
            header_nonce = self._nonce.take()
            sealed = bindings.crypto_secretbox(chunk, self._nonce.take(), self._key)
            header_plain = _LENGTH.pack(len(chunk)) + sealed[:_MAC_BYTES]
            frames.append(bindings.crypto_secretbox(header_plain, header_nonce, self._key))
            frames.append(sealed[_MAC_BYTES:])
        return b"".join(frames)

    def goodbye(self) -> bytes:
        """The closing header; nothing may be sealed after it."""
        self.closed = True
        return bindings.crypto_secretbox(_GOODBYE_PLAIN, self._nonce.take(), self._key)


class BoxStreamReader:
    """Opens incoming frames: `receive_data(bytes)`, then `next_chunk()` until it gives None."""

    def __init__(self, key: bytes, nonce: bytes) -> None:
        self._key = key
        self._nonce = _Nonce(nonce)
        self._buffer = bytearray()
        self._pending: tuple[int, bytes, bytes] | None = None  # body length, mac, body nonce
        self.said_goodbye = False

    @property
    def bytes_wanted(self) -> int:
        """The bytes needed to finish the frame being read (a header's worth between frames)."""
        if self.said_goodbye:
            return 0
        need = self._pending[0] if self._pending else HEADER_BYTES
        return max(need - len(self._buffer), 0)

    def receive_data(self, data: bytes | bytearray) -> None:
        if self.said_goodbye and data:
            raise BoxStreamError("bytes after the goodbye")
        self._buffer += data

    def next_chunk(self) -> bytes | None:
        """The next whole chunk; None when more bytes are needed or after the goodbye."""
        if self.said_goodbye:
            return None
        if self._pending is None:
            if len(self._buffer) < HEADER_BYTES:
                return None
            header = bytes(self._buffer[:HEADER_BYTES])
            del self._buffer[:HEADER_BYTES]
            try:
                plain = bindings.crypto_secretbox_open(header, self._nonce.take(), self._key)
            except CryptoError:
                raise BoxStreamError("a frame header does not open") from None
            if plain == _GOODBYE_PLAIN:
                self.said_goodbye = True
                if self._buffer:
                    raise BoxStreamError("bytes after the goodbye")
                return None
            (length,) = _LENGTH.unpack(plain[:2])
            if not 1 <= length <= MAX_CHUNK:
                raise BoxStreamError(f"a frame of {length} bytes (1..{MAX_CHUNK} allowed)")
            self._pending = (length, plain[2:], self._nonce.take())
        length, mac, body_nonce = self._pending
        if len(self._buffer) < length:
            return None
        body = bytes(self._buffer[:length])
        del self._buffer[:length]
        self._pending = None
        try:
            return bindings.crypto_secretbox_open(mac + body, body_nonce, self._key)
        except CryptoError:
            raise BoxStreamError("a frame body does not open") from None

    def end_of_input(self) -> None:
        """The connection ended; raises unless the peer said goodbye first."""
        if not self.said_goodbye:
            raise BoxStreamError("unexpected hangup: the stream ended without a goodbye")
