"""The messages' and timelines' ops served: `publish`, `get`, `timeline`, `placement`,
`commands`; each a handler `(area, request)`, a row of `node.ipc.ops.OPS`. Also how a
request's timeline is named in the store and how a stored command goes on the wire,
which the `subscribe` stream (node/ipc/streams.py) shares."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tanglenode.node.ipc.scope_notes import unknown_tangle
from tanglenode.protocol.ipc import (
    CommandsRequest,
    ErrorKind,
    GetRequest,
    PlacementRequest,
    PublishRequest,
    RequestError,
    TimelineRef,
    TimelineRequest,
    delete_command,
    digest_body,
    insert_command,
    message_body,
    move_command,
)
from tanglenode.protocol.message import Message
from tanglenode.storage.engine.timeline import Command, Delete, Insert
from tanglenode.storage.errors import UnknownTangle
from tanglenode.storage.views.timelines import timeline_name

if TYPE_CHECKING:
    from tanglenode.node.ipc.area import Area


def timeline_name_of(timeline: TimelineRef) -> bytes:
    return timeline_name(timeline.root, timeline.tangle, timeline.view, timeline.order)


def command_wire(
    command: Command, version: int | None = None, message: Message | None = None
) -> dict[str, Any]:
    """A stored timeline command as the wire has it (`protocol.ipc`)."""
    if isinstance(command, Insert):
        return insert_command(command.pos, command.id, message, version)
    if isinstance(command, Delete):
        return delete_command(command.pos, version)
    return move_command(command.src, command.dst, version)


async def publish(area: Area, request: PublishRequest) -> dict[str, Any]:
    try:
        message = await area.service.publish(request.content, request.tangles)
    except UnknownTangle as error:  # say what the store knows of the root's author
        raise await unknown_tangle(area, error) from None
    return message_body(message)


async def get(area: Area, request: GetRequest) -> dict[str, Any]:
    def look(store):
        return store.feeds.get(request.message), store.feeds.erased_by(request.message)

    message, erased = await area.service.read(look)
    if message is None:
        raise RequestError(ErrorKind.NOT_FOUND, "no such message")
    body = message_body(message)
    if erased:  # its author's erase request
        body["erased_by"] = erased
    elif erased is not None:  # this node's operator purged it
        body["purged"] = True
    return body


async def timeline(area: Area, request: TimelineRequest) -> dict[str, Any]:
    name = timeline_name_of(request.timeline)
    if request.digest:  # storage/views/digest.py: on demand, cached by version
        found = await area.service.read(lambda store: store.digests.timeline_digest(name))
        return digest_body(found.version, found.count, found.digest)
    window = request.window
    if window is not None:  # the causal-time window, from the time index
        low, high, start, limit = window.from_time, window.to_time, request.start, request.limit
        version, first, entries = await area.service.read(
            lambda store: store.timelines.timeline_window(
                name, low, high, window.mode, start, limit
            )
        )
        return {
            "version": version,
            "start": first,
            "entries": [[time, msg_id] for time, msg_id in entries],
        }
    stop = request.start + request.limit
    version, entries = await area.service.read(
        lambda store: store.timelines.timeline_at(name, request.start, stop, states=True)
    )
    return {"version": version, "entries": [list(entry) for entry in entries]}


async def placement(area: Area, request: PlacementRequest) -> dict[str, Any]:
    """A message's position and rank in a timeline; in a tangle's, its state too."""
    name = timeline_name_of(request.timeline)
    found = await area.service.read(
        lambda store: store.timelines.timeline_member(name, request.message)
    )
    if found is None:
        raise RequestError(ErrorKind.NOT_FOUND, "the message is not in that timeline")
    placement, state = found
    reply = {"position": placement.position, "rank": placement.rank}
    if placement.time is not None:  # causal-time order: the claimed time it sorts by
        reply["time"] = placement.time
    return reply | (state.fields() if state is not None else {})


async def commands(area: Area, request: CommandsRequest) -> dict[str, Any]:
    """Up to `limit` commands after version `since` (no message bodies); `not-found`
    (`BelowLogFloor`) when the log no longer holds the command after `since`."""
    name = timeline_name_of(request.timeline)
    version, commands = await area.service.read(
        lambda store: store.timelines.timeline_log(name, request.since, request.limit)
    )
    return {"version": version, "commands": [command_wire(command) for command in commands]}
