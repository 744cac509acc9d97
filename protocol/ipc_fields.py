"""What every IPC op's parser shares: the error kinds, the refusal, and the common field checks.

`protocol/ipc.py` (the ops on messages, timelines, peers and groups) and
`protocol/doc_ipc.py` (the document ops) both build on this module, which
imports neither of them; `protocol.ipc` re-exports `ErrorKind` and
`RequestError`, the names clients know them by.
"""

from __future__ import annotations

import enum
from typing import Any, overload

from tanglenode.protocol.errors import TanglenodeError
from tanglenode.protocol.limits import MAX_SEQ

PAGE = 1000  # the default `limit`: timeline commands, processed entries or versions per page
MAX_TEXT = 300  # an address, last error or detail as shown


class ErrorKind(enum.StrEnum):
    """The `kind` of an error reply: stable codes (docs/IPC.md, "Error kinds")."""

    BAD_FRAME = "bad-frame"
    BAD_REQUEST = "bad-request"
    UNKNOWN_OP = "unknown-op"
    NOT_FOUND = "not-found"
    INVALID_MESSAGE = "invalid-message"
    UNKNOWN_TANGLE = "unknown-tangle"
    GROUP = "group"
    CONFLICT = "conflict"
    SEALED = "sealed"
    OWN_FEED_FORKED = "own-feed-forked"
    OWN_FEED_BEHIND = "own-feed-behind"
    STORE_FULL = "store-full"
    NO_IDENTITY = "no-identity"
    VIEW_OFF = "view-off"
    REFUSED = "refused"
    REPLY_TOO_LARGE = "reply-too-large"
    INTERNAL = "internal"
    # Raised by the client library itself; the node never sends these.
    DISCONNECTED = "disconnected"
    PROTOCOL = "protocol"
    STREAMING = "streaming"  # a request on a connection that carries a stream


class RequestError(TanglenodeError):
    """A request the node refuses: `kind` for clients, `reason` a message's reason code."""

    def __init__(self, kind: ErrorKind, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.reason = reason


@overload
def short(text: str, limit: int = MAX_TEXT) -> str: ...
@overload
def short(text: None, limit: int = MAX_TEXT) -> None: ...
def short(text: str | None, limit: int = MAX_TEXT) -> str | None:
    """`text` cut to `limit` characters, marked with "..." where it was cut."""
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 3] + "..."


def bad(message: str) -> RequestError:
    """The refusal of a field: `bad-request`, naming the field in `message`."""
    return RequestError(ErrorKind.BAD_REQUEST, message)


def count(fields: dict[str, Any], key: str, default: int, maximum: int = MAX_SEQ) -> int:
    """A non-negative integer field; values over `maximum` are lowered to it."""
    value = fields.get(key, default)
    if value is None:
        value = default
    if type(value) is not int or value < 0:
        raise bad(f"{key} is an integer of 0 or more")
    return min(value, maximum)


def message_id(fields: dict[str, Any], key: str, what: str) -> bytes:
    """A 32-byte id field; `what` names it in the refusal."""
    value = fields.get(key)
    if type(value) is not bytes or len(value) != 32:
        raise bad(f"{what} is a 32-byte id")
    return value
