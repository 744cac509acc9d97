"""The replication scope's half of the IPC protocol, sans-IO: `follow`, `unfollow`,
`block`, `unblock` and `scope` requests.

The first four publish a contact message of ours about one feed
(protocol/contacts.py) and make the node carry, or stop carrying, what it
then reaches; each takes `feed`, the 32-byte feed key, and none may name
our own feed. `scope` lists what the node carries and why, a page at a
time (`start`, `limit`: at most `MAX_SCOPE_PAGE`). Their parsers join
`protocol.ipc.PARSERS`; the handlers are `node/ipc/scope.py`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tanglenode.protocol.contacts import BLOCK, FOLLOW, UNBLOCK, UNFOLLOW
from tanglenode.protocol.ipc_fields import count, message_id
from tanglenode.protocol.limits import Limits

# What each op publishes: (following, blocking), None leaving a flag out.
CONTACT_OPS: dict[str, tuple[bool | None, bool | None]] = {
    "follow": FOLLOW,
    "unfollow": UNFOLLOW,
    "block": BLOCK,
    "unblock": UNBLOCK,
}


@dataclass(frozen=True, slots=True)
class ContactRequest:
    op: str  # one of CONTACT_OPS
    feed: bytes


MAX_SCOPE_PAGE = 2_000  # feeds a `scope` reply lists at most (~200 KiB)


@dataclass(frozen=True, slots=True)
class ScopeRequest:
    start: int = 0  # the page starts at this feed of the list
    limit: int = MAX_SCOPE_PAGE


ScopeRequests = ContactRequest | ScopeRequest


def _contact(op: str) -> Callable[[dict[str, Any], Limits], ContactRequest]:
    def parse(fields: dict[str, Any], limits: Limits) -> ContactRequest:
        return ContactRequest(op, message_id(fields, "feed", "feed (a 32-byte feed key)"))

    return parse


def _scope(fields: dict[str, Any], limits: Limits) -> ScopeRequest:
    limit = count(fields, "limit", MAX_SCOPE_PAGE, MAX_SCOPE_PAGE)
    return ScopeRequest(count(fields, "start", 0), limit)


SCOPE_PARSERS: dict[str, Callable[[dict[str, Any], Limits], ScopeRequests]] = {
    **{op: _contact(op) for op in CONTACT_OPS},
    "scope": _scope,
}
