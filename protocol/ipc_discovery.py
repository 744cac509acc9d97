"""The discovery ops' half of the IPC protocol, sans-IO: `tangles` and `group-list` requests.

Both list what a node holds a page at a time, in (root, tangle name) order:
a request names where its page starts (`after`, the `next` of the page
before: `{"root": id, "tangle": name}`, or nil for the first page) and how
many it wants (`limit`, lowered to the op's cap). `tangles` may ask for one
tangle name only (`name`). A page may hold fewer than `limit` entries while
`next` is not nil: the node looks at a bounded number of tangles per page,
so every reply costs the same whatever the store holds. Their parsers join
`protocol.ipc.PARSERS`; the handlers are `node/ipc/discovery.py`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tanglenode.protocol.ipc_fields import bad, count, message_id
from tanglenode.protocol.limits import MAX_TANGLE_NAME_BYTES, Limits

MAX_TANGLES_PAGE = 1000  # tangles per `tangles` reply: ~150 KiB
MAX_GROUPS_PAGE = 100  # `group` tangles looked at per `group-list` reply (each of ours read whole)
GROUPS_PAGE = 20  # the default `limit` of `group-list`

Cursor = tuple[bytes, str]  # (root, tangle name): a page starts after this tangle


@dataclass(frozen=True, slots=True)
class TanglesRequest:
    after: Cursor | None
    limit: int
    name: str | None  # only the tangles of this name


@dataclass(frozen=True, slots=True)
class GroupListRequest:
    after: Cursor | None
    limit: int


DiscoveryRequest = TanglesRequest | GroupListRequest


def _name(value: Any, field: str) -> str:
    if type(value) is str and 0 < len(value) <= MAX_TANGLE_NAME_BYTES:
        try:
            if len(value.encode("utf-8")) <= MAX_TANGLE_NAME_BYTES:
                return value
        except UnicodeEncodeError:  # a lone surrogate: no tangle is named so
            pass
    raise bad(f"{field} is a tangle name: text of 1 to {MAX_TANGLE_NAME_BYTES} UTF-8 bytes")


def _after(fields: dict[str, Any]) -> Cursor | None:
    """`after`: nil, or `{"root": id, "tangle": name}` as a reply's `next` gave it."""
    after = fields.get("after")
    if after is None:
        return None
    if type(after) is not dict:
        raise bad("after is nil or {root, tangle}: the next of the page before")
    return message_id(after, "root", "after.root"), _name(after.get("tangle"), "after.tangle")


def _limit(fields: dict[str, Any], default: int, maximum: int) -> int:
    limit = count(fields, "limit", default, maximum)
    if limit == 0:
        raise bad("limit is an integer of 1 or more")
    return limit


def _tangles(fields: dict[str, Any], limits: Limits) -> TanglesRequest:
    name = fields.get("name")
    name = None if name is None else _name(name, "name")
    after = _after(fields)
    return TanglesRequest(after, _limit(fields, MAX_TANGLES_PAGE, MAX_TANGLES_PAGE), name)


def _group_list(fields: dict[str, Any], limits: Limits) -> GroupListRequest:
    return GroupListRequest(_after(fields), _limit(fields, GROUPS_PAGE, MAX_GROUPS_PAGE))


DISCOVERY_PARSERS: dict[str, Callable[[dict[str, Any], Limits], DiscoveryRequest]] = {
    "tangles": _tangles,
    "group-list": _group_list,
}


def cursor_body(cursor: Cursor | None) -> dict[str, Any] | None:
    """A page's `next`, as the following request's `after` takes it."""
    return None if cursor is None else {"root": cursor[0], "tangle": cursor[1]}
