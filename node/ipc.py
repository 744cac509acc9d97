"""The local IPC server: length-prefixed msgpack requests over a Unix socket (mode 0600).

Theory of operation
-------------------
A client sends frames `{"op": NAME, "id": N, ...arguments}`; each gets one
reply `{"id": N, "ok": {...}}` or `{"id": N, "error": {"kind", "message"}}`
(protocol in `docs/IPC.md`). Requests on one connection are served in
order. `subscribe`, `watch-processed` and `doc-watch` turn the connection
into a stream: after the first reply, frames `{"id": N, "event": ...}`
follow until the client hangs up.

The protocol half is `protocol/ipc.py` (sans-IO: request shapes and their
checks, reply and event bodies, `ErrorKind`). This module holds `OPS`, the
one table of ops (name -> `Op`: its handler, and where it can run), moves
frames, dispatches each checked request through that table, and maps the
errors an operation raises to an `ErrorKind` in one place (`ERROR_KINDS`).

A handler is `handler(area, request)`: the `Area` it works on (the store
through `StoreService`, our keypair, and in the daemon the running node's
peers) and the checked request; it returns the reply's value. The
messages' and timelines' handlers are `Area`'s methods; the groups' are
`node/ipc_groups.py`'s, the document ops' are `node/doc_ipc.py`'s (with `doc-watch`'s pages), the
listings' `node/ipc_discovery.py`'s, the node's and its peers' (`status`,
`peers`, `clock`, `connect`, `disconnect`) `node/ipc_peers.py`'s. `run_op`
runs one request through that table: its checks, its handler, and its
failure as an `OpError` (the kind, the text, the reason code); it returns the
reply's value (`OpReply`) or that error, and is the only place a request is
served. `answer` encodes its result as a reply frame: the socket sends it,
and the CLI reads the same frame from a store it opened itself while the
node is stopped (node/cli/backend.py); the web view's writes take the result
as it is, with no frame between (node/web/actions.py). So all three answer
alike, errors included.

A timeline subscription reads the timeline's command log from the version
the client names, then waits for the store to change and reads on. The log
is the backlog: a subscriber holds at most `queue_frames` pages in memory,
as encoded frames, and at most `subscribers.stream_bytes` of them, all
subscribers together (the web view's too) at most `subscribers.queue_bytes`
(node/queue_budget.py); a client that reconnects with its last version
misses nothing. When a page does not fit, the client has stopped keeping
up (or too many others have): after the queued
pages it gets `{"lagged": version}` (the version it reached) and the
connection closes; it resumes with `since=version`. A socket that stays
unwritable for `send_seconds` is closed outright. The log holds only the
commands after its floor (its retention drops the oldest as it grows,
storage/engine/command_log.py): a subscriber whose next command is below it
has fallen behind too, and gets the same `lagged`; resuming from there, it
starts from a snapshot, as any `since` below the floor does.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog
import trio

from tanglenode.node import (
    doc_ipc,
    ipc_discovery,
    ipc_erase,
    ipc_groups,
    ipc_invites,
    ipc_peers,
    ipc_resolve,
    ipc_scope,
)
from tanglenode.node.doc_ipc import DocWatch
from tanglenode.node.failures import only
from tanglenode.node.ipc_peers import RunningNode
from tanglenode.node.once_replies import OnceReplies
from tanglenode.node.queue_budget import (
    DEFAULT_QUEUE_BYTES,
    DEFAULT_STREAM_BYTES,
    QueueBudget,
    Share,
)
from tanglenode.node.scope_notes import unknown_tangle
from tanglenode.node.service import StoreService
from tanglenode.protocol.address import BadAddress
from tanglenode.protocol.doc_ipc import DocWatchRequest
from tanglenode.protocol.document import DocumentError
from tanglenode.protocol.errors import BadIdentifier, InvalidMessage, TanglenodeError
from tanglenode.protocol.framing import MAX_IPC_FRAME as MAX_FRAME
from tanglenode.protocol.framing import FrameDecoder, FrameError, encode_frame
from tanglenode.protocol.identity import Keypair
from tanglenode.protocol.ipc import (
    MAX_ERROR_TEXT,
    PAGE,
    PAGE_BYTES,
    CommandsRequest,
    ErrorKind,
    GetRequest,
    PlacementRequest,
    PublishRequest,
    RequestError,
    SubscribeRequest,
    TimelineRef,
    TimelineRequest,
    WatchProcessedRequest,
    delete_command,
    digest_body,
    insert_command,
    message_body,
    move_command,
    once_key,
    parse_request,
    processed_entry,
    request_header,
    short,
)
from tanglenode.protocol.ipc import error_reply as encode_error
from tanglenode.protocol.message import Message, UnpublishableMessage
from tanglenode.storage.engine.causal_window import WindowTooLarge
from tanglenode.storage.engine.timeline import Command, Delete, Insert
from tanglenode.storage.errors import (
    BadSplice,
    BelowLogFloor,
    NoIdentity,
    NotInGroup,
    OwnFeedBehind,
    OwnFeedForked,
    SealedDocument,
    StoreFull,
    UnknownDocument,
    UnknownTangle,
    UnknownTimeline,
    VersionConflict,
    ViewOff,
)
from tanglenode.storage.groups import state as groups
from tanglenode.storage.views.timelines import timeline_name

if TYPE_CHECKING:
    from tanglenode.node.network import Network
    from tanglenode.node.peers import PeerRegistry

__all__ = [
    "ERROR_KINDS",
    "MAX_FRAME",
    "OPS",
    "Area",
    "IpcServer",
    "Op",
    "OpError",
    "OpReply",
    "answer",
    "error_kind",
    "error_reply",
    "run_op",
]

log = structlog.get_logger("ipc")

# The error kind a client sees, by the error class an operation raised (first
# match wins; anything else is `internal`). Stable codes, never class names.
ERROR_KINDS: tuple[tuple[type[BaseException], ErrorKind], ...] = (
    (InvalidMessage, ErrorKind.INVALID_MESSAGE),
    (UnpublishableMessage, ErrorKind.INVALID_MESSAGE),
    (UnknownTangle, ErrorKind.UNKNOWN_TANGLE),
    (UnknownTimeline, ErrorKind.NOT_FOUND),
    (ViewOff, ErrorKind.VIEW_OFF),
    (BelowLogFloor, ErrorKind.NOT_FOUND),  # the commands asked for are no longer logged
    (WindowTooLarge, ErrorKind.BAD_REQUEST),
    (SealedDocument, ErrorKind.SEALED),
    (UnknownDocument, ErrorKind.NOT_FOUND),
    (NotInGroup, ErrorKind.GROUP),
    (BadSplice, ErrorKind.BAD_REQUEST),
    (VersionConflict, ErrorKind.CONFLICT),
    (DocumentError, ErrorKind.BAD_REQUEST),
    (groups.UnknownGroup, ErrorKind.NOT_FOUND),
    (groups.GroupError, ErrorKind.GROUP),
    (OwnFeedForked, ErrorKind.OWN_FEED_FORKED),
    (OwnFeedBehind, ErrorKind.OWN_FEED_BEHIND),
    (StoreFull, ErrorKind.STORE_FULL),
    (NoIdentity, ErrorKind.NO_IDENTITY),
    (BadAddress, ErrorKind.BAD_REQUEST),
    (BadIdentifier, ErrorKind.BAD_REQUEST),
    (TanglenodeError, ErrorKind.REFUSED),
)


def error_kind(error: BaseException) -> ErrorKind:
    """The stable kind a client sees for `error`."""
    if isinstance(error, RequestError):
        return error.kind
    return next((kind for cls, kind in ERROR_KINDS if isinstance(error, cls)), ErrorKind.INTERNAL)


def error_reply(number: Any, error: BaseException) -> dict[str, Any]:
    """The error reply for `error`: its kind, its text, a reason code, the feed it names."""
    return OpError.of(error).reply(number)


def _timeline_name(timeline: TimelineRef) -> bytes:
    return timeline_name(timeline.root, timeline.tangle, timeline.view, timeline.order)


def _command_wire(
    command: Command, version: int | None = None, message: Message | None = None
) -> dict[str, Any]:
    """A stored timeline command as the wire has it (`protocol.ipc`)."""
    if isinstance(command, Insert):
        return insert_command(command.pos, command.id, message, version)
    if isinstance(command, Delete):
        return delete_command(command.pos, version)
    return move_command(command.src, command.dst, version)


@dataclass
class Area:
    """What an op's handler works on: the store through `service`, our `keypair`, and
    `node`, what only the running node has (its peers and network; None where the CLI
    opened the store itself). The handlers of the messages and timelines are methods
    here; `OPS` lists every op's."""

    service: StoreService
    keypair: Keypair | None
    node: RunningNode | None = None
    once: OnceReplies | None = None  # the running node's: writes sent again done once

    # -- messages and timelines ------------------------------------------------------

    async def _publish(self, request: PublishRequest) -> dict[str, Any]:
        try:
            message = await self.service.publish(request.content, request.tangles)
        except UnknownTangle as error:  # say what the store knows of the root's author
            raise await unknown_tangle(self, error) from None
        return message_body(message)

    async def _get(self, request: GetRequest) -> dict[str, Any]:
        def look(store):
            return store.feeds.get(request.message), store.feeds.erased_by(request.message)

        message, erased = await self.service.read(look)
        if message is None:
            raise RequestError(ErrorKind.NOT_FOUND, "no such message")
        body = message_body(message)
        if erased:  # its author's erase request
            body["erased_by"] = erased
        elif erased is not None:  # this node's operator purged it
            body["purged"] = True
        return body

    async def _timeline(self, request: TimelineRequest) -> dict[str, Any]:
        name = _timeline_name(request.timeline)
        if request.digest:  # storage/views/digest.py: on demand, cached by version
            found = await self.service.read(lambda store: store.digests.timeline_digest(name))
            return digest_body(found.version, found.count, found.digest)
        window = request.window
        if window is not None:  # the causal-time window, from the time index
            low, high, start, limit = window.from_time, window.to_time, request.start, request.limit
            version, first, entries = await self.service.read(
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
        version, entries = await self.service.read(
            lambda store: store.timelines.timeline_at(name, request.start, stop, states=True)
        )
        return {"version": version, "entries": [list(entry) for entry in entries]}

    async def _placement(self, request: PlacementRequest) -> dict[str, Any]:
        """A message's position and rank in a timeline; in a tangle's, its state too."""
        name = _timeline_name(request.timeline)
        found = await self.service.read(
            lambda store: store.timelines.timeline_member(name, request.message)
        )
        if found is None:
            raise RequestError(ErrorKind.NOT_FOUND, "the message is not in that timeline")
        placement, state = found
        reply = {"position": placement.position, "rank": placement.rank}
        if placement.time is not None:  # causal-time order: the claimed time it sorts by
            reply["time"] = placement.time
        return reply | (state.fields() if state is not None else {})

    async def _commands(self, request: CommandsRequest) -> dict[str, Any]:
        """Up to `limit` commands after version `since` (no message bodies); `not-found`
        (`BelowLogFloor`) when the log no longer holds the command after `since`."""
        name = _timeline_name(request.timeline)
        version, commands = await self.service.read(
            lambda store: store.timelines.timeline_log(name, request.since, request.limit)
        )
        return {"version": version, "commands": [_command_wire(command) for command in commands]}


def _once_of(op: str, frame: dict[str, Any]) -> str | None:
    """The request's `once` key (node/once_replies.py), for an op that writes only."""
    once = once_key(frame)
    if once is not None and not OPS[op].writes:
        raise RequestError(ErrorKind.BAD_REQUEST, f"once is for writes; {op} writes nothing")
    return once


@dataclass(frozen=True)
class OpReply:
    """An op's reply value, as its handler returned it (ids as bytes, tuples unencoded)."""

    value: Any


@dataclass(frozen=True)
class OpError:
    """An op's refusal, typed: what its error reply carries (docs/IPC.md, "Error kinds")."""

    kind: ErrorKind
    message: str  # cut to the error text's cap, as the socket sends it
    reason: str | None = None  # a message's reason code
    feed: bytes | None = None  # the feed the error is about, where it names one

    @classmethod
    def of(cls, error: BaseException) -> OpError:
        reason, feed = getattr(error, "reason", None), getattr(error, "feed", None)
        return cls(error_kind(error), short(str(error), MAX_ERROR_TEXT) or "", reason, feed)

    def reply(self, number: Any) -> dict[str, Any]:
        """The error reply to request `number`."""
        return encode_error(number, self.kind, self.message, self.reason, self.feed)


async def run_op(area: Area, op: str, frame: Any) -> OpReply | OpError:
    """Request `frame` of an op with one reply, run: checked (`parse_request`, `once`),
    handled (`OPS[op].handler` on `area`), its failure typed (`ERROR_KINDS`).

    The one path wherever a request is served: `answer` encodes its result for
    the socket (and the CLI's store opened here, node/cli/backend.py); the web
    view's writes take it as it is (node/web/actions.py), never encoded.
    """
    try:
        request = parse_request(op, frame, area.service.store.limits)
        once = _once_of(op, frame)
        if op.startswith("doc-"):  # read the documents whole, every key at hand
            await area.service.weave_backlog()
            await area.service.read_keys_if_stale()
        handler = OPS[op].handler
        if once is None or area.once is None:
            return OpReply(await handler(area, request))
        return OpReply(await area.once.run(op, once, partial(handler, area, request)))
    except TanglenodeError as error:
        return OpError.of(error)
    except Exception as error:  # a bug of ours: the client gets a reply, the node serves on
        log.exception("ipc request failed", op=short(op, 64))
        return OpError.of(error)


async def answer(area: Area, number: Any, op: str, frame: Any) -> bytes:
    """The reply frame to request `frame` (`number`, `op`) of an op with one reply: `run_op`'s
    result, encoded as the socket carries it.

    The IPC server sends it; the CLI decodes it from a store it opened itself
    (node/cli/backend.py): one path for the checks, the handler, the errors'
    kinds and the reply's encoding, wherever the request is served.
    """
    result = await run_op(area, op, frame)
    if isinstance(result, OpError):
        reply = result.reply(number)
    else:
        reply = {"id": number, "ok": result.value}
    try:
        return encode_frame(reply, MAX_FRAME)
    except (TanglenodeError, ValueError, TypeError, OverflowError) as error:
        # Every reply is bounded by design; this is the net under that.
        log.warning("ipc reply not sent", op=op, error=short(str(error)))
        too_large = RequestError(ErrorKind.REPLY_TOO_LARGE, short(str(error)) or "")
        return encode_frame(error_reply(number, too_large))


@dataclass
class IpcServer:
    service: StoreService
    registry: PeerRegistry
    network: Network
    keypair: Keypair
    status_extra: dict[str, Any] = field(default_factory=dict)
    config_file: Path | None = None  # where `connect` with `save` adds peers
    queue_frames: int = 64
    queues: QueueBudget = field(  # bytes queued to every subscriber (node/queue_budget.py)
        default_factory=lambda: QueueBudget(DEFAULT_QUEUE_BYTES, DEFAULT_STREAM_BYTES)
    )
    max_clients: int = 256  # connections at once (node/descriptors.py); more are closed
    send_seconds: float = 10.0
    streams_open: int = field(init=False, default=0)  # subscribers of any stream op, now
    clients: int = field(init=False, default=0)  # connected now
    area: Area = field(init=False, repr=False)  # what the handlers work on

    def __post_init__(self) -> None:
        running = RunningNode(
            self.registry, self.network, self.status_extra, config_file=self.config_file
        )
        self.area = Area(self.service, self.keypair, running, OnceReplies())

    async def serve(self, path: Path, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_socket():
            path.unlink()  # left by a node that died; we hold the data directory's lock now
        sock = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
        old_umask = os.umask(0o177)
        try:
            await sock.bind(str(path))
        finally:
            os.umask(old_umask)
        os.chmod(path, 0o600)
        sock.listen(64)
        listener = trio.SocketListener(sock)
        try:
            async with trio.open_nursery() as nursery:
                assert self.area.node is not None
                self.area.node.dialers = nursery  # where `connect`'s dialers run
                task_status.started(path)
                await trio.serve_listeners(self._client, [listener])
        finally:
            path.unlink(missing_ok=True)

    async def _client(self, stream: trio.SocketStream) -> None:
        if self.clients >= self.max_clients:  # told why, in one frame, then closed
            busy = RequestError(
                ErrorKind.REFUSED, f"the node serves {self.max_clients} IPC clients at once"
            )
            with trio.move_on_after(REFUSAL_SECONDS), contextlib.suppress(*_GONE, OSError):
                await stream.send_all(encode_frame(error_reply(None, busy), MAX_FRAME))
            await trio.aclose_forcefully(stream)
            return
        self.clients += 1
        try:
            await self._serve_client(stream)
        finally:
            self.clients -= 1

    async def _serve_client(self, stream: trio.SocketStream) -> None:
        decoder = FrameDecoder(MAX_FRAME)
        try:
            while True:
                data = await stream.receive_some(65536)
                if not data:
                    return
                decoder.receive_data(data)
                while (request := decoder.next_frame()) is not None:
                    await self._serve_one(stream, request)
        except FrameError as error:
            bad_frame = RequestError(ErrorKind.BAD_FRAME, str(error))
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, _Lagged):
                await self._send(stream, error_reply(None, bad_frame))
        except Exception as error:
            if not only(error, (trio.BrokenResourceError, trio.ClosedResourceError, _Lagged)):
                # A bug of ours: this client is dropped, the node serves the others.
                log.exception("ipc client failed")
        finally:
            await stream.aclose()

    async def _send(self, stream, reply: dict[str, Any]) -> None:
        await self._send_frame(stream, encode_frame(reply, MAX_FRAME))

    async def _send_frame(self, stream, frame: bytes) -> None:
        with trio.move_on_after(self.send_seconds) as scope:
            await stream.send_all(frame)
        if scope.cancelled_caught:
            raise _Lagged

    async def _serve_one(self, stream, frame: Any) -> None:
        try:
            number, op = request_header(frame)
        except RequestError as error:
            await self._send(stream, error_reply(None, error))
            return
        row = OPS.get(op)
        if row is None or not row.stream:
            await self._send_frame(stream, await answer(self.area, number, op, frame))
            return
        try:
            request = parse_request(op, frame, self.service.store.limits)
            _once_of(op, frame)  # refused: a stream writes nothing
            self.streams_open += 1
            try:
                await row.handler(self, stream, number, request)
            finally:
                self.streams_open -= 1
            return
        except (_Lagged, trio.BrokenResourceError, trio.ClosedResourceError):
            raise
        except TanglenodeError as error:
            reply = error_reply(number, error)
        except Exception as error:  # a bug of ours: the client gets a reply, the node serves on
            log.exception("ipc request failed", op=short(op, 64))
            reply = error_reply(number, error)
        await self._send(stream, reply)

    # -- streams ------------------------------------------------------------------------

    async def _subscribe(self, stream, number, request: SubscribeRequest) -> None:
        """Stream a timeline from version `since` (or a snapshot), then live; see module doc."""
        name = _timeline_name(request.timeline)
        since = request.since
        try:
            version, entries = await self.service.read(
                lambda store: store.timelines.timeline_at(name)
            )
        except UnknownTimeline:  # a tangle not seen yet is empty at version 0
            version, entries = 0, []
        floor = await self.service.read(lambda store: store.timelines.timeline_floor(name))
        if since is not None and floor <= since <= version:
            await self._send(stream, {"id": number, "ok": {"version": since, "snapshot": False}})
        else:  # no version, one it never had, or one below its log's floor: a snapshot
            since = version
            await self._send(stream, {"id": number, "ok": {"version": since, "snapshot": True}})
            for start in range(0, len(entries), PAGE):
                page = [[rank, msg_id] for rank, msg_id in entries[start : start + PAGE]]
                await self._send(
                    stream, {"id": number, "event": {"snapshot": page, "start": start}}
                )
        del entries

        # the finality watermark counts rank-order positions: not sent for causal-time
        spacetime = request.timeline.root is None and request.timeline.order == "rank"

        async def next_page(version: int) -> tuple[list[dict[str, Any]], int, bool] | None:
            head, updates = await self.service.read(
                lambda store: store.timelines.timeline_updates(name, version, PAGE, PAGE_BYTES)
            )
            if not updates:
                return None
            commands = [
                _command_wire(command, v, message)
                for v, (command, message) in enumerate(updates, start=version + 1)
            ]
            event: dict[str, Any] = {"commands": commands}
            if spacetime:
                event["final"] = await self.service.read(
                    lambda store: store.timelines.spacetime_final()
                )
            return [event], commands[-1]["v"], commands[-1]["v"] >= head

        await self._follow(stream, number, since, next_page)

    async def _watch_processed(self, stream, number, request: WatchProcessedRequest) -> None:
        """Stream the processed order from index `start`: each message with its index."""
        await self._send(stream, {"id": number, "ok": {"start": request.start}})

        async def next_page(index: int) -> tuple[list[dict[str, Any]], int] | None:
            page = await self.service.read(
                lambda store: store.feeds.processed_page(index, PAGE, PAGE_BYTES)
            )
            if not page:
                return None
            entries = [processed_entry(position, message) for position, message in page]
            return [{"processed": entries}], page[-1][0] + 1

        await self._follow(stream, number, request.start, next_page)

    async def _doc_watch(self, stream, number, request: DocWatchRequest) -> None:
        """Stream a document's text from version `since` (or a snapshot) as splices, live;
        `node.doc_ipc.DocWatch` makes the pages."""
        watch = DocWatch(self.service, request.doc)
        started, snapshot = await watch.start(request.since)
        await self._send(stream, {"id": number, "ok": started})
        for event in snapshot:
            await self._send(stream, {"id": number, "event": event})
        del snapshot
        await self._follow(stream, number, started["version"], watch.next_page)

    async def _follow(self, stream, number, position: int, next_page) -> None:
        """Send pages from `position` on, live, through a queue of `queue_frames` frames.

        `next_page(position)` gives the events of the next page and the
        position they reach (and, optionally, whether that was all the
        source held when read: then the next read waits for a change rather
        than finding nothing, one read per change instead of two), or None
        while there is nothing new. A page
        that finds the queue full means the client stopped keeping up: it
        gets, after what is queued, `{"lagged": position}` with the position
        it has reached, and the connection closes; so does one whose position
        a command log no longer holds (`BelowLogFloor`: its retention dropped
        it). A refusal met on the way (the document is gone) ends the stream
        with an error frame.
        """
        sender, receiver = trio.open_memory_channel(self.queue_frames)
        try:
            with (
                self.service.counters.ipc_queue(receiver),  # its depth, for /metrics
                self.queues.share() as share,  # its bytes, within the subscribers' budget
            ):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._until_hangup, stream)
                    produce = self._produce
                    nursery.start_soon(produce, sender, share, number, position, next_page)
                    await self._drain(stream, receiver, share)  # until the producer gave up
                    nursery.cancel_scope.cancel()
        except BaseExceptionGroup as group:  # the client hung up, or its socket broke: no bug
            if only(group, _GONE):
                raise _Lagged from None
            raise
        raise _Lagged

    async def _produce(self, sender, share: Share, number, position: int, next_page) -> None:
        """Queue the pages as encoded frames, each counted against `share` until written."""

        async def last(reply: dict[str, Any]) -> None:  # a small frame, queued whatever fits
            frame = encode_frame(reply, MAX_FRAME)
            share.take(len(frame), always=True)
            await sender.send(frame)

        async def lagged() -> None:
            self.service.counters.ipc_lagged += 1
            await last({"id": number, "event": {"lagged": position}})

        async with sender:
            while True:
                seen = self.service.version
                try:
                    produced = await next_page(position)
                except BelowLogFloor:  # the log dropped what it had still to send: behind
                    await lagged()
                    return
                except TanglenodeError as error:
                    await last(error_reply(number, error))
                    return
                if produced is None:
                    await self.service.wait_changed(seen)
                    continue
                events, reached, *caught_up = produced
                try:
                    for event in events:
                        frame = encode_frame({"id": number, "event": event}, MAX_FRAME)
                        if not share.take(len(frame)):
                            raise trio.WouldBlock  # over its bytes, or everyone's: behind
                        try:
                            sender.send_nowait(frame)
                        except trio.WouldBlock:
                            share.give(len(frame))
                            raise
                except trio.WouldBlock:
                    await lagged()
                    return
                position = reached
                if caught_up and caught_up[0]:  # nothing more was there: wait for a change
                    await self.service.wait_changed(seen)

    async def _until_hangup(self, stream) -> None:
        """A streaming client only listens: its EOF (or any byte) ends the stream."""
        await stream.receive_some(1)
        raise _Lagged

    async def _drain(self, stream, receiver, share: Share) -> None:
        async with receiver:
            async for frame in receiver:
                try:
                    await self._send_frame(stream, frame)
                finally:
                    share.give(len(frame))


@dataclass(frozen=True)
class Op:
    """A row of `OPS`: the handler, and where the op can be served."""

    handler: Callable[..., Any]  # handler(area, request); a stream's (server, stream, id, request)
    writes: bool = False  # signs and stores: the CLI's own process needs the data dir's lock
    keyed: bool = False  # reads with our keypair (groups)
    node: bool = False  # only the running node answers (its peers, its clock, streams)
    stream: bool = False  # events follow the reply, until the client hangs up

    @property
    def key(self) -> bool:
        """Whether serving it needs our keypair."""
        return self.writes or self.keyed


# Every op of `protocol.ipc.PARSERS`, by name: the one table the server dispatches through,
# and the CLI too, on a store of its own (node/cli/backend.py). A new op is a row here.
OPS: dict[str, Op] = {
    # messages and timelines
    "publish": Op(Area._publish, writes=True),
    "get": Op(Area._get),
    "timeline": Op(Area._timeline),
    "commands": Op(Area._commands),
    "placement": Op(Area._placement),
    # private groups (node/ipc_groups.py), read and written with our key
    "group-create": Op(ipc_groups.group_create, writes=True),
    "group-add": Op(ipc_groups.group_add, writes=True),
    "group-exclude": Op(ipc_groups.group_exclude, writes=True),
    "group-post": Op(ipc_groups.group_post, writes=True),
    "group-show": Op(ipc_groups.group_show, keyed=True),
    "group-timeline": Op(ipc_groups.group_timeline, keyed=True),
    # the listings (node/ipc_discovery.py)
    "tangles": Op(ipc_discovery.tangles),
    "group-list": Op(ipc_discovery.group_list, keyed=True),
    # names people type, to ids (node/ipc_resolve.py)
    "resolve": Op(ipc_resolve.resolve),
    # documents (node/doc_ipc.py)
    "doc-create": Op(doc_ipc.doc_create, writes=True),
    "doc-edit": Op(doc_ipc.doc_edit, writes=True),
    "doc-list": Op(doc_ipc.doc_list),
    "doc-show": Op(doc_ipc.doc_show),
    "doc-link": Op(doc_ipc.doc_link),
    "doc-resolve": Op(doc_ipc.doc_resolve),
    "doc-comment": Op(doc_ipc.doc_comment, writes=True),
    "doc-comments": Op(doc_ipc.doc_comments),
    "doc-include": Op(doc_ipc.doc_include, writes=True),
    "doc-render": Op(doc_ipc.doc_render),
    "doc-log": Op(doc_ipc.doc_log),
    "doc-diff": Op(doc_ipc.doc_diff),
    "doc-blame": Op(doc_ipc.doc_blame),
    # the replication scope (node/ipc_scope.py)
    "follow": Op(ipc_scope.contact, writes=True),
    "unfollow": Op(ipc_scope.contact, writes=True),
    "block": Op(ipc_scope.contact, writes=True),
    "unblock": Op(ipc_scope.contact, writes=True),
    "scope": Op(ipc_scope.scope, keyed=True),
    # the node and its peers (node/ipc_peers.py)
    "status": Op(ipc_peers.status, node=True),
    "peers": Op(ipc_peers.peers, node=True),
    "clock": Op(ipc_peers.clock, node=True),
    "connect": Op(ipc_peers.connect, node=True),
    "disconnect": Op(ipc_peers.disconnect, node=True),
    # forgetting content (node/ipc_erase.py)
    "delete": Op(ipc_erase.delete, writes=True),
    "purge": Op(ipc_erase.purge, writes=True),
    # invites (node/ipc_invites.py)
    "invite-create": Op(ipc_invites.invite_create, node=True),
    "invite-list": Op(ipc_invites.invite_list),
    "invite-revoke": Op(ipc_invites.invite_revoke, writes=True),
    "invite-use": Op(ipc_invites.invite_use, node=True),
    # streams
    "subscribe": Op(IpcServer._subscribe, node=True, stream=True),
    "watch-processed": Op(IpcServer._watch_processed, node=True, stream=True),
    "doc-watch": Op(IpcServer._doc_watch, node=True, stream=True),
}


class _Lagged(Exception):
    """A subscriber fell too far behind or stopped reading."""


_GONE = (_Lagged, trio.BrokenResourceError, trio.ClosedResourceError)  # a client that left
REFUSAL_SECONDS = 1.0  # at most, to tell a client over the cap why it is refused
