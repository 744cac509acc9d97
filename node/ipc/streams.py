"""The ops whose events follow the reply: `subscribe` (a timeline, from a version or
a snapshot, then live), `watch-processed` (the processed order) and `doc-watch` (a
document's text as splices). Each is `handler(server, stream, id, request)`: it
sends the reply and any snapshot, then hands `IpcServer.follow` the function that
reads the next page (node/ipc/server.py has the queue, the budget and `lagged`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tanglenode.node.ipc.docs import DocWatch
from tanglenode.node.ipc.messages import command_wire, timeline_name_of
from tanglenode.protocol.doc_ipc import DocWatchRequest
from tanglenode.protocol.ipc import (
    PAGE,
    PAGE_BYTES,
    SubscribeRequest,
    WatchProcessedRequest,
    processed_entry,
)
from tanglenode.storage.errors import UnknownTimeline

if TYPE_CHECKING:
    from tanglenode.node.ipc.server import IpcServer


async def subscribe(server: IpcServer, stream, number, request: SubscribeRequest) -> None:
    """Stream a timeline from version `since` (or a snapshot), then live; see module doc."""
    name = timeline_name_of(request.timeline)
    since = request.since
    try:
        version, entries = await server.service.read(
            lambda store: store.timelines.timeline_at(name)
        )
    except UnknownTimeline:  # a tangle not seen yet is empty at version 0
        version, entries = 0, []
    floor = await server.service.read(lambda store: store.timelines.timeline_floor(name))
    if since is not None and floor <= since <= version:
        await server.send(stream, {"id": number, "ok": {"version": since, "snapshot": False}})
    else:  # no version, one it never had, or one below its log's floor: a snapshot
        since = version
        await server.send(stream, {"id": number, "ok": {"version": since, "snapshot": True}})
        for start in range(0, len(entries), PAGE):
            page = [[rank, msg_id] for rank, msg_id in entries[start : start + PAGE]]
            await server.send(stream, {"id": number, "event": {"snapshot": page, "start": start}})
    del entries

    # the finality watermark counts rank-order positions: not sent for causal-time
    spacetime = request.timeline.root is None and request.timeline.order == "rank"

    async def next_page(version: int) -> tuple[list[dict[str, Any]], int, bool] | None:
        head, updates = await server.service.read(
            lambda store: store.timelines.timeline_updates(name, version, PAGE, PAGE_BYTES)
        )
        if not updates:
            return None
        commands = [
            command_wire(command, v, message)
            for v, (command, message) in enumerate(updates, start=version + 1)
        ]
        event: dict[str, Any] = {"commands": commands}
        if spacetime:
            event["final"] = await server.service.read(
                lambda store: store.timelines.spacetime_final()
            )
        return [event], commands[-1]["v"], commands[-1]["v"] >= head

    await server.follow(stream, number, since, next_page)


async def watch_processed(
    server: IpcServer, stream, number, request: WatchProcessedRequest
) -> None:
    """Stream the processed order from index `start`: each message with its index."""
    await server.send(stream, {"id": number, "ok": {"start": request.start}})

    async def next_page(index: int) -> tuple[list[dict[str, Any]], int] | None:
        page = await server.service.read(
            lambda store: store.feeds.processed_page(index, PAGE, PAGE_BYTES)
        )
        if not page:
            return None
        entries = [processed_entry(position, message) for position, message in page]
        return [{"processed": entries}], page[-1][0] + 1

    await server.follow(stream, number, request.start, next_page)


async def doc_watch(server: IpcServer, stream, number, request: DocWatchRequest) -> None:
    """Stream a document's text from version `since` (or a snapshot) as splices, live;
    `node.ipc.docs.DocWatch` makes the pages."""
    watch = DocWatch(server.service, request.doc)
    started, snapshot = await watch.start(request.since)
    await server.send(stream, {"id": number, "ok": started})
    for event in snapshot:
        await server.send(stream, {"id": number, "event": event})
    del snapshot
    await server.follow(stream, number, started["version"], watch.next_page)
