"""Secret handshake and box-stream over a Trio stream.

Theory of operation
-------------------
The sans-IO machines in `protocol.shs` and `protocol.boxstream` decide
everything; this module only moves their bytes. The handshake reads exactly
what the machine still wants, so no byte of the box-stream is read early,
and it runs under one total deadline: a peer that trickles bytes cannot
stretch it. The result is a `SecureStream` whose `receive_some` returns
decrypted bytes, b"" after the peer's goodbye, and raises `BoxStreamError`
for a tampered frame or a hangup without goodbye; `aclose` says goodbye
before closing, within `GOODBYE_SECONDS`.
"""

from __future__ import annotations

import hashlib

import trio

from tanglenode.protocol.boxstream import BoxStreamError, BoxStreamReader, BoxStreamWriter
from tanglenode.protocol.identity import Keypair
from tanglenode.protocol.shs import ClientHandshake, HandshakeFailed, ServerHandshake, Session

HANDSHAKE_SECONDS = 10.0
GOODBYE_SECONDS = 1.0  # at most, to say goodbye on closing (a peer may not be reading)
_READ_BYTES = 1 << 18


class SecureStream:
    """A box-stream session: bytes in, bytes out, goodbye on close."""

    def __init__(self, stream: trio.abc.Stream, session: Session, leftover: bytes) -> None:
        self.stream = stream
        self.peer = session.peer
        # What both ends share and no one else knows, for the gossip's reconciliation
        # (protocol/reconcile.py): its salt, and which end leads (the two ends disagree).
        first, second = sorted((session.encrypt_key, session.decrypt_key))
        self.session_salt = hashlib.blake2b(
            first + second, digest_size=16, person=b"tn-session-salt"
        ).digest()
        self.leads = session.encrypt_key < session.decrypt_key
        self._writer = BoxStreamWriter(session.encrypt_key, session.encrypt_nonce)
        self._reader = BoxStreamReader(session.decrypt_key, session.decrypt_nonce)
        self._reader.receive_data(leftover)
        self._send_lock = trio.Lock()
        self._unread = b""  # decrypted bytes handed back (`unread`), returned first
        self._cut = False  # a send was cut off: the peer cannot read a goodbye after it

    def unread(self, data: bytes) -> None:
        """Hand back decrypted bytes a caller looked at: the next `receive_some` returns them
        (the listener reads a connection's first frame to tell a redemption from gossip)."""
        self._unread = data + self._unread

    async def send_all(self, data: bytes) -> None:
        """Seal and send. A send cancelled before a byte left costs no nonce (the goodbye
        after it still opens); one cut part-way leaves nothing to say goodbye on."""
        async with self._send_lock:
            if data:
                await trio.lowlevel.checkpoint_if_cancelled()  # before the nonce moves
                sealed = self._writer.seal(data)
                try:
                    await self.stream.send_all(sealed)
                except BaseException:
                    self._cut = True  # part of a frame may have left: no goodbye follows
                    raise

    async def receive_some(self) -> bytes:
        """The next decrypted bytes; b"" once the peer said goodbye."""
        if self._unread:
            data, self._unread = self._unread, b""
            return data
        while True:
            chunks = []
            while (chunk := self._reader.next_chunk()) is not None:
                chunks.append(chunk)
            if chunks:  # all that opens of what we read: one wake-up of the reader, not many
                return b"".join(chunks)
            if self._reader.said_goodbye:
                return b""
            received = await self.stream.receive_some(_READ_BYTES)
            if not received:
                self._reader.end_of_input()  # raises: the peer hung up without goodbye
            self._reader.receive_data(received)

    async def send_goodbye(self) -> None:
        """End our direction cleanly; the peer's bytes can still be read."""
        async with self._send_lock:
            if not self._writer.closed and not self._cut:
                await self.stream.send_all(self._writer.goodbye())

    async def aclose(self, seconds: float = GOODBYE_SECONDS) -> None:
        """Say goodbye (once) and close, within `seconds` even if the peer does not read.

        Shielded, so it runs in a cancelled task too, and bounded: the wait for
        the send lock and the goodbye's send share the deadline; past it the
        stream is closed without goodbye (a send still blocked on it then fails).
        Never raises for a peer that is already gone.
        """
        with trio.move_on_after(seconds, shield=True):
            try:
                async with self._send_lock:
                    if not self._writer.closed and not self._cut:
                        await self.stream.send_all(self._writer.goodbye())
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass
        with trio.CancelScope(shield=True):
            await trio.aclose_forcefully(self.stream)


async def _run(stream: trio.abc.Stream, side, seconds: float) -> SecureStream:
    try:
        with trio.fail_after(seconds):
            while side.session is None:
                outgoing = side.data_to_send()
                if outgoing:
                    await stream.send_all(outgoing)
                data = await stream.receive_some(side.bytes_wanted)
                if not data:
                    raise HandshakeFailed("the peer hung up during the handshake")
                side.receive_data(data)
            outgoing = side.data_to_send()
            if outgoing:
                await stream.send_all(outgoing)
    except trio.TooSlowError:
        raise HandshakeFailed(f"the handshake took longer than {seconds:g} s") from None
    except (trio.BrokenResourceError, OSError) as error:
        raise HandshakeFailed(f"the connection broke during the handshake: {error}") from None
    return SecureStream(stream, side.session, side.leftover)


async def client_handshake(
    stream: trio.abc.Stream,
    network_key: bytes,
    keypair: Keypair,
    server_public: bytes,
    *,
    seconds: float = HANDSHAKE_SECONDS,
) -> SecureStream:
    """Authenticate as the client to the server whose key we know."""
    return await _run(stream, ClientHandshake(network_key, keypair, server_public), seconds)


async def server_handshake(
    stream: trio.abc.Stream,
    network_key: bytes,
    keypair: Keypair,
    *,
    authorize=None,
    seconds: float = HANDSHAKE_SECONDS,
) -> SecureStream:
    """Authenticate an incoming client; `authorize(public) -> bool` may refuse it."""
    return await _run(stream, ServerHandshake(network_key, keypair, authorize=authorize), seconds)


__all__ = [
    "BoxStreamError",
    "HandshakeFailed",
    "SecureStream",
    "client_handshake",
    "server_handshake",
]
