"""The signed message (DESIGN §1-3): its fields, signing, and validating decoder.

Theory of operation
-------------------
A signed message is the canonical msgpack encoding (see `protocol.canonical`)
of a 9-element array, in this fixed order:

    [version, author, seq, prev, timestamp, timeframe, tangles, content, signature]

    version    int, 1
    author     bin 32, the Ed25519 public key of the feed
    seq        int >= 1, position in the author's feed
    prev       nil when seq == 1, else bin 32: id of the author's message seq - 1
    timestamp  int >= 0, claimed milliseconds since the Unix epoch
    timeframe  map bin 32 -> int >= 1: for each other feed, the highest seq the
               author had processed; the author's own feed never appears
    tangles    map str -> {"previous": [bin 32, ...] | nil, "root": bin 32 | nil}
               both nil for the message that roots the tangle; otherwise root is
               the root's id and previous a non-empty, strictly ascending list
               of the tangle's tips when the message was written
    content    any canonical value (maps keyed by strings)
    signature  bin 64, Ed25519 over the canonical encoding of the first eight
               fields as an 8-element array

The id is BLAKE2b-256 of the whole signed encoding. Because the encoding is
canonical, the signed payload is the signed bytes with the array header
changed from 9 to 8 elements and the signature (2 + 64 bytes) cut off; the
decoder uses that instead of encoding the fields again.

Checks run cheapest first: size, canonical form, shape of each field, then
the signature. Each failure raises `InvalidMessage` with its `Reason`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import msgpack
from nacl.bindings import crypto_sign_open
from nacl.exceptions import CryptoError

from protocol.canonical import NonCanonical, canonical_value, decode_canonical
from protocol.errors import InvalidMessage, LocalProtocolError, Reason
from protocol.identity import ID_BYTES, KEY_BYTES, SIGNATURE_BYTES, Keypair, message_id
from protocol.limits import DEFAULT_LIMITS, Limits

VERSION = 1
FIELD_COUNT = 9
_MAX_INT64 = 2**63
_UNSIGNED_HEADER = b"\x98"  # fixarray of 8
_SIGNATURE_TRAILER = 2 + SIGNATURE_BYTES  # bin8 header (0xc4 0x40) + signature


class TangleLink(NamedTuple):
    """A message's place in one tangle: `root` is None for the tangle's root."""

    root: bytes | None
    previous: tuple[bytes, ...] | None

    @property
    def is_root(self) -> bool:
        return self.root is None


ROOT_LINK = TangleLink(None, None)


class UnpublishableMessage(LocalProtocolError):
    """We tried to sign a message that no node would accept."""

    def __init__(self, reason: Reason, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True, slots=True)
class Message:
    id: bytes
    raw: bytes
    author: bytes
    seq: int
    prev: bytes | None
    timestamp: int
    timeframe: dict[bytes, int]
    tangles: dict[str, TangleLink]
    content: Any
    signature: bytes

    def tangle_root(self, name: str) -> bytes:
        """The id of the root of tangle `name` (this message's own id if it is the root)."""
        link = self.tangles[name]
        return self.id if link.root is None else link.root


def sign_message(
    keypair: Keypair,
    *,
    seq: int,
    prev: bytes | None,
    timestamp: int,
    timeframe: dict[bytes, int],
    tangles: dict[str, TangleLink],
    content: Any,
    limits: Limits = DEFAULT_LIMITS,
) -> Message:
    """Sign a new message and validate it exactly as a receiver would."""
    fields = [
        VERSION,
        keypair.public,
        seq,
        prev,
        timestamp,
        timeframe,
        {
            name: {
                "previous": None if link.previous is None else sorted(link.previous),
                "root": link.root,
            }
            for name, link in tangles.items()
        },
        content,
    ]
    fields = canonical_value(fields)
    payload = msgpack.packb(fields, use_bin_type=True)
    raw = msgpack.packb([*fields, keypair.sign(payload)], use_bin_type=True)
    try:
        return decode_message(raw, limits)
    except InvalidMessage as error:
        raise UnpublishableMessage(error.reason, error.detail) from error


def decode_message(
    raw: bytes, limits: Limits = DEFAULT_LIMITS, *, verify_signature: bool = True
) -> Message:
    """Validate signed bytes fully and return the message, or raise `InvalidMessage`.

    `verify_signature=False` is for bytes read back from our own store, which
    verified them on the way in; every other check still runs.
    """
    if len(raw) > limits.max_message_bytes:
        raise InvalidMessage(
            Reason.TOO_LARGE, f"{len(raw)} bytes, the limit is {limits.max_message_bytes}"
        )
    try:
        fields = decode_canonical(raw)
    except NonCanonical as error:
        raise InvalidMessage(Reason.NON_CANONICAL, str(error)) from None
    except ValueError as error:
        raise InvalidMessage(Reason.MALFORMED, str(error)) from None
    if type(fields) is not list or not fields:
        raise InvalidMessage(Reason.MALFORMED, "a message is a non-empty array")
    if fields[0] != VERSION or type(fields[0]) is not int:
        raise InvalidMessage(Reason.UNKNOWN_VERSION, f"version {fields[0]!r}, expected {VERSION}")
    if len(fields) != FIELD_COUNT:
        raise InvalidMessage(
            Reason.MALFORMED, f"{len(fields)} fields, version {VERSION} has {FIELD_COUNT}"
        )
    _, author, seq, prev, timestamp, timeframe, tangles, content, signature = fields
    if type(author) is not bytes or len(author) != KEY_BYTES:
        raise InvalidMessage(Reason.BAD_AUTHOR, "author must be a 32-byte public key")
    if type(seq) is not int or not 1 <= seq < _MAX_INT64:
        raise InvalidMessage(Reason.BAD_SEQ, f"seq must be an integer >= 1, got {seq!r}")
    if seq == 1:
        if prev is not None:
            raise InvalidMessage(Reason.BAD_PREV, "the first message of a feed has no prev")
    elif type(prev) is not bytes or len(prev) != ID_BYTES:
        raise InvalidMessage(Reason.BAD_PREV, f"message {seq} needs a 32-byte prev id")
    if type(timestamp) is not int or not 0 <= timestamp < _MAX_INT64:
        raise InvalidMessage(Reason.BAD_TIMESTAMP, "timestamp must be a non-negative integer")
    _check_timeframe(timeframe, author, limits)
    links = _parse_tangles(tangles, limits)
    if type(signature) is not bytes or len(signature) != SIGNATURE_BYTES:
        raise InvalidMessage(Reason.BAD_SIGNATURE, "signature must be 64 bytes")
    if verify_signature:
        payload = _UNSIGNED_HEADER + raw[1:-_SIGNATURE_TRAILER]
        try:
            crypto_sign_open(signature + payload, author)
        except CryptoError:
            raise InvalidMessage(Reason.BAD_SIGNATURE, "signature does not verify") from None
    return Message(
        id=message_id(raw),
        raw=raw,
        author=author,
        seq=seq,
        prev=prev,
        timestamp=timestamp,
        timeframe=timeframe,
        tangles=links,
        content=content,
        signature=signature,
    )


def _check_timeframe(timeframe: Any, author: bytes, limits: Limits) -> None:
    # Set operations over map/len/type keep this in C: a timeframe can hold thousands of entries.
    if type(timeframe) is not dict:
        raise InvalidMessage(Reason.BAD_TIMEFRAME, "timeframe must be a map")
    if len(timeframe) > limits.max_timeframe_entries:
        raise InvalidMessage(
            Reason.TOO_MANY_TIMEFRAME_ENTRIES,
            f"{len(timeframe)} entries, the limit is {limits.max_timeframe_entries}",
        )
    if not timeframe:
        return
    keys = timeframe.keys()
    if set(map(type, keys)) != {bytes} or set(map(len, keys)) != {KEY_BYTES}:
        raise InvalidMessage(Reason.BAD_TIMEFRAME, "timeframe keys must be 32-byte feed keys")
    if author in timeframe:
        raise InvalidMessage(Reason.BAD_TIMEFRAME, "timeframe must not name the author's own feed")
    seqs = timeframe.values()
    if set(map(type, seqs)) != {int} or min(seqs) < 1 or max(seqs) >= _MAX_INT64:
        raise InvalidMessage(Reason.BAD_TIMEFRAME, "timeframe values must be integers >= 1")


def _parse_tangles(tangles: Any, limits: Limits) -> dict[str, TangleLink]:
    if type(tangles) is not dict:
        raise InvalidMessage(Reason.BAD_TANGLES, "tangles must be a map")
    if len(tangles) > limits.max_tangles:
        raise InvalidMessage(
            Reason.TOO_MANY_TANGLES, f"{len(tangles)} tangles, the limit is {limits.max_tangles}"
        )
    links: dict[str, TangleLink] = {}
    for name, link in tangles.items():
        if type(name) is not str or not 0 < len(name.encode()) <= limits.max_tangle_name_bytes:
            raise InvalidMessage(
                Reason.BAD_TANGLES,
                f"tangle names are strings of 1 to {limits.max_tangle_name_bytes} bytes",
            )
        if type(link) is not dict or link.keys() != {"previous", "root"}:
            raise InvalidMessage(
                Reason.BAD_TANGLES, f"tangle {name!r} must be a map of exactly root and previous"
            )
        root, previous = link["root"], link["previous"]
        if root is None and previous is None:
            links[name] = ROOT_LINK
            continue
        if type(root) is not bytes or len(root) != ID_BYTES:
            raise InvalidMessage(Reason.BAD_TANGLES, f"tangle {name!r}: root must be a 32-byte id")
        if type(previous) is not list or not previous:
            raise InvalidMessage(
                Reason.BAD_TANGLES, f"tangle {name!r}: previous must be a non-empty list"
            )
        if len(previous) > limits.max_previous:
            raise InvalidMessage(
                Reason.TOO_MANY_PREVIOUS,
                f"tangle {name!r}: {len(previous)} previous, the limit is {limits.max_previous}",
            )
        if any(type(p) is not bytes or len(p) != ID_BYTES for p in previous):
            raise InvalidMessage(
                Reason.BAD_TANGLES, f"tangle {name!r}: previous holds 32-byte ids only"
            )
        if any(previous[i] >= previous[i + 1] for i in range(len(previous) - 1)):
            raise InvalidMessage(
                Reason.BAD_TANGLES, f"tangle {name!r}: previous must be strictly ascending"
            )
        links[name] = TangleLink(root, tuple(previous))
    return links
