"""The signed message (docs/FORMAT.md): its header, content, signing, and validating decoder.

Theory of operation
-------------------
A message of format 3 is a signed *header* and its *content*. The header is
the canonical msgpack encoding (see `protocol.canonical`) of a 10-element
array, in this fixed order:

    [version, author, seq, prev, timestamp, timeframe, tangles,
     content_hash, content_size, signature]

    version       int, 3
    author        bin 32, the Ed25519 public key of the feed
    seq           int >= 1, position in the author's feed
    prev          nil when seq == 1, else bin 32: id of the author's message seq - 1
    timestamp     int >= 0, claimed milliseconds since the Unix epoch
    timeframe     map bin 32 -> [int >= 1, bin 16]: messages the author had
                  processed, each named by its feed, its seq and the tag of its
                  id (the first 16 bytes); the heads of what the author processed,
                  at most a capped number (docs/PROCESSING.md); never the
                  author's own feed
    tangles       map str -> {"previous": [bin 32, ...] | nil, "root": bin 32 | nil}
                  both nil for the message that roots the tangle; otherwise root is
                  the root's id and previous a non-empty, strictly ascending list
                  of the tangle's tips when the message was written
    content_hash  bin 32, BLAKE2b-256 of the content's canonical bytes
    content_size  int >= 1, their length
    signature     bin 64, Ed25519 over the canonical encoding of the first nine
                  fields as a 9-element array

The id is BLAKE2b-256 of the signed header, so a message keeps its id, and
every link to it holds, when its content is gone. The content is any
canonical value (maps keyed by strings); it travels beside the header, in
the wire form `[header, content bytes | nil]` (protocol/wire.py), and is
checked against the header's hash and size: content that does not match is
dropped and the header kept (`content_refused`: `content-mismatch`), as a
relay, not the author, may have garbled it. A header alone is a whole
message for everything that orders, links or proves.

Checks run cheapest first: size; the wire pair; the type and shape of each
header field (decoded in C, see `protocol.envelope`); canonical form; the
rules between fields; the content against its hash, then its own rules
(finite floats, no extension types, at most `limits.max_content_depth`
nested arrays and maps, checked by one iterative walk); then the
signature. Each failure raises `InvalidMessage` with its `Reason`. Because
the encoding is canonical, the signed payload is the header with its array
header changed from 10 to 9 elements and the signature (2 + 64 bytes) cut
off.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import msgpack
from nacl.bindings import crypto_sign_open
from nacl.exceptions import CryptoError

from tanglenode.protocol.canonical import (
    ExtensionType,
    NonCanonical,
    NonFiniteFloat,
    TooDeep,
    canonical_value,
    decode_canonical,
)
from tanglenode.protocol.envelope import (
    DecodeError,
    Link,
    ValidationError,
    decode_envelope,
    encode_envelope,
    reason_for,
)
from tanglenode.protocol.errors import InvalidMessage, LocalProtocolError, Reason
from tanglenode.protocol.identity import SIGNATURE_BYTES, Keypair, message_id
from tanglenode.protocol.limits import DEFAULT_LIMITS, Limits
from tanglenode.protocol.wire import BadWire, header_of, split_wire, wire

VERSION = 3  # 1: timeframes of bare seqs; 2: the signature covered the content itself


# A header's canonical bytes begin: a 10-element array, the version, a 32-byte bin (its author).
HEADER_PREFIX = bytes((0x9A, VERSION, 0xC4, 32))


def author_of(raw: bytes) -> bytes | None:
    """The author a message's bytes (wire form or header) claim, read without decoding them;
    None when they do not start as a canonical message of this version does (decoding
    will refuse them)."""
    header = header_of(raw)
    if header[:4] != HEADER_PREFIX or len(header) < 36:
        return None
    return bytes(header[4:36])


def _version_detail(found: int) -> str:
    detail = f"version {found}, expected {VERSION}"
    if found == 1:  # what every node wrote before format 2
        detail += ": version 1 (timeframes of bare seqs, before tags bound them) is refused"
    elif found == 2:
        detail += ": version 2 (its signature covers its content: never erasable) is refused"
    return detail


_UNSIGNED_HEADER = b"\x99"  # fixarray of 9
_SIGNATURE_TRAILER = 2 + SIGNATURE_BYTES  # bin8 header (0xc4 0x40) + signature


class Named(NamedTuple):
    """A timeframe entry's message: its seq in the entry's feed and the tag of its id."""

    seq: int
    tag: bytes


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
    raw: bytes  # the wire form: [header, content bytes | nil] (protocol/wire.py)
    author: bytes
    seq: int
    prev: bytes | None
    timestamp: int
    timeframe: dict[bytes, int]  # feed -> the seq named (what every ordering rule reads)
    timeframe_tags: dict[bytes, bytes]  # feed -> the tag of the message named there
    tangles: dict[str, TangleLink]
    content: Any  # the content's value; None where it is absent (see `has_content`)
    signature: bytes
    header: bytes = b""  # the signed header: the id is its hash
    content_hash: bytes = b""
    content_size: int = 0
    content_bytes: bytes | None = None  # the content's canonical bytes; None: absent
    content_refused: Reason | None = None  # why content that came with it was dropped

    @property
    def has_content(self) -> bool:
        return self.content_bytes is not None

    def without_content(self) -> Message:
        """This message as its header alone (its content erased, purged or never held)."""
        return replace(self, raw=wire(self.header, None), content=None, content_bytes=None)

    def named(self) -> dict[bytes, Named]:
        """The timeframe as it is signed: feed -> (seq, tag)."""
        tags = self.timeframe_tags
        return {feed: Named(seq, tags[feed]) for feed, seq in self.timeframe.items()}

    def tangle_root(self, name: str) -> bytes:
        """The id of the root of tangle `name` (this message's own id if it is the root)."""
        link = self.tangles[name]
        return self.id if link.root is None else link.root


def content_hash(content: bytes) -> bytes:
    """What a header holds of its content: BLAKE2b-256 of its canonical bytes."""
    return hashlib.blake2b(content, digest_size=32).digest()


def sign_message(
    keypair: Keypair,
    *,
    seq: int,
    prev: bytes | None,
    timestamp: int,
    timeframe: Mapping[bytes, tuple[int, bytes]],
    tangles: dict[str, TangleLink],
    content: Any,
    limits: Limits = DEFAULT_LIMITS,
) -> Message:
    """Sign a new message and validate it as a receiver would, but for the signature.

    Every rule a receiver applies runs on the signed bytes (`decode_message`),
    so what we cannot publish raises `UnpublishableMessage` here, not on
    every peer; the signature alone is not verified again: libsodium just
    made it over the canonical payload, and checking it would double the
    cost of signing (tests verify it on the output).
    """
    try:  # the content's rules first, as a receiver would apply them (and without recursion)
        value = canonical_value(content, limits.max_content_depth)
    except (ValueError, LocalProtocolError) as error:
        reason = _CONTENT_REASONS.get(type(error), Reason.MALFORMED)
        raise UnpublishableMessage(reason, f"content: {error}") from None
    body = msgpack.packb(value, use_bin_type=True)
    links = {
        name: {
            "previous": None if link.previous is None else sorted(link.previous),
            "root": link.root,
        }
        for name, link in tangles.items()
    }
    fields: list[object] = [
        VERSION,
        keypair.public,
        seq,
        prev,
        timestamp,
        timeframe,
        links,
        content_hash(body),
        len(body),
    ]
    try:  # maps in key order; `decode_message` below checks every field's type and range
        entries = {feed: list(entry) for feed, entry in sorted(timeframe.items())}
        fields[5:7] = [entries, dict(sorted(links.items()))]
        payload = msgpack.packb(fields, use_bin_type=True)
    except (TypeError, ValueError, OverflowError):  # no message holds such a value: say which
        payload = msgpack.packb(canonical_value(fields), use_bin_type=True)
    # the signed header: the payload's fixarray of 9 made 10, the signature appended as bin 8
    header = b"\x9a" + payload[1:] + b"\xc4\x40" + keypair.sign(payload)
    try:
        return decode_message(wire(header, body), limits, verify_signature=False)
    except InvalidMessage as error:
        raise UnpublishableMessage(error.reason, error.detail) from error


def decode_message(
    raw: bytes,
    limits: Limits = DEFAULT_LIMITS,
    *,
    verify_signature: bool = True,
    known_id: bytes | None = None,
) -> Message:
    """Validate a message's wire form fully and return the message, or raise `InvalidMessage`.

    Content that does not match the header's hash and size is dropped, not
    refused: the message is returned as its header alone, `content_refused`
    saying why. `verify_signature=False` is for bytes read back from our own
    store, which verified them on the way in; every other check still runs.
    `known_id` saves hashing the header again when the caller already has its id.
    """
    if len(raw) > limits.max_message_bytes:
        raise InvalidMessage(
            Reason.TOO_LARGE, f"{len(raw)} bytes, the limit is {limits.max_message_bytes}"
        )
    try:
        header, body = split_wire(raw)
    except BadWire as error:
        found = _other_version(raw)
        if found is not None:  # a message of format 1 or 2 is no pair
            raise InvalidMessage(Reason.UNKNOWN_VERSION, _version_detail(found)) from None
        reason = Reason.MALFORMED if error.canonical else Reason.NON_CANONICAL
        raise InvalidMessage(reason, str(error)) from None
    try:
        envelope = decode_envelope(header)
    except ValidationError as error:
        found = _other_version(header)
        if found is not None:  # a different version may well have a different shape
            raise InvalidMessage(Reason.UNKNOWN_VERSION, _version_detail(found)) from None
        raise InvalidMessage(reason_for(error), str(error)) from None
    except (DecodeError, UnicodeDecodeError) as error:  # a str that is not UTF-8 is the latter
        raise InvalidMessage(Reason.MALFORMED, str(error)) from None
    if envelope.version != VERSION:
        raise InvalidMessage(Reason.UNKNOWN_VERSION, _version_detail(envelope.version))
    if encode_envelope(envelope) != header:
        raise InvalidMessage(Reason.NON_CANONICAL, "bytes are not the canonical encoding")
    author, seq, prev = envelope.author, envelope.seq, envelope.prev
    if (seq == 1) != (prev is None):
        raise InvalidMessage(
            Reason.BAD_PREV,
            "the first message of a feed has no prev" if seq == 1 else f"seq {seq} needs a prev",
        )
    named = envelope.timeframe
    _check_timeframe(named, author, limits)
    links = _parse_tangles(envelope.tangles, limits)
    content, refused = None, None
    if body is not None and (
        len(body) != envelope.content_size or content_hash(body) != envelope.content_hash
    ):
        body, refused, raw = None, Reason.CONTENT_MISMATCH, wire(header, None)
    if body is not None:
        try:
            content = decode_canonical(bytes(body), limits.max_content_depth)
        except (TooDeep, NonFiniteFloat, ExtensionType) as error:
            raise InvalidMessage(_CONTENT_REASONS[type(error)], f"content: {error}") from None
        except NonCanonical as error:
            raise InvalidMessage(Reason.NON_CANONICAL, f"content: {error}") from None
        except ValueError as error:
            raise InvalidMessage(Reason.MALFORMED, f"content: {error}") from None
    if verify_signature:
        payload = _UNSIGNED_HEADER + header[1:-_SIGNATURE_TRAILER]
        try:
            crypto_sign_open(envelope.signature + payload, author)
        except CryptoError:
            raise InvalidMessage(Reason.BAD_SIGNATURE, "signature does not verify") from None
    return Message(
        id=message_id(header) if known_id is None else known_id,
        raw=raw,
        author=author,
        seq=seq,
        prev=prev,
        timestamp=envelope.timestamp,
        timeframe={feed: entry[0] for feed, entry in named.items()},
        timeframe_tags={feed: entry[1] for feed, entry in named.items()},
        tangles=links,
        content=content,
        signature=envelope.signature,
        header=bytes(header),
        content_hash=envelope.content_hash,
        content_size=envelope.content_size,
        content_bytes=None if body is None else bytes(body),
        content_refused=refused,
    )


_CONTENT_REASONS: dict[type[Exception], Reason] = {
    TooDeep: Reason.TOO_DEEP,
    NonFiniteFloat: Reason.NON_FINITE_FLOAT,
    ExtensionType: Reason.EXT_TYPE,
}


def _other_version(raw: bytes) -> int | None:
    """The version of bytes that fail this version's shape, if they are an array that starts
    with another version (version 1's timeframes of bare seqs fail it so): else None."""
    try:
        fields = msgpack.unpackb(raw)
    except Exception:  # any undecodable input is simply malformed
        return None
    if type(fields) is list and fields and type(fields[0]) is int and fields[0] != VERSION:
        return fields[0]
    return None


def _ascending(keys: list[Any]) -> bool:
    return keys == sorted(keys)  # in C; keys are unique already (they came from a map)


def _check_timeframe(timeframe: dict[bytes, Any], author: bytes, limits: Limits) -> None:
    if len(timeframe) > limits.max_timeframe_entries:
        raise InvalidMessage(
            Reason.TOO_MANY_TIMEFRAME_ENTRIES,
            f"{len(timeframe)} entries, the limit is {limits.max_timeframe_entries}",
        )
    if not _ascending(list(timeframe)):
        raise InvalidMessage(Reason.NON_CANONICAL, "timeframe keys are not in ascending order")
    if author in timeframe:
        raise InvalidMessage(Reason.BAD_TIMEFRAME, "timeframe must not name the author's own feed")


def _parse_tangles(tangles: dict[str, Link], limits: Limits) -> dict[str, TangleLink]:
    if len(tangles) > limits.max_tangles:
        raise InvalidMessage(
            Reason.TOO_MANY_TANGLES, f"{len(tangles)} tangles, the limit is {limits.max_tangles}"
        )
    if not _ascending(list(tangles)):
        raise InvalidMessage(Reason.NON_CANONICAL, "tangle names are not in ascending order")
    links: dict[str, TangleLink] = {}
    for name, link in tangles.items():
        if not name or len(name.encode()) > limits.max_tangle_name_bytes:
            raise InvalidMessage(
                Reason.BAD_TANGLES,
                f"tangle names are strings of 1 to {limits.max_tangle_name_bytes} bytes",
            )
        root, previous = link.root, link.previous
        if root is None and previous is None:
            links[name] = ROOT_LINK
            continue
        if root is None or not previous:
            raise InvalidMessage(
                Reason.BAD_TANGLES,
                f"tangle {name!r}: a root has neither root nor previous, others need both",
            )
        if len(previous) > limits.max_previous:
            raise InvalidMessage(
                Reason.TOO_MANY_PREVIOUS,
                f"tangle {name!r}: {len(previous)} previous, the limit is {limits.max_previous}",
            )
        if len(previous) > 1 and (len(set(previous)) != len(previous) or not _ascending(previous)):
            raise InvalidMessage(
                Reason.BAD_TANGLES, f"tangle {name!r}: previous must be strictly ascending"
            )
        links[name] = TangleLink(root, tuple(previous))
    return links
