"""The discovery ops served: `tangles` (what the store holds) and `group-list` (our groups).

Each op is a handler `(area, request)`, a row of `node.ipc.ops.OPS`, not a
method of the server: the node runs it, and `tangled tangles` and `tangled
group list` run the same one on a store of their own while the node is
stopped (node/cli/backend.py), so both paths answer alike. The reads are
`store.tangles.tangle_page` and `storage.groups.listing.group_page`, in a worker
thread: bounded pages whatever the store holds (protocol/ipc_discovery.py
says how).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tanglenode.protocol.ipc import MAX_GROUP_NAME, short
from tanglenode.protocol.ipc_discovery import GroupListRequest, TanglesRequest, cursor_body
from tanglenode.storage.groups.listing import GroupInfo, group_page
from tanglenode.storage.tangle_reads import TangleInfo

if TYPE_CHECKING:
    from tanglenode.node.ipc.area import Area


def tangle_body(info: TangleInfo) -> dict[str, Any]:
    return {
        "root": info.root,
        "tangle": info.name,
        "author": info.author,
        "messages": info.messages,
        "joined": info.joined,
        "pending": info.pending,
        "version": info.version,
        "last": info.last,
    }


def group_body(info: GroupInfo) -> dict[str, Any]:
    return {
        "group": info.group,
        "name": short(info.name, MAX_GROUP_NAME),
        "author": info.author,
        "members": info.members,
        "member": info.member,
        "epoch": info.epoch,
        "epochs": info.epochs,
        "messages": info.messages,
        "last": info.last,
    }


async def tangles(area: Area, request: TanglesRequest) -> dict[str, Any]:
    """A page of the tangles held, each with its counts and newest time."""
    after, limit, name = request.after, request.limit, request.name
    found, following = await area.service.read(
        lambda store: store.tangles.tangle_page(after, limit, name=name)
    )
    return {"tangles": [tangle_body(info) for info in found], "next": cursor_body(following)}


async def group_list(area: Area, request: GroupListRequest) -> dict[str, Any]:
    """Our groups among a page of the `group` tangles held (none without a key)."""
    if area.keypair is None:
        return {"groups": [], "next": None}
    found, following = await area.service.read(
        group_page, area.keypair, request.after, request.limit
    )
    return {"groups": [group_body(info) for info in found], "next": cursor_body(following)}
