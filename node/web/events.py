"""Server-sent events for the live pages: frames, the follow loop, the bound on streams.

Theory of operation
-------------------
A live page opens an `EventSource` on its `events` URL. Each frame carries
`id:` = the version it brings the page to, so when the connection drops the
browser reconnects by itself with `Last-Event-ID`, and the stream resumes
after that version: nothing is missed and nothing is sent twice. The stream
pulls from the store's logs a page at a time (`next_page`), waiting for the
store to change between pages, so a slow browser holds one page in memory,
never a queue; it pays with its own pace, not the node's. That page counts
against the bytes every subscriber shares (node/ipc/queue_budget.py): when the
others hold them all, the stream waits for room before it reads on. A comment line
every `HEARTBEAT` seconds keeps idle connections (and proxies) awake and
finds browsers that left. At most `MAX_STREAMS` streams are open at once;
one more is refused with 503, and the page's script tries again
a little later (an `EventSource` gives up on a reply that is no stream).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from typing import Any

import structlog
import trio

from tanglenode.node.ipc.queue_budget import DEFAULT_QUEUE_BYTES, DEFAULT_STREAM_BYTES, QueueBudget
from tanglenode.node.web.http import EVENT_HEADERS, Response, WebContext, text_response
from tanglenode.protocol.errors import TanglenodeError

log = structlog.get_logger("web")

MAX_STREAMS = 32
HEARTBEAT = 15.0  # seconds
RETRY_MS = 1000  # how soon a browser reconnects

NextPage = Callable[[int], Awaitable[tuple[list[bytes], int] | None]]
"""Frames after a position and the position they reach, or None while nothing is new."""
Wake = Callable[[], Callable[[], Awaitable[None]]]
"""Called before a page is read: what to await for a change, beside the store's, after it
(a document's presence, node/gossip/presence.py)."""


def frame(event: str, data: Any, version: int | None = None) -> bytes:
    """One event: `data` as JSON on one line (ASCII, so no line breaks inside)."""
    head = f"id: {version}\n" if version is not None else ""
    body = json.dumps(data, ensure_ascii=True, separators=(",", ":"))
    return f"{head}event: {event}\ndata: {body}\n\n".encode("ascii")


def resume_version(last_event_id: str | None, since: str | None) -> int | None:
    """Where a stream resumes: the browser's `Last-Event-ID`, else `?since=`; None if neither
    is a version."""
    for text in (last_event_id, since):
        if text is not None and text.isascii() and text.isdigit() and len(text) <= 18:
            return int(text)
    return None


class Streams:
    """The count of open event streams, bounded; and the bytes they hold, within the budget
    IPC subscribers share (node/ipc/queue_budget.py)."""

    def __init__(self, limit: int = MAX_STREAMS, queues: QueueBudget | None = None) -> None:
        self.limit = limit
        self.queues = queues or QueueBudget(DEFAULT_QUEUE_BYTES, DEFAULT_STREAM_BYTES)
        self.open = 0
        self.refused = 0  # since the node started


def event_stream(
    web: WebContext, first: list[bytes], start: int, next_page: NextPage, wake: Wake | None = None
) -> Response:
    """A response that sends `first`, then the pages of `next_page` from `start`, live (read
    again when the store changes, or what `wake` gives wakes)."""
    streams: Streams = web.streams
    if streams.open >= streams.limit:
        streams.refused += 1
        return text_response(f"at most {streams.limit} live views at once; retrying\n", 503)
    streams.open += 1
    stream = _follow(web, streams, first, start, next_page, wake)
    return Response(200, EVENT_HEADERS, stream=stream)


async def _follow(
    web: WebContext,
    streams: Streams,
    first: list[bytes],
    position: int,
    next_page: NextPage,
    wake: Wake | None = None,
) -> AsyncIterator[bytes]:
    share = streams.queues.share()
    try:
        yield f"retry: {RETRY_MS}\n\n".encode() + b"".join(first)
        del first
        service = web.service
        while True:
            seen = service.version
            also = wake() if wake is not None else None
            try:
                page = await next_page(position)
            except TanglenodeError as error:  # refused on the way (a document gone): say so
                yield frame("failed", {"message": str(error)[:500]})
                return
            except Exception:  # a bug of ours: this stream ends, said so; the node serves on
                log.exception("web stream failed")
                yield frame("failed", {"message": "internal error (see the node's log)"})
                return
            if page is not None:
                frames, position = page
                data = b"".join(frames)
                del frames, page
                while not share.take(len(data)):  # everyone's bytes are queued: wait for room
                    with trio.move_on_after(HEARTBEAT) as idle:
                        await share.wait_for_room()
                    if idle.cancelled_caught:
                        yield b": idle\n\n"
                try:
                    yield data  # the bytes are held until the server has taken them
                finally:
                    share.give(len(data))
                    del data
                continue
            with trio.move_on_after(HEARTBEAT) as idle:
                if also is None:
                    await service.wait_changed(seen)
                else:
                    await _either(partial(service.wait_changed, seen), also)
            if idle.cancelled_caught:
                yield b": idle\n\n"
    finally:
        share.__exit__()
        streams.open -= 1


async def _either(*waits: Callable[[], Awaitable[None]]) -> None:
    """Return once any of `waits` returns."""
    async with trio.open_nursery() as nursery:

        async def one(wait: Callable[[], Awaitable[None]]) -> None:
            await wait()
            nursery.cancel_scope.cancel()

        for wait in waits:
            nursery.start_soon(one, wait)
