"""Forgetting's half of the IPC protocol, sans-IO: `delete` and `purge` requests.

`delete` takes `message`, the id of one of our own messages: the node
publishes our erase request of it (protocol/erase.py), which drops its
content here at once and on every node that processes it. `purge` takes
`messages`, at most `MAX_PURGE` ids of messages of any feed: their contents
are dropped here only (an operator's choice, never asked of peers). Their
parsers join `protocol.ipc.PARSERS`; the handlers are `node/ipc/erase.py`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tanglenode.protocol.ipc_fields import bad, message_id
from tanglenode.protocol.limits import Limits

MAX_PURGE = 1000


@dataclass(frozen=True, slots=True)
class DeleteRequest:
    message: bytes


@dataclass(frozen=True, slots=True)
class PurgeRequest:
    messages: tuple[bytes, ...]


EraseRequests = DeleteRequest | PurgeRequest


def _delete(fields: dict[str, Any], limits: Limits) -> DeleteRequest:
    return DeleteRequest(message_id(fields, "message", "message (the id to erase)"))


def _purge(fields: dict[str, Any], limits: Limits) -> PurgeRequest:
    ids = fields.get("messages")
    if not isinstance(ids, list) or not 1 <= len(ids) <= MAX_PURGE:
        raise bad(f"messages is a list of 1 to {MAX_PURGE} message ids")
    if any(type(each) is not bytes or len(each) != 32 for each in ids):
        raise bad("messages holds 32-byte message ids")
    return PurgeRequest(tuple(ids))


ERASE_PARSERS: dict[str, Callable[[dict[str, Any], Limits], EraseRequests]] = {
    "delete": _delete,
    "purge": _purge,
}
