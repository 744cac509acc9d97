"""Keys and identifiers.

A feed is named by its author's Ed25519 public key (32 bytes); a message by
the BLAKE2b-256 hash of its signed header (32 bytes), which its content
does not change (the header signs the content's hash). On screens and in
files they are written with a sigil and unpadded URL-safe base64, so they
never contain `/` or `+`: `@…` for a feed, `%…` for a message (43 characters
after the sigil).
"""

from __future__ import annotations

import base64
import hashlib

from nacl.signing import SigningKey

from tanglenode.protocol.errors import BadIdentifier, LocalProtocolError
from tanglenode.protocol.wire import header_of

KEY_BYTES = 32
FEED_BYTES = 32  # a feed id is its author's Ed25519 public key
ID_BYTES = 32
SIGNATURE_BYTES = 64
TAG_BYTES = 16  # a timeframe entry binds a message by this many leading bytes of its id
FEED_SIGIL = "@"
MESSAGE_SIGIL = "%"
_B64_LENGTH = 43  # 32 bytes in unpadded base64
ID_CHARS = _B64_LENGTH  # an id's characters after its sigil


def tag_of(msg_id: bytes) -> bytes:
    """The tag a timeframe entry names a message by: the first `TAG_BYTES` of its id."""
    return msg_id[:TAG_BYTES]


def message_id(signed: bytes) -> bytes:
    """The id of a message: BLAKE2b-256 of its signed header, given alone or in the
    message's wire form `[header, content]` (protocol/wire.py)."""
    return hashlib.blake2b(header_of(signed), digest_size=ID_BYTES).digest()


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _unb64(text: str, sigil: str, what: str) -> bytes:
    shown = repr(text if len(text) <= 60 else text[:56] + "...")  # errors stay one short line
    if not text.startswith(sigil):
        raise BadIdentifier(f"{what} {shown} must start with {sigil!r}")
    body = text[len(sigil) :]
    if len(body) != _B64_LENGTH:
        raise BadIdentifier(f"{what} {shown} does not encode 32 bytes")
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except ValueError:
        raise BadIdentifier(f"{what} {shown} is not URL-safe base64") from None
    if len(raw) != 32 or _b64(raw) != body:
        raise BadIdentifier(f"{what} {shown} does not encode 32 bytes")
    return raw


def feed_text(author: bytes) -> str:
    """A feed id (32 bytes) as text: `@` and unpadded URL-safe base64."""
    return FEED_SIGIL + _b64(author)


def message_text(msg_id: bytes) -> str:
    """A message id (32 bytes) as text: `%` and unpadded URL-safe base64."""
    return MESSAGE_SIGIL + _b64(msg_id)


def parse_feed(text: str) -> bytes:
    """The 32 bytes of a feed id written `@…`; `BadIdentifier` if `text` is not one."""
    return _unb64(text, FEED_SIGIL, "feed id")


def parse_message_id(text: str) -> bytes:
    """The 32 bytes of a message id written `%…`; `BadIdentifier` if `text` is not one."""
    return _unb64(text, MESSAGE_SIGIL, "message id")


_B64_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
_B64_VALUE = {char: value for value, char in enumerate(_B64_ALPHABET)}
MAX_PREFIX_CHARS = _B64_LENGTH - 1  # 42 characters: 252 bits; 43 are a whole id


def is_id_prefix(text: str) -> bool:
    """Whether `text` (without its sigil) could begin an id: 1 to 42 base64url characters."""
    return 0 < len(text) <= MAX_PREFIX_CHARS and all(char in _B64_VALUE for char in text)


def prefix_range(text: str) -> tuple[bytes, bytes]:
    """The 32-byte ids whose text (without sigil) starts with `text`, as an inclusive
    range `(low, high)`: each character is 6 bits of the id, so the ids written so are
    exactly those between the bits given followed by all zeros and by all ones.
    `BadIdentifier` unless `is_id_prefix(text)`."""
    if not is_id_prefix(text):
        raise BadIdentifier(f"{text[:60]!r} is not 1 to {MAX_PREFIX_CHARS} base64url characters")
    bits = 0
    for char in text:
        bits = bits << 6 | _B64_VALUE[char]
    rest = ID_BYTES * 8 - 6 * len(text)  # the bits the prefix leaves open
    low = bits << rest
    return low.to_bytes(ID_BYTES, "big"), (low | ((1 << rest) - 1)).to_bytes(ID_BYTES, "big")


class Keypair:
    """An Ed25519 signing identity built from its 32-byte secret seed."""

    __slots__ = ("_signing_key", "public", "seed")

    def __init__(self, seed: bytes) -> None:
        if len(seed) != KEY_BYTES:
            raise LocalProtocolError(f"an Ed25519 seed is {KEY_BYTES} bytes, not {len(seed)}")
        self.seed = bytes(seed)
        self._signing_key = SigningKey(self.seed)
        self.public = bytes(self._signing_key.verify_key)

    @classmethod
    def generate(cls) -> Keypair:
        return cls(bytes(SigningKey.generate()))

    @property
    def feed_id(self) -> str:
        return feed_text(self.public)

    def sign(self, payload: bytes) -> bytes:
        return self._signing_key.sign(payload).signature

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Keypair) and other.seed == self.seed

    def __hash__(self) -> int:
        return hash(self.public)

    def __repr__(self) -> str:  # never print the secret
        return f"Keypair({self.feed_id})"
