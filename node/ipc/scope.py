"""The replication scope's ops served: `follow`, `unfollow`, `block`, `unblock`, `scope`.

Each op is a handler `(area, request)`, a row of `node.ipc.ops.OPS`: the node
runs it, and `tangled follow` and the others run the same one on a store of
their own while the node is stopped (node/cli/backend.py). A contact op
publishes our contact message (protocol/contacts.py), then has the service
compute and keep the scope again (node/service/store_service.py, `refresh_scope`), so the
reply says whether the feed is carried now, and whether the node was ever
shown the feed before (`seen`, node/ipc/scope_notes.py: a follow of a feed
never seen is likely a mistyped id); the running node's sessions then ask
for what it newly carries and stop serving what it dropped.
`scope` lists what the node carries and why, as it would compute it now
from the messages it holds (the kept scope catches up at the next refresh),
and what the scope's bounds left out of whose feeds (storage/scope.py): the
largest first, at most `MAX_SCOPE_PAGE` of them on every page.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tanglenode.node.ipc.scope_notes import ever_seen
from tanglenode.protocol.contacts import contact_content
from tanglenode.protocol.ipc import message_body
from tanglenode.protocol.ipc_fields import ErrorKind, RequestError
from tanglenode.protocol.ipc_scope import (
    CONTACT_OPS,
    MAX_SCOPE_PAGE,
    ContactRequest,
    ScopeRequest,
)
from tanglenode.storage.groups.listing import group_members
from tanglenode.storage.scope import MAX_FOLLOWS_READ, MAX_SCOPE_FEEDS, Scope

if TYPE_CHECKING:
    from tanglenode.node.ipc.area import Area


async def contact(area: Area, request: ContactRequest) -> dict[str, Any]:
    service = area.service
    keypair = service.store.keypair
    if keypair is not None and request.feed == keypair.public:
        raise RequestError(ErrorKind.BAD_REQUEST, f"cannot {request.op} our own feed")
    following, blocking = CONTACT_OPS[request.op]
    seen = await ever_seen(area, request.feed)  # before our own contact names it
    content = contact_content(request.feed, following=following, blocking=blocking)
    message = await service.publish(content, None)
    await service.refresh_scope()
    return {
        "message": message_body(message),
        "carried": service.scope.carries(request.feed),
        "seen": seen,
    }


async def scope(area: Area, request: ScopeRequest) -> dict[str, Any]:
    service = area.service
    keypair = service.store.keypair or area.keypair
    if keypair is None:
        raise RequestError(ErrorKind.NO_IDENTITY, "the node has no feed of its own")
    hops = service.hops

    def compute(store) -> Scope:
        groups = None if hops is None else group_members(store, keypair)
        return store.feeds.computed_scope(keypair.public, hops, groups)

    found = await service.read(compute)
    feeds = list(found.feeds.items())
    page = feeds[request.start : request.start + request.limit]
    return {
        "hops": "all" if found.hops is None else found.hops,
        "count": len(feeds),
        "feeds": [
            {"feed": feed, "why": why.why, "hop": why.hop, "via": why.via} for feed, why in page
        ],
        "blocked": sorted(found.blocked),
        "max_feeds": MAX_SCOPE_FEEDS,
        "max_follows_read": MAX_FOLLOWS_READ,
        "left_out_count": len(found.left_out),
        "left_out": _left_out(found)[:MAX_SCOPE_PAGE],
    }


def _left_out(found: Scope) -> list[dict[str, Any]]:
    """What the bounds left out, per introducer (a feed, or a group for hop 0), the most
    first."""
    entries = sorted(found.left_out.items(), key=lambda item: (-item[1].count, item[0]))
    return [
        {
            "via": via,
            "hop": left.hop,
            "count": left.count,
            "unread": left.unread,
            "reasons": list(left.reasons),
        }
        for via, left in entries
    ]
