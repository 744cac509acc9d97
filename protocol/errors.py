"""The project's error tree.

Every error tanglenode raises on purpose derives from `TanglenodeError`.
Errors have a direction, as in h11: `LocalProtocolError` is our own misuse
(a caller asked for something impossible), `RemoteProtocolError` is what a
peer or an input file sent us. A message that fails validation raises
`InvalidMessage`, a `RemoteProtocolError` carrying a machine-readable
`Reason` code and a human-readable detail.
"""

from __future__ import annotations

import enum


class Reason(enum.StrEnum):
    """Why a message was refused. The values are stable wire/CLI strings."""

    # Shape and encoding (protocol/).
    TOO_LARGE = "too-large"
    MALFORMED = "malformed"
    NON_CANONICAL = "non-canonical"
    UNKNOWN_VERSION = "unknown-version"
    BAD_AUTHOR = "bad-author"
    BAD_SEQ = "bad-seq"
    BAD_PREV = "bad-prev"
    BAD_TIMESTAMP = "bad-timestamp"
    BAD_TIMEFRAME = "bad-timeframe"
    TOO_MANY_TIMEFRAME_ENTRIES = "too-many-timeframe-entries"
    BAD_TANGLES = "bad-tangles"
    TOO_MANY_TANGLES = "too-many-tangles"
    TOO_MANY_PREVIOUS = "too-many-previous"
    TOO_DEEP = "too-deep"
    NON_FINITE_FLOAT = "non-finite-float"
    EXT_TYPE = "ext-type"
    BAD_SIGNATURE = "bad-signature"
    BAD_CONTENT_HASH = "bad-content-hash"  # the header's content hash or size field
    CONTENT_MISMATCH = "content-mismatch"  # content beside a header that does not hash to it
    # Against what the store holds (storage/).
    MISSING_PREVIOUS = "missing-previous"
    CHAIN_MISMATCH = "chain-mismatch"
    FORKED_FEED = "forked-feed"
    BLOCKED_FEED = "blocked-feed"  # our node blocks its author (docs/PEERS.md, "Scope")


class TanglenodeError(Exception):
    """Root of every error tanglenode raises deliberately."""


class ProtocolError(TanglenodeError):
    """Something about bytes, messages or protocol state is wrong."""


class LocalProtocolError(ProtocolError):
    """We asked for something the protocol does not allow (our bug or our caller's)."""


class RemoteProtocolError(ProtocolError):
    """What a peer (or an input file) sent breaks the protocol."""


class InvalidMessage(RemoteProtocolError):
    """A message failed validation; `reason` says which rule, `detail` says how."""

    def __init__(self, reason: Reason, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


class BadIdentifier(LocalProtocolError):
    """A textual feed or message id could not be parsed."""
