"""The local IPC server: length-prefixed msgpack requests over a Unix socket (mode 0600).

Theory of operation
-------------------
A client sends frames `{"op": NAME, "id": N, ...arguments}`; each gets one
reply `{"id": N, "ok": {...}}` or `{"id": N, "error": {"kind", "message"}}`
(protocol in `docs/IPC.md`). Requests on one connection are served in
order. `subscribe` and `watch-processed` turn the connection into a stream:
after the first reply, frames `{"id": N, "event": ...}` follow until the
client hangs up.

A timeline subscription reads the timeline's command log from the version
the client names, then waits for the store to change and reads on. The log
is the backlog: a subscriber holds at most `queue_frames` pages in memory,
and a client that reconnects with its last version misses nothing. When
that queue is full the client has stopped keeping up: after the queued
pages it gets `{"lagged": version}` (the version it reached) and the
connection closes; it resumes with `since=version`. A socket that stays
unwritable for `send_seconds` is closed outright.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog
import trio

from node import groups
from node.failures import only
from node.network import Network
from node.peers import PeerRegistry
from node.service import StoreService
from protocol.errors import TanglenodeError
from protocol.framing import FrameDecoder, FrameError, encode_frame
from protocol.identity import Keypair
from protocol.message import Message
from storage.errors import UnknownTangle, UnknownTimeline
from storage.store import FeedStore
from storage.timeline import Insert

log = structlog.get_logger("ipc")

MAX_FRAME = 4 << 20
PAGE = 1000


class RequestError(TanglenodeError):
    """A request the server refuses; `kind` is a stable code for clients."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def message_body(message: Message) -> dict[str, Any]:
    return {
        "id": message.id,
        "author": message.author,
        "seq": message.seq,
        "prev": message.prev,
        "timestamp": message.timestamp,
        "timeframe": message.timeframe,
        "tangles": {
            name: {"root": link.root, "previous": list(link.previous or ())}
            for name, link in message.tangles.items()
        },
        "content": message.content,
    }


def _timeline_name(request: dict[str, Any]) -> bytes:
    if request.get("spacetime"):
        return FeedStore.timeline_name(None)
    name, root = request.get("tangle"), request.get("root")
    if not isinstance(name, str) or not isinstance(root, bytes):
        raise RequestError("bad-request", "name a timeline: spacetime, or tangle and root")
    return FeedStore.timeline_name(root, name)


@dataclass
class IpcServer:
    service: StoreService
    registry: PeerRegistry
    network: Network
    keypair: Keypair
    status_extra: dict[str, Any] = field(default_factory=dict)
    queue_frames: int = 64
    send_seconds: float = 10.0
    _dialers: trio.Nursery | None = None

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
                self._dialers = nursery
                task_status.started(path)
                await trio.serve_listeners(self._client, [listener])
        finally:
            path.unlink(missing_ok=True)

    async def _client(self, stream: trio.SocketStream) -> None:
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
            await self._send(
                stream, {"id": None, "error": {"kind": "bad-frame", "message": str(error)}}
            )
        except Exception as error:
            if not only(error, (trio.BrokenResourceError, trio.ClosedResourceError, _Lagged)):
                # A bug of ours: this client is dropped, the node serves the others.
                log.exception("ipc client failed")
        finally:
            await stream.aclose()

    async def _send(self, stream, reply: dict[str, Any]) -> None:
        with trio.move_on_after(self.send_seconds) as scope:
            await stream.send_all(encode_frame(reply, MAX_FRAME))
        if scope.cancelled_caught:
            raise _Lagged

    async def _serve_one(self, stream, request: Any) -> None:
        if not isinstance(request, dict) or not isinstance(request.get("op"), str):
            await self._send(
                stream,
                {
                    "id": None,
                    "error": {"kind": "bad-request", "message": "a request is a map with an op"},
                },
            )
            return
        number, op = request.get("id"), request["op"]
        handler = getattr(self, "op_" + op.replace("-", "_"), None)
        if handler is None:
            await self._send(
                stream,
                {"id": number, "error": {"kind": "unknown-op", "message": f"no operation {op!r}"}},
            )
            return
        try:
            if op in _STREAMING:
                await handler(stream, number, request)
                return
            result = await handler(request)
        except RequestError as error:
            reply = {"id": number, "error": {"kind": error.kind, "message": str(error)}}
        except groups.GroupError as error:
            reply = {"id": number, "error": {"kind": "group", "message": str(error)}}
        except (UnknownTangle, UnknownTimeline) as error:
            reply = {"id": number, "error": {"kind": "not-found", "message": str(error)}}
        except TanglenodeError as error:
            reply = {"id": number, "error": {"kind": type(error).__name__, "message": str(error)}}
        else:
            reply = {"id": number, "ok": result}
        await self._send(stream, reply)

    # -- operations ----------------------------------------------------------

    async def op_publish(self, request: dict[str, Any]) -> dict[str, Any]:
        tangles = request.get("tangles") or {}
        if not isinstance(tangles, dict) or not all(
            isinstance(name, str) and (root is None or isinstance(root, bytes))
            for name, root in tangles.items()
        ):
            raise RequestError(
                "bad-request", "tangles maps names to root ids (or nil for a new root)"
            )
        message = await self.service.publish(request.get("content"), tangles)
        return message_body(message)

    async def op_get(self, request: dict[str, Any]) -> dict[str, Any]:
        msg_id = request.get("message")
        if not isinstance(msg_id, bytes):
            raise RequestError("bad-request", "get needs a message id")
        message = await self.service.read(self.service.store.get, msg_id)
        if message is None:
            raise RequestError("not-found", "no such message")
        return message_body(message)

    async def op_timeline(self, request: dict[str, Any]) -> dict[str, Any]:
        name = _timeline_name(request)
        start = int(request.get("start", 0))
        limit = min(int(request.get("limit", PAGE)), 100_000)
        version, entries = await self.service.read(
            self.service.store.timeline_at, name, start, start + limit
        )
        return {"version": version, "entries": [[rank, msg_id] for rank, msg_id in entries]}

    async def op_placement(self, request: dict[str, Any]) -> dict[str, Any]:
        """A message's position and rank in a timeline."""
        name, msg_id = _timeline_name(request), request.get("message")
        if not isinstance(msg_id, bytes):
            raise RequestError("bad-request", "placement needs a message id")
        placement = await self.service.read(self.service.store.timeline_placement, name, msg_id)
        if placement is None:
            raise RequestError("not-found", "the message is not in that timeline")
        return {"position": placement.position, "rank": placement.rank}

    async def op_commands(self, request: dict[str, Any]) -> dict[str, Any]:
        """Up to `limit` commands after version `since` (no message bodies)."""
        name, since = _timeline_name(request), request.get("since", 0)
        if not isinstance(since, int) or isinstance(since, bool) or since < 0:
            raise RequestError("bad-request", "since is a version (0 or more)")
        limit = min(int(request.get("limit", PAGE)), 100_000)
        store = self.service.store
        version = await self.service.read(store.timeline_version, name)
        commands = await self.service.read(store.timeline_commands, name, since, limit)
        return {
            "version": version,
            "commands": [
                {"ins": c.pos, "id": c.id} if isinstance(c, Insert) else {"mov": [c.src, c.dst]}
                for c in commands
            ],
        }

    # -- private groups (node/groups.py) ------------------------------------------

    async def _group(self, request: dict[str, Any]) -> groups.GroupView:
        root = request.get("group")
        if not isinstance(root, bytes):
            raise RequestError("bad-request", "name the group by its root id")
        return await self.service.read(groups.read_group, self.service.store, self.keypair, root)

    def _feeds(self, request: dict[str, Any]) -> list[bytes]:
        members = request.get("members")
        if (
            not isinstance(members, list)
            or not members
            or not all(isinstance(m, bytes) and len(m) == 32 for m in members)
        ):
            raise RequestError("bad-request", "members is a list of 32-byte feed keys")
        return members

    async def op_group_create(self, request: dict[str, Any]) -> dict[str, Any]:
        name = request.get("name", "")
        if not isinstance(name, str):
            raise RequestError("bad-request", "a group name is text")
        content, tangles = groups.create(self.keypair, name)
        message = await self.service.publish(content, tangles)
        return {"group": message.id}

    async def op_group_add(self, request: dict[str, Any]) -> dict[str, Any]:
        members, view = self._feeds(request), await self._group(request)
        message = await self.service.publish(*groups.add(view, self.keypair, members))
        return {"id": message.id}

    async def op_group_exclude(self, request: dict[str, Any]) -> dict[str, Any]:
        """Exclude members, then open a new epoch (a new key) for the others."""
        members, view = self._feeds(request), await self._group(request)
        excluded = await self.service.publish(*groups.exclude(view, self.keypair, members))
        view = await self._group(request)
        epoch = await self.service.publish(*groups.new_epoch(view, self.keypair))
        return {"id": excluded.id, "epoch": epoch.id}

    async def op_group_post(self, request: dict[str, Any]) -> dict[str, Any]:
        view = await self._group(request)
        message = await self.service.publish(
            *groups.post(view, self.keypair, request.get("content"))
        )
        return {"id": message.id}

    async def op_group_show(self, request: dict[str, Any]) -> dict[str, Any]:
        view = await self._group(request)
        final = await self.service.read(groups.final, self.service.store, view)
        return {**groups.describe(view), "final": final}

    async def op_group_timeline(self, request: dict[str, Any]) -> dict[str, Any]:
        tangle, order = request.get("tangle", "group"), request.get("order", "rank")
        if tangle not in ("group", "epoch", "members") or order not in ("rank", "causal-time"):
            raise RequestError(
                "bad-request", "tangle: group|epoch|members; order: rank|causal-time"
            )
        view = await self._group(request)
        rows = await self.service.read(groups.timeline, self.service.store, view, tangle, order)
        return {"entries": rows}

    async def op_status(self, request: dict[str, Any]) -> dict[str, Any]:
        store = self.service.store
        invalid = dict(self.service.invalid)
        stalled = await self.service.read(store.stalls)
        forked = set(invalid)
        ours = self.service.clock
        return {
            "feed": self.keypair.public,
            "feeds": len(ours),
            "messages": sum(ours.values()),
            "clock": ours,
            "forks": [[author, seq] for author, seq in invalid.items()],
            "final": await self.service.read(store.spacetime_final),
            "stalls": [
                {"feed": x.feed, "seq": x.seq, "waits_for": [x.needs_feed, x.needs_seq]}
                for x in stalled
            ],
            "peers": [self._peer(peer, ours, forked) for peer in self.registry.peers.values()],
            **self.status_extra,
        }

    async def op_peers(self, request: dict[str, Any]) -> dict[str, Any]:
        status = await self.op_status(request)
        return {"peers": status["peers"]}

    def _peer(self, peer, ours, forked) -> dict[str, Any]:
        behind = peer.behind(ours, forked)
        return {
            "key": peer.key,
            "address": peer.address,
            "connected": peer.connected,
            "direction": peer.direction,
            "received": peer.received,
            "sent": peer.sent,
            "caught_up": peer.connected and not behind and bool(peer.clock or peer.since),
            "behind": behind,
            "last_error": peer.last_error,
        }

    async def op_connect(self, request: dict[str, Any]) -> dict[str, Any]:
        address, key = request.get("address"), request.get("key")
        if not isinstance(address, str) or ":" not in address or not isinstance(key, bytes):
            raise RequestError("bad-request", "connect needs address HOST:PORT and a 32-byte key")
        assert self._dialers is not None
        self._dialers.start_soon(self.network.dial_forever, address, key)
        return {"dialing": address}

    async def op_subscribe(self, stream, number, request: dict[str, Any]) -> None:
        """Stream a timeline from version `since` (or a snapshot), then live; see module doc."""
        name = _timeline_name(request)
        store = self.service.store
        since = request.get("since")
        version, entries = await self.service.read(_snapshot, store, name)
        if isinstance(since, int) and not isinstance(since, bool) and 0 <= since <= version:
            await self._send(stream, {"id": number, "ok": {"version": since, "snapshot": False}})
        else:  # no version, or one this timeline never had: start from a snapshot
            since = version
            await self._send(stream, {"id": number, "ok": {"version": since, "snapshot": True}})
            for start in range(0, len(entries), PAGE):
                page = [[rank, msg_id] for rank, msg_id in entries[start : start + PAGE]]
                await self._send(
                    stream, {"id": number, "event": {"snapshot": page, "start": start}}
                )
        del entries

        spacetime = name == FeedStore.timeline_name(None)

        async def next_page(version: int) -> tuple[dict[str, Any], int] | None:
            _head, events = await self.service.read(_updates, store, name, version)
            if not events:
                return None
            event: dict[str, Any] = {"commands": events}
            if spacetime:
                event["final"] = await self.service.read(store.spacetime_final)
            return event, events[-1]["v"]

        await self._follow(stream, number, since, next_page)

    async def op_watch_processed(self, stream, number, request: dict[str, Any]) -> None:
        """Stream the processed order from index `start`: each message with its index."""
        start = request.get("start", 0)
        if not isinstance(start, int) or isinstance(start, bool) or start < 0:
            raise RequestError("bad-request", "start is a processed index (0 or more)")
        store = self.service.store
        await self._send(stream, {"id": number, "ok": {"start": start}})

        async def next_page(index: int) -> tuple[dict[str, Any], int] | None:
            page = await self.service.read(_processed_page, store, index)
            return ({"processed": page}, page[-1]["index"] + 1) if page else None

        await self._follow(stream, number, start, next_page)

    async def _follow(self, stream, number, position: int, next_page) -> None:
        """Send pages from `position` on, live, through a queue of `queue_frames` frames.

        A page that finds the queue full means the client stopped keeping up:
        it gets, after what is queued, `{"lagged": position}` with the
        position it has reached, and the connection closes.
        """
        sender, receiver = trio.open_memory_channel(self.queue_frames)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._until_hangup, stream)
            nursery.start_soon(self._produce, sender, number, position, next_page)
            await self._drain(stream, receiver)  # until the producer gave up on the client
            nursery.cancel_scope.cancel()
        raise _Lagged

    async def _produce(self, sender, number, position: int, next_page) -> None:
        async with sender:
            while True:
                seen = self.service.version
                produced = await next_page(position)
                if produced is None:
                    await self.service.wait_changed(seen)
                    continue
                event, reached = produced
                try:
                    sender.send_nowait({"id": number, "event": event})
                except trio.WouldBlock:
                    await sender.send({"id": number, "event": {"lagged": position}})
                    return
                position = reached

    async def _until_hangup(self, stream) -> None:
        """A streaming client only listens: its EOF (or any byte) ends the stream."""
        await stream.receive_some(1)
        raise _Lagged

    async def _drain(self, stream, receiver) -> None:
        async with receiver:
            async for frame in receiver:
                await self._send(stream, frame)


def _processed_page(store: FeedStore, start: int) -> list[dict[str, Any]]:
    page = []
    for index, feed, seq in store.processed(start, PAGE):
        message = store.get_by_seq(feed, seq)
        page.append({"index": index, "message": message_body(message) if message else None})
    return page


def _snapshot(store: FeedStore, name: bytes) -> tuple[int, list[tuple[int, bytes]]]:
    """Version and entries at one moment; a tangle not seen yet is empty at version 0."""
    try:
        return store.timeline_at(name)
    except UnknownTimeline:
        return 0, []


def _updates(store: FeedStore, name: bytes, since: int) -> tuple[int, list[dict[str, Any]]]:
    """The head version and up to a page of commands after `since`, inserts with bodies."""
    try:
        head = store.timeline_version(name)
        commands = store.timeline_commands(name, since, PAGE)
    except UnknownTimeline:
        return 0, []
    events = []
    for version, command in enumerate(commands, start=since + 1):
        if isinstance(command, Insert):
            body = store.get(command.id)
            message = message_body(body) if body else command.id
            events.append({"v": version, "ins": command.pos, "message": message})
        else:
            events.append({"v": version, "mov": [command.src, command.dst]})
    return head, events


_STREAMING = {"subscribe", "watch-processed"}


class _Lagged(Exception):
    """A subscriber fell too far behind or stopped reading."""
