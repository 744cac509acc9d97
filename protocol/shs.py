"""Secure Scuttlebutt's secret handshake (SHS v1) as byte-in/bytes-out state machines.

Theory of operation
-------------------
Four messages of fixed size authenticate both long-term Ed25519 keys under
a shared 32-byte network key `N`, with fresh X25519 keys `a` (client) and
`b` (server) for forward secrecy (wire formats: `docs/PEERS.md`):

    1  C→S   64  hmac(N, a_pk) ‖ a_pk
    2  S→C   64  hmac(N, b_pk) ‖ b_pk
    3  C→S  112  secretbox(sig_A ‖ A_pk, 0, sha256(N ‖ ab ‖ aB))
    4  S→C   80  secretbox(sig_B, 0, sha256(N ‖ ab ‖ aB ‖ Ab))

Each side is an object that is fed the bytes it received (`receive_data`,
any chunking) and tells what to send (`data_to_send`), how many bytes it
still wants (`bytes_wanted`, so a transport never reads past the handshake)
and, once done, the `Session`: the peer's public key and the keys and
starting nonces of the two box-streams. Every check that fails raises
`HandshakeFailed` with the step that failed; the caller then closes the
connection, sending nothing more. No I/O and no clock here: the total
deadline belongs to the transport.

States
------
Each side is in one `State`; the message it waits for is data, in
`_WANTED`, and `receive_data` runs the handler of the current state:

    client   AWAIT_CHALLENGE --msg2--> AWAIT_ACCEPT --msg4--> DONE
    server   AWAIT_HELLO     --msg1--> AWAIT_AUTH   --msg3--> DONE
    either   any check fails --------------------------------> FAILED

FAILED is final: more input raises `LocalProtocolError` (the caller should
have closed the connection). Bytes that arrive after the last handshake
message are kept in `leftover` for the box-stream, at most
`MAX_LEFTOVER_BYTES` of them; more is `HandshakeFailed`.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass

from nacl import bindings
from nacl.exceptions import BadSignatureError, CryptoError
from nacl.exceptions import RuntimeError as NaclRuntimeError

from tanglenode.protocol.errors import LocalProtocolError, RemoteProtocolError
from tanglenode.protocol.identity import Keypair

NETWORK_KEY_BYTES = 32
MSG1_BYTES = MSG2_BYTES = 64
MSG3_BYTES = 112
MSG4_BYTES = 80
MAX_LEFTOVER_BYTES = 64 * 1024  # box-stream bytes buffered behind the handshake
_ZERO_NONCE = bytes(24)


class State(enum.Enum):
    """Where one side of the handshake stands."""

    AWAIT_HELLO = "waiting for message 1"  # server
    AWAIT_CHALLENGE = "waiting for message 2"  # client
    AWAIT_AUTH = "waiting for message 3"  # server
    AWAIT_ACCEPT = "waiting for message 4"  # client
    DONE = "done"
    FAILED = "failed"


_WANTED = {
    State.AWAIT_HELLO: MSG1_BYTES,
    State.AWAIT_CHALLENGE: MSG2_BYTES,
    State.AWAIT_AUTH: MSG3_BYTES,
    State.AWAIT_ACCEPT: MSG4_BYTES,
}


class HandshakeFailed(RemoteProtocolError):
    """The peer failed the handshake: wrong network key, wrong identity or a tampered message."""


@dataclass(frozen=True, slots=True)
class Session:
    """What a finished handshake yields: who the peer is and the box-stream keys."""

    peer: bytes  # the peer's long-term Ed25519 public key
    encrypt_key: bytes
    encrypt_nonce: bytes
    decrypt_key: bytes
    decrypt_nonce: bytes


def _hmac(key: bytes, message: bytes) -> bytes:
    """libsodium's crypto_auth: HMAC-SHA-512 cut to 32 bytes."""
    return hmac.new(key, message, hashlib.sha512).digest()[:32]


def _sha256(*parts: bytes) -> bytes:
    return hashlib.sha256(b"".join(parts)).digest()


def _dh(secret: bytes, public: bytes, step: str) -> bytes:
    try:
        return bindings.crypto_scalarmult(secret, public)
    except (CryptoError, NaclRuntimeError) as error:  # a low-order point
        raise HandshakeFailed(f"{step}: unusable key exchange ({error})") from None


def _curve_public(public: bytes, step: str) -> bytes:
    try:
        return bindings.crypto_sign_ed25519_pk_to_curve25519(public)
    except (CryptoError, NaclRuntimeError, ValueError):
        raise HandshakeFailed(f"{step}: the peer's public key is not a valid Ed25519 key") from None


def _verify(public: bytes, signature: bytes, message: bytes, step: str) -> None:
    try:
        bindings.crypto_sign_open(signature + message, public)
    except (BadSignatureError, CryptoError, ValueError):
        raise HandshakeFailed(f"{step}: bad signature") from None


def _challenge(network_key: bytes, ephemeral_public: bytes) -> bytes:
    return _hmac(network_key, ephemeral_public) + ephemeral_public


def _open_challenge(network_key: bytes, message: bytes, step: str) -> bytes:
    mac, ephemeral_public = message[:32], message[32:]
    if not hmac.compare_digest(mac, _hmac(network_key, ephemeral_public)):
        raise HandshakeFailed(f"{step}: not our network (challenge MAC does not verify)")
    return ephemeral_public


def _session(
    shared_secret: bytes,
    peer: bytes,
    encrypt_for: bytes,
    decrypt_for: bytes,
    encrypt_nonce: bytes,
    decrypt_nonce: bytes,
) -> Session:
    key = _sha256(_sha256(shared_secret))
    return Session(
        peer=peer,
        encrypt_key=_sha256(key, encrypt_for),
        encrypt_nonce=encrypt_nonce,
        decrypt_key=_sha256(key, decrypt_for),
        decrypt_nonce=decrypt_nonce,
    )


class _Side:
    """Buffering shared by both sides: feed bytes in, one fixed-size message at a time."""

    def __init__(
        self,
        network_key: bytes,
        keypair: Keypair,
        ephemeral: tuple[bytes, bytes] | None,
        state: State,
    ):
        if len(network_key) != NETWORK_KEY_BYTES:
            raise LocalProtocolError(f"the network key is {NETWORK_KEY_BYTES} bytes")
        self.network_key = network_key
        self.keypair = keypair
        self.eph_public, self.eph_secret = ephemeral or bindings.crypto_box_keypair()
        self.state = state
        self.session: Session | None = None
        self._outgoing = bytearray()
        self._incoming = bytearray()
        self.leftover = b""  # bytes that arrived after the last handshake message

    @property
    def bytes_wanted(self) -> int:
        """How many more bytes the handshake needs now (0 once it is done or has failed)."""
        wanted = _WANTED.get(self.state, 0)
        return wanted - len(self._incoming) if wanted else 0

    def data_to_send(self) -> bytes:
        data, self._outgoing = bytes(self._outgoing), bytearray()
        return data

    def receive_data(self, data: bytes) -> None:
        """Feed bytes from the peer; raises `HandshakeFailed` (then FAILED) if a check fails."""
        if self.state is State.FAILED:
            raise LocalProtocolError("the handshake has failed; it takes no more input")
        self._incoming += data
        try:
            while (wanted := _WANTED.get(self.state)) and len(self._incoming) >= wanted:
                message = bytes(self._incoming[:wanted])
                del self._incoming[:wanted]
                self.state = self._handle(message)
            if self.state is State.DONE and self._incoming:
                if len(self.leftover) + len(self._incoming) > MAX_LEFTOVER_BYTES:
                    raise HandshakeFailed(
                        f"more than {MAX_LEFTOVER_BYTES} bytes after the handshake"
                    )
                self.leftover += bytes(self._incoming)
                self._incoming.clear()
        except HandshakeFailed:
            self.state = State.FAILED
            self._incoming.clear()
            self._outgoing.clear()
            raise

    def _handle(self, message: bytes) -> State:
        """Handle the message the current state waits for; returns the next state."""
        raise NotImplementedError


class ClientHandshake(_Side):
    """The dialing side; it must know the server's public key. Sends message 1 at once."""

    def __init__(
        self,
        network_key: bytes,
        keypair: Keypair,
        server_public: bytes,
        *,
        ephemeral: tuple[bytes, bytes] | None = None,
    ) -> None:
        super().__init__(network_key, keypair, ephemeral, State.AWAIT_CHALLENGE)
        self.server_public = server_public
        self._msg1 = _challenge(network_key, self.eph_public)
        self._outgoing += self._msg1

    def _handle(self, message: bytes) -> State:
        if self.state is State.AWAIT_CHALLENGE:
            self._on_accept_challenge(message)
            return State.AWAIT_ACCEPT
        self._on_accept(message)
        return State.DONE

    def _on_accept_challenge(self, msg2: bytes) -> None:
        self.server_eph = _open_challenge(self.network_key, msg2, "message 2")
        self._msg2 = msg2
        self.ab = _dh(self.eph_secret, self.server_eph, "message 2")
        self.aB = _dh(self.eph_secret, _curve_public(self.server_public, "message 2"), "message 2")
        payload = self.network_key + self.server_public + _sha256(self.ab)
        self.signature = self.keypair.sign(payload)
        box_key = _sha256(self.network_key, self.ab, self.aB)
        self._outgoing += bindings.crypto_secretbox(
            self.signature + self.keypair.public, _ZERO_NONCE, box_key
        )

    def _on_accept(self, msg4: bytes) -> None:
        own_curve = bindings.crypto_sign_ed25519_sk_to_curve25519(
            self.keypair.seed + self.keypair.public
        )
        Ab = _dh(own_curve, self.server_eph, "message 4")
        secret = self.network_key + self.ab + self.aB + Ab
        try:
            server_signature = bindings.crypto_secretbox_open(msg4, _ZERO_NONCE, _sha256(secret))
        except CryptoError:
            raise HandshakeFailed("message 4: the server's acceptance does not open") from None
        signed = self.network_key + self.signature + self.keypair.public + _sha256(self.ab)
        _verify(self.server_public, server_signature, signed, "message 4")
        self.session = _session(
            secret,
            peer=self.server_public,
            encrypt_for=self.server_public,
            decrypt_for=self.keypair.public,
            encrypt_nonce=self._msg2[:24],
            decrypt_nonce=self._msg1[:24],
        )


class ServerHandshake(_Side):
    """The accepting side; it learns the client's identity from message 3.

    `authorize(client_public) -> bool` may refuse a verified client; a refused
    client gets no message 4.
    """

    def __init__(
        self,
        network_key: bytes,
        keypair: Keypair,
        *,
        authorize: Callable[[bytes], bool] | None = None,
        ephemeral: tuple[bytes, bytes] | None = None,
    ) -> None:
        super().__init__(network_key, keypair, ephemeral, State.AWAIT_HELLO)
        self._authorize = authorize

    def _handle(self, message: bytes) -> State:
        if self.state is State.AWAIT_HELLO:
            self._on_hello(message)
            return State.AWAIT_AUTH
        self._on_auth(message)
        return State.DONE

    def _on_hello(self, msg1: bytes) -> None:
        self.client_eph = _open_challenge(self.network_key, msg1, "message 1")
        self._msg1 = msg1
        self._msg2 = _challenge(self.network_key, self.eph_public)
        self._outgoing += self._msg2

    def _on_auth(self, msg3: bytes) -> None:
        own_curve = bindings.crypto_sign_ed25519_sk_to_curve25519(
            self.keypair.seed + self.keypair.public
        )
        ab = _dh(self.eph_secret, self.client_eph, "message 3")
        aB = _dh(own_curve, self.client_eph, "message 3")
        try:
            opened = bindings.crypto_secretbox_open(
                msg3, _ZERO_NONCE, _sha256(self.network_key, ab, aB)
            )
        except CryptoError:
            raise HandshakeFailed("message 3: the client's authentication does not open") from None
        client_signature, client_public = opened[:64], opened[64:]
        signed = self.network_key + self.keypair.public + _sha256(ab)
        _verify(client_public, client_signature, signed, "message 3")
        if self._authorize is not None and not self._authorize(client_public):
            raise HandshakeFailed("message 3: this client is not authorized")
        Ab = _dh(self.eph_secret, _curve_public(client_public, "message 3"), "message 3")
        secret = self.network_key + ab + aB + Ab
        accepted = self.network_key + client_signature + client_public + _sha256(ab)
        accept = self.keypair.sign(accepted)
        self._outgoing += bindings.crypto_secretbox(
            accept, _ZERO_NONCE, _sha256(self.network_key, ab, aB, Ab)
        )
        self.session = _session(
            secret,
            peer=client_public,
            encrypt_for=client_public,
            decrypt_for=self.keypair.public,
            encrypt_nonce=self._msg1[:24],
            decrypt_nonce=self._msg2[:24],
        )
