"""The private groups' IPC handlers (`group-create`, `-add`, `-exclude`, `-post`, `-show`,
`-timeline`): rows of `node.ipc.ops.OPS`, each `handler(area, request)`, read and written with
our key through the area's `StoreService` (storage/groups/state.py holds the rules).

An exclusion and the group's new epoch are published in one transaction
(`StoreService.publish_whole`): both are stored or neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tanglenode.protocol.ipc import (
    GroupAddRequest,
    GroupCreateRequest,
    GroupExcludeRequest,
    GroupPostRequest,
    GroupShowRequest,
    GroupTimelineRequest,
    bounded_content,
)
from tanglenode.storage.groups import state as groups

if TYPE_CHECKING:
    from tanglenode.node.ipc.area import Area


async def _group(area: Area, root: bytes) -> groups.GroupView:
    return await area.service.read(groups.read_group, area.keypair, root)


async def group_create(area: Area, request: GroupCreateRequest) -> dict[str, Any]:
    content, tangles = groups.create(area.keypair, request.name)
    message = await area.service.publish(content, tangles)
    return {"group": message.id}


async def group_add(area: Area, request: GroupAddRequest) -> dict[str, Any]:
    view = await _group(area, request.group)
    message = await area.service.publish(*groups.add(view, area.keypair, request.members))
    return {"id": message.id}


async def group_exclude(area: Area, request: GroupExcludeRequest) -> dict[str, Any]:
    """Exclude members and open a new epoch (a new key) for the others, in one
    transaction: both are stored or neither."""
    view = await _group(area, request.group)
    requests = groups.exclusion(view, area.keypair, request.members)
    excluded, epoch = await area.service.publish_whole(requests)
    await area.service.refresh_document_keys(request.group)  # our documents: the new epoch
    return {"id": excluded.id, "epoch": epoch.id}


async def group_post(area: Area, request: GroupPostRequest) -> dict[str, Any]:
    view = await _group(area, request.group)
    message = await area.service.publish(*groups.post(view, area.keypair, request.content))
    return {"id": message.id}


async def group_show(area: Area, request: GroupShowRequest) -> dict[str, Any]:
    view = await _group(area, request.group)
    final = await area.service.read(groups.final, view)
    return {**groups.describe(view), "final": final}


async def group_timeline(area: Area, request: GroupTimelineRequest) -> dict[str, Any]:
    view = await _group(area, request.group)
    rows = await area.service.read(groups.timeline, view, request.tangle, request.order)
    for row in rows:
        if "content" in row:
            row["content"] = bounded_content(row["content"])
    return {"entries": rows}
