"""The discovery ops served: `tangles` (what the store holds) and `group-list` (our groups).

Each op is one synchronous read of a `FeedStore` with our keypair
(`DISCOVERY_READS`), not a method of the server: the node runs it in a
worker thread (`StoreService.read`, by `discovery_replies`, in its table of
handlers), and `tangled tangles` and `tangled group list` run the same one
on a store of their own while the node is stopped (node/cli/discover.py),
so both paths answer alike. The reads are `FeedStore.tangle_page` and
`storage.group_list.group_page`: bounded pages whatever the store holds
(protocol/ipc_discovery.py says how).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from tanglenode.node.service import StoreService
from tanglenode.protocol.identity import Keypair
from tanglenode.protocol.ipc import MAX_GROUP_NAME, short
from tanglenode.protocol.ipc_discovery import GroupListRequest, TanglesRequest, cursor_body
from tanglenode.storage.group_list import GroupInfo, group_page
from tanglenode.storage.store import FeedStore
from tanglenode.storage.tangle_reads import TangleInfo


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


def tangles_reply(
    store: FeedStore, keypair: Keypair | None, request: TanglesRequest
) -> dict[str, Any]:
    """A page of the tangles held, each with its counts and newest time."""
    found, following = store.tangle_page(request.after, request.limit, name=request.name)
    return {"tangles": [tangle_body(info) for info in found], "next": cursor_body(following)}


def group_list_reply(
    store: FeedStore, keypair: Keypair | None, request: GroupListRequest
) -> dict[str, Any]:
    """Our groups among a page of the `group` tangles held (none without a key)."""
    if keypair is None:
        return {"groups": [], "next": None}
    found, following = group_page(store, keypair, request.after, request.limit)
    return {"groups": [group_body(info) for info in found], "next": cursor_body(following)}


# The reads, by op: one store read each, run in a worker thread by the node, directly by the CLI.
DISCOVERY_READS: dict[str, Callable[[FeedStore, Keypair | None, Any], dict[str, Any]]] = {
    "tangles": tangles_reply,
    "group-list": group_list_reply,
}


def discovery_replies(
    service: StoreService, keypair: Keypair | None
) -> dict[str, Callable[[Any], Awaitable[Any]]]:
    """The discovery ops' handlers for the IPC server's table, bound to its service and key."""

    async def serve(read, request: Any) -> dict[str, Any]:
        return await service.read(read, keypair, request)

    return {op: functools.partial(serve, read) for op, read in DISCOVERY_READS.items()}
