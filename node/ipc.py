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

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog
import trio

from tanglenode.node.failures import only
from tanglenode.node.network import Network
from tanglenode.node.peers import PeerRegistry
from tanglenode.node.service import StoreService
from tanglenode.protocol.address import BadAddress, parse_address
from tanglenode.protocol.canonical import (
    HARD_MAX_DEPTH,
    ExtensionType,
    NonFiniteFloat,
    TooDeep,
    check_value,
)
from tanglenode.protocol.errors import BadIdentifier, InvalidMessage, Reason, TanglenodeError
from tanglenode.protocol.framing import MAX_IPC_FRAME as MAX_FRAME
from tanglenode.protocol.framing import FrameDecoder, FrameError, encode_frame
from tanglenode.protocol.identity import Keypair
from tanglenode.protocol.limits import MAX_SEQ, MAX_TANGLE_NAME_BYTES
from tanglenode.protocol.message import Message, UnpublishableMessage
from tanglenode.storage import groups
from tanglenode.storage.errors import (
    NoIdentity,
    OwnFeedBehind,
    OwnFeedForked,
    StoreFull,
    UnknownTangle,
    UnknownTimeline,
)
from tanglenode.storage.store import FeedStore
from tanglenode.storage.timeline import Command, Delete, Insert

log = structlog.get_logger("ipc")

PAGE = 1000
PAGE_BYTES = 1 << 20  # message bodies per stream page, by their signed size
MAX_ENTRIES = 50_000  # timeline entries or commands per reply: ~2.5 MiB at most
MAX_PEERS_PAGE = 500  # peers per `peers` reply
MAX_CLOCK_PAGE = 20_000  # clock entries per `clock` reply: ~900 KiB
STATUS_LIST = 100  # forks, stalls and peers shown by `status`; the rest are counted
BEHIND_SHOWN = 16  # feeds of each peer's `behind` map shown in `peers`
MAX_TEXT = 300  # an address or last error as shown
MAX_GROUP_MEMBERS = 1000
MAX_DIALERS = 1000


class RequestError(TanglenodeError):
    """A request the server refuses; `kind` is a stable code for clients."""

    def __init__(self, kind: str, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.reason = reason


# The error kinds a client can see, by the error class the operation raised
# (first match wins). Stable codes, documented in docs/IPC.md; never class names.
ERROR_KINDS: tuple[tuple[type[BaseException], str], ...] = (
    (InvalidMessage, "invalid-message"),
    (UnpublishableMessage, "invalid-message"),
    (UnknownTangle, "unknown-tangle"),
    (UnknownTimeline, "not-found"),
    (groups.GroupError, "group"),
    (OwnFeedForked, "own-feed-forked"),
    (OwnFeedBehind, "own-feed-behind"),
    (StoreFull, "store-full"),
    (NoIdentity, "no-identity"),
    (BadAddress, "bad-request"),
    (BadIdentifier, "bad-request"),
    (TanglenodeError, "refused"),
)


def error_reply(number: Any, error: BaseException) -> dict[str, Any]:
    """The error reply for `error`: its stable kind, its text, and a message's reason code."""
    if isinstance(error, RequestError):
        kind = error.kind
    else:
        kind = next((code for cls, code in ERROR_KINDS if isinstance(error, cls)), "internal")
    body: dict[str, Any] = {"kind": kind, "message": _short(str(error), 1000)}
    reason = getattr(error, "reason", None)
    if reason is not None:
        body["reason"] = str(reason)
    return {"id": number, "error": body}


def _short(text: str | None, limit: int = MAX_TEXT) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 3] + "..."


# -- request fields: each checked, each failure a `bad-request` naming the field ------------


def _bad(message: str) -> RequestError:
    return RequestError("bad-request", message)


def _count(request: dict[str, Any], key: str, default: int, maximum: int = MAX_SEQ) -> int:
    """A non-negative integer field; values over `maximum` are clamped to it."""
    value = request.get(key, default)
    if value is None:
        value = default
    if type(value) is not int or value < 0:
        raise _bad(f"{key} is an integer of 0 or more")
    return min(value, maximum)


def _message_id(request: dict[str, Any], key: str, what: str) -> bytes:
    value = request.get(key)
    if type(value) is not bytes or len(value) != 32:
        raise _bad(f"{what} is a 32-byte id")
    return value


def _tangle_name(name: Any) -> str:
    if (
        type(name) is not str
        or not name
        or len(name) > MAX_TANGLE_NAME_BYTES
        or len(name.encode("utf-8", "surrogatepass")) > MAX_TANGLE_NAME_BYTES
    ):
        raise _bad(f"a tangle name is text of 1 to {MAX_TANGLE_NAME_BYTES} bytes")
    return name


def _content(value: Any, max_depth: int) -> Any:
    """Content a message may hold (the rules of docs/FORMAT.md), else `invalid-message`."""
    try:
        check_value(value, max_depth)
    except (TooDeep, NonFiniteFloat, ExtensionType) as error:
        reason = _CONTENT_REASONS[type(error)]
        raise RequestError("invalid-message", f"{reason}: content: {error}", reason) from None
    return value


_CONTENT_REASONS = {
    TooDeep: Reason.TOO_DEEP,
    NonFiniteFloat: Reason.NON_FINITE_FLOAT,
    ExtensionType: Reason.EXT_TYPE,
}


def _request_number(request: dict[str, Any]) -> Any:
    number = request.get("id")
    if number is None or type(number) is int or (type(number) is str and len(number) <= 128):
        return number
    raise _bad("a request id is an integer or a short string")


def _bounded_content(content: Any) -> Any:
    """Content as it goes out: a stored value nested past what a frame can hold is marked."""
    kind = type(content)
    if kind is list or kind is dict:
        try:
            check_value(content, HARD_MAX_DEPTH)
        except TooDeep:
            return {"$too-deep": True}
        except ValueError:
            pass  # NaN or an ext type stored before the content rules: msgpack carries them
    return content


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
        "content": _bounded_content(message.content),
    }


def _timeline_name(request: dict[str, Any]) -> bytes:
    spacetime = request.get("spacetime")
    if spacetime is not None and type(spacetime) is not bool:
        raise _bad("spacetime is true or false")
    if spacetime:
        return FeedStore.timeline_name(None)
    name, root = request.get("tangle"), request.get("root")
    if name is None or root is None:
        raise _bad("name a timeline: spacetime, or tangle and root")
    return FeedStore.timeline_name(_message_id(request, "root", "root"), _tangle_name(name))


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
    _dialing: dict[bytes, trio.CancelScope] = field(default_factory=dict)

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
            bad_frame = RequestError("bad-frame", str(error))
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

    async def _serve_one(self, stream, request: Any) -> None:
        if not isinstance(request, dict) or type(request.get("op")) is not str:
            await self._send(stream, error_reply(None, _bad("a request is a map with an op")))
            return
        try:
            number = _request_number(request)
        except RequestError as error:
            await self._send(stream, error_reply(None, error))
            return
        op = request["op"]
        handler = getattr(self, "op_" + op.replace("-", "_"), None) if len(op) <= 64 else None
        if handler is None:
            unknown = RequestError("unknown-op", f"no operation {_short(op, 64)!r}")
            await self._send(stream, error_reply(number, unknown))
            return
        try:
            if op in _STREAMING:
                await handler(stream, number, request)
                return
            reply = {"id": number, "ok": await handler(request)}
        except (_Lagged, trio.BrokenResourceError, trio.ClosedResourceError):
            raise
        except TanglenodeError as error:
            reply = error_reply(number, error)
        except Exception as error:  # a bug of ours: the client gets a reply, the node serves on
            log.exception("ipc request failed", op=op)
            reply = error_reply(number, error)
        try:
            frame = encode_frame(reply, MAX_FRAME)
        except (TanglenodeError, ValueError, TypeError, OverflowError) as error:
            # Every reply is bounded by design; this is the net under that.
            log.warning("ipc reply not sent", op=op, error=_short(str(error)))
            frame = encode_frame(
                error_reply(number, RequestError("reply-too-large", _short(str(error)) or ""))
            )
        await self._send_frame(stream, frame)

    # -- operations ----------------------------------------------------------

    @property
    def _limits(self):
        return self.service.store.limits

    async def op_publish(self, request: dict[str, Any]) -> dict[str, Any]:
        tangles = request.get("tangles")
        tangles = {} if tangles is None else tangles
        if type(tangles) is not dict or len(tangles) > self._limits.max_tangles:
            raise _bad(
                f"tangles maps at most {self._limits.max_tangles} names to root ids"
                " (or nil for a new root)"
            )
        for name, root in tangles.items():
            _tangle_name(name)
            if root is not None and (type(root) is not bytes or len(root) != 32):
                raise _bad("a tangle's root is a 32-byte id, or nil for a new root")
        message = await self.service.publish(request.get("content"), tangles)
        return message_body(message)

    async def op_get(self, request: dict[str, Any]) -> dict[str, Any]:
        msg_id = _message_id(request, "message", "message")
        message = await self.service.read(self.service.store.get, msg_id)
        if message is None:
            raise RequestError("not-found", "no such message")
        return message_body(message)

    async def op_timeline(self, request: dict[str, Any]) -> dict[str, Any]:
        name = _timeline_name(request)
        start = _count(request, "start", 0)
        limit = _count(request, "limit", PAGE, MAX_ENTRIES)
        version, entries = await self.service.read(
            self.service.store.timeline_at, name, start, start + limit
        )
        return {"version": version, "entries": [[rank, msg_id] for rank, msg_id in entries]}

    async def op_placement(self, request: dict[str, Any]) -> dict[str, Any]:
        """A message's position and rank in a timeline."""
        name = _timeline_name(request)
        msg_id = _message_id(request, "message", "message")
        placement = await self.service.read(self.service.store.timeline_placement, name, msg_id)
        if placement is None:
            raise RequestError("not-found", "the message is not in that timeline")
        return {"position": placement.position, "rank": placement.rank}

    async def op_commands(self, request: dict[str, Any]) -> dict[str, Any]:
        """Up to `limit` commands after version `since` (no message bodies)."""
        name = _timeline_name(request)
        since = _count(request, "since", 0)
        limit = _count(request, "limit", PAGE, MAX_ENTRIES)
        store = self.service.store
        version = await self.service.read(store.timeline_version, name)
        commands = await self.service.read(store.timeline_commands, name, since, limit)
        return {
            "version": version,
            "commands": [_command_wire(command) for command in commands],
        }

    # -- private groups (storage/groups.py) ------------------------------------------

    async def _group(self, request: dict[str, Any]) -> groups.GroupView:
        root = _message_id(request, "group", "group (its root id)")
        return await self.service.read(groups.read_group, self.service.store, self.keypair, root)

    def _feeds(self, request: dict[str, Any]) -> list[bytes]:
        members = request.get("members")
        if (
            type(members) is not list
            or not 0 < len(members) <= MAX_GROUP_MEMBERS
            or not all(type(m) is bytes and len(m) == 32 for m in members)
        ):
            raise _bad(f"members is a list of 1 to {MAX_GROUP_MEMBERS} 32-byte feed keys")
        return members

    async def op_group_create(self, request: dict[str, Any]) -> dict[str, Any]:
        name = request.get("name", "")
        if type(name) is not str or len(name) > 1000:
            raise _bad("a group name is text of at most 1000 characters")
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
        content = _content(request.get("content"), self._limits.max_content_depth)
        view = await self._group(request)
        message = await self.service.publish(*groups.post(view, self.keypair, content))
        return {"id": message.id}

    async def op_group_show(self, request: dict[str, Any]) -> dict[str, Any]:
        view = await self._group(request)
        final = await self.service.read(groups.final, self.service.store, view)
        return {**groups.describe(view), "final": final}

    async def op_group_timeline(self, request: dict[str, Any]) -> dict[str, Any]:
        tangle, order = request.get("tangle", "group"), request.get("order", "rank")
        if tangle not in ("group", "epoch", "members") or order not in ("rank", "causal-time"):
            raise _bad("tangle: group|epoch|members; order: rank|causal-time")
        view = await self._group(request)
        rows = await self.service.read(groups.timeline, self.service.store, view, tangle, order)
        for row in rows:
            if "content" in row:
                row["content"] = _bounded_content(row["content"])
        return {"entries": rows}

    # -- the node and its peers: every reply bounded, whatever peers advertise --------

    async def op_status(self, request: dict[str, Any]) -> dict[str, Any]:
        """A summary: counts, and at most `STATUS_LIST` forks, stalls and peers each."""
        store = self.service.store
        invalid = dict(self.service.invalid)
        stalled = await self.service.read(store.stalls)
        forked = set(invalid)
        ours = self.service.clock
        peers = list(self.registry.peers.values())
        shown = [self._peer(peer, ours, forked) for peer in peers[:STATUS_LIST]]
        return {
            "feed": self.keypair.public,
            "feeds": len(ours),
            "messages": sum(ours.values()),
            "forks": [[author, seq] for author, seq in list(invalid.items())[:STATUS_LIST]],
            "forks_total": len(invalid),
            "final": await self.service.read(store.spacetime_final),
            "stalls": [
                {"feed": x.feed, "seq": x.seq, "waits_for": [x.needs_feed, x.needs_seq]}
                for x in stalled[:STATUS_LIST]
            ],
            "stalls_total": len(stalled),
            "peers": shown,
            "peers_total": len(peers),
            "peers_connected": sum(peer.connected for peer in peers),
            "truncated": len(invalid) > STATUS_LIST
            or len(stalled) > STATUS_LIST
            or len(peers) > STATUS_LIST,
            **self.status_extra,
        }

    async def op_peers(self, request: dict[str, Any]) -> dict[str, Any]:
        """A page of peers (`start`, `limit` up to `MAX_PEERS_PAGE`), each summarised."""
        start = _count(request, "start", 0)
        limit = _count(request, "limit", MAX_PEERS_PAGE, MAX_PEERS_PAGE)
        forked = set(self.service.invalid)
        peers = list(self.registry.peers.values())
        page = peers[start : start + limit]
        following = start + len(page)
        return {
            "peers": [self._peer(peer, self.service.clock, forked) for peer in page],
            "total": len(peers),
            "next": following if following < len(peers) else None,
        }

    async def op_clock(self, request: dict[str, Any]) -> dict[str, Any]:
        """A page of a vector clock, in feed order: ours, or the one `peer` advertised."""
        start = _count(request, "start", 0)
        limit = _count(request, "limit", MAX_CLOCK_PAGE, MAX_CLOCK_PAGE)
        if request.get("peer") is None:
            clock = self.service.clock
        else:
            key = _message_id(request, "peer", "peer (its 32-byte key)")
            if key not in self.registry.peers:
                raise RequestError("not-found", "no such peer")
            clock = self.registry.peers[key].clock
        feeds = sorted(clock)
        page = feeds[start : start + limit]
        following = start + len(page)
        return {
            "entries": [[feed, clock[feed]] for feed in page],
            "total": len(feeds),
            "next": following if following < len(feeds) else None,
        }

    def _peer(self, peer, ours, forked) -> dict[str, Any]:
        behind = peer.behind(ours, forked)
        return {
            "key": peer.key,
            "address": _short(peer.address),
            "connected": peer.connected,
            "direction": peer.direction,
            "received": peer.received,
            "sent": peer.sent,
            "caught_up": peer.connected and not behind and bool(peer.clock or peer.since),
            "behind": dict(sorted(behind.items())[:BEHIND_SHOWN]),
            "behind_feeds": len(behind),
            "behind_messages": sum(behind.values()),
            "clock_feeds": len(peer.clock),
            "last_error": _short(peer.last_error),
        }

    async def op_connect(self, request: dict[str, Any]) -> dict[str, Any]:
        """Dial a peer (and keep redialing it); a second connect to one key replaces the first."""
        address, key = request.get("address"), request.get("key")
        try:
            parse_address(address)
        except BadAddress as error:
            raise _bad(f"connect needs address HOST:PORT: {error}") from None
        if type(key) is not bytes or len(key) != 32:
            raise _bad("connect needs the peer's 32-byte key")
        if key not in self._dialing and len(self._dialing) >= MAX_DIALERS:
            raise _bad(f"already dialing {MAX_DIALERS} peers")
        assert self._dialers is not None
        if key in self._dialing:
            self._dialing.pop(key).cancel()
        scope = trio.CancelScope()
        self._dialing[key] = scope
        self._dialers.start_soon(self._dial, scope, address, key)
        return {"dialing": address}

    async def _dial(self, scope: trio.CancelScope, address: str, key: bytes) -> None:
        with scope:
            await self.network.dial_forever(address, key)

    async def op_subscribe(self, stream, number, request: dict[str, Any]) -> None:
        """Stream a timeline from version `since` (or a snapshot), then live; see module doc."""
        name = _timeline_name(request)
        store = self.service.store
        since = request.get("since")
        if since is not None:
            since = _count(request, "since", 0)
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
        start = _count(request, "start", 0)
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
    page, size = [], 0
    for index, feed, seq in store.processed(start, PAGE):
        message = store.get_by_seq(feed, seq)
        page.append({"index": index, "message": message_body(message) if message else None})
        size += len(message.raw) if message else 0
        if size >= PAGE_BYTES:  # a page of large messages stays well under the frame cap
            break
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
    events, size = [], 0
    for version, command in enumerate(commands, start=since + 1):
        if isinstance(command, Insert):
            body = store.get(command.id)
            message = message_body(body) if body else command.id
            events.append({"v": version, "ins": command.pos, "message": message})
            size += len(body.raw) if body else 0
        else:
            events.append({"v": version, **_command_wire(command)})
        if size >= PAGE_BYTES:  # the rest comes in the next page
            break
    return head, events


def _command_wire(command: Command) -> dict[str, Any]:
    """`{"ins": pos, "id": id}`, `{"mov": [from, to]}` or `{"del": pos}` (docs/IPC.md)."""
    if isinstance(command, Insert):
        return {"ins": command.pos, "id": command.id}
    if isinstance(command, Delete):
        return {"del": command.pos}
    return {"mov": [command.src, command.dst]}


_STREAMING = {"subscribe", "watch-processed"}


class _Lagged(Exception):
    """A subscriber fell too far behind or stopped reading."""
