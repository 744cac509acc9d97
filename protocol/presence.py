"""Presence: where an author's caret and selection are in a document, as nodes tell each other.

Theory of operation
-------------------
Presence is ephemeral: never signed, never a message of a feed, never stored. A
node tells its gossip peers where its own author is in a document
(node/gossip/presence.py) in one gossip frame, `[PRESENCE, payload]`
(protocol/gossip.py), whose payload is msgpack bytes, at most
`MAX_PRESENCE_BYTES`:

    [doc id (bin 32), author (bin 32), start, end]

`start` and `end` are positions in the text, each named by the atom just before
it (`[message id (bin 32), index]`, docs/DOCUMENTS.md "Atoms"), or nil for the
start of the text: a position so named means the same place on every node
holding those atoms, whatever each node's own version numbers (which are local).
`start` == `end` is a caret; otherwise a selection, the caret at `end`.

`parse_presence` checks the payload's shape and size and raises
`PresenceRefused` with a `PresenceDrop` reason; what the payload may say of
whom (the peer's own author only, a document the peer may see) and how often is
the node's rule (node/gossip/presence.py), for it knows the peer and the store.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import msgpack

from tanglenode.protocol.identity import FEED_BYTES

MAX_PRESENCE_BYTES = 160  # a payload: 2 x 32 + 2 x (32 + 5) and msgpack's framing fit in 150
MAX_INDEX = (1 << 32) - 1
ID_BYTES = 32

Anchor = tuple[bytes, int]  # the atom just before a position: (message id, index)


class PresenceDrop(enum.StrEnum):
    """Why a presence frame from a peer was dropped (the peer is kept). Stable log strings."""

    OVERSIZED = "presence-oversized"  # the payload is over MAX_PRESENCE_BYTES, or no bytes
    MALFORMED = "presence-malformed"  # not [doc, author, start, end] of the shapes above
    NOT_OFFERED = "presence-not-offered"  # the peer did not offer presence first
    TOO_FREQUENT = "presence-too-frequent"  # over the peer's rate (node/gossip/presence.py)
    NOT_THE_PEERS = "presence-not-the-peers"  # it names an author other than the peer's own
    UNKNOWN_DOCUMENT = "presence-unknown-document"  # a document this node does not hold
    NOT_A_MEMBER = "presence-not-a-member"  # a private document of a group the peer is not in


class PresenceRefused(Exception):
    def __init__(self, reason: PresenceDrop, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True, slots=True)
class Presence:
    doc: bytes
    author: bytes
    start: Anchor | None
    end: Anchor | None


def encode_presence(presence: Presence) -> bytes:
    anchors = [None if a is None else [a[0], a[1]] for a in (presence.start, presence.end)]
    return msgpack.packb([presence.doc, presence.author, *anchors], use_bin_type=True)


def parse_presence(payload: Any) -> Presence:
    """A peer's payload as a `Presence`, or `PresenceRefused` (OVERSIZED, MALFORMED)."""
    if not isinstance(payload, bytes) or not payload:
        raise PresenceRefused(PresenceDrop.MALFORMED, "the payload is not bytes")
    if len(payload) > MAX_PRESENCE_BYTES:
        raise PresenceRefused(
            PresenceDrop.OVERSIZED, f"{len(payload)} bytes; at most {MAX_PRESENCE_BYTES}"
        )
    try:
        value = msgpack.unpackb(payload, raw=False, strict_map_key=True)
    except Exception as error:  # msgpack raises several kinds for bytes that are no value
        raise PresenceRefused(PresenceDrop.MALFORMED, f"not msgpack: {str(error)[:80]}") from None
    if not isinstance(value, list) or len(value) != 4:
        raise PresenceRefused(PresenceDrop.MALFORMED, "not [doc, author, start, end]")
    doc, author, start, end = value
    if not (_id(doc) and isinstance(author, bytes) and len(author) == FEED_BYTES):
        raise PresenceRefused(PresenceDrop.MALFORMED, "doc or author is not 32 bytes")
    return Presence(doc, author, _anchor(start), _anchor(end))


def _id(value: Any) -> bool:
    return isinstance(value, bytes) and len(value) == ID_BYTES


def _anchor(value: Any) -> Anchor | None:
    if value is None:
        return None
    if (
        isinstance(value, list)
        and len(value) == 2
        and _id(value[0])
        and isinstance(value[1], int)
        and not isinstance(value[1], bool)
        and 0 <= value[1] <= MAX_INDEX
    ):
        return (value[0], value[1])
    raise PresenceRefused(PresenceDrop.MALFORMED, "a position is nil or [message id, index]")
