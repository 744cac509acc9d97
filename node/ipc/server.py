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
checks, reply and event bodies, `ErrorKind`). This module moves frames and
dispatches each request through `OPS`, the one table of ops (node/ipc/ops.py):
an op with one reply through `answer`, a stream's through its handler in
node/ipc/streams.py, which hands `follow` the function reading its next page.

A timeline subscription reads the timeline's command log from the version
the client names, then waits for the store to change and reads on. The log
is the backlog: a subscriber holds at most `queue_frames` pages in memory,
as encoded frames, and at most `subscribers.stream_bytes` of them, all
subscribers together (the web view's too) at most `subscribers.queue_bytes`
(node/ipc/queue_budget.py); a client that reconnects with its last version
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog
import trio

from tanglenode.node.failures import only
from tanglenode.node.ipc.area import Area
from tanglenode.node.ipc.once_replies import OnceReplies
from tanglenode.node.ipc.ops import MAX_FRAME, OPS, answer, error_reply, once_of
from tanglenode.node.ipc.peers import RunningNode
from tanglenode.node.ipc.queue_budget import (
    DEFAULT_QUEUE_BYTES,
    DEFAULT_STREAM_BYTES,
    QueueBudget,
    Share,
)
from tanglenode.node.service.store_service import StoreService
from tanglenode.protocol.errors import TanglenodeError
from tanglenode.protocol.framing import FrameDecoder, FrameError, encode_frame
from tanglenode.protocol.identity import Keypair
from tanglenode.protocol.ipc import ErrorKind, RequestError, parse_request, request_header, short
from tanglenode.storage.errors import BelowLogFloor

if TYPE_CHECKING:
    from tanglenode.node.gossip.network import Network
    from tanglenode.node.net.peers import PeerRegistry

__all__ = ["IpcServer"]

log = structlog.get_logger("ipc")


@dataclass
class IpcServer:
    service: StoreService
    registry: PeerRegistry
    network: Network
    keypair: Keypair
    status_extra: dict[str, Any] = field(default_factory=dict)
    config_file: Path | None = None  # where `connect` with `save` adds peers
    queue_frames: int = 64
    queues: QueueBudget = field(  # bytes queued to every subscriber (node/ipc/queue_budget.py)
        default_factory=lambda: QueueBudget(DEFAULT_QUEUE_BYTES, DEFAULT_STREAM_BYTES)
    )
    max_clients: int = 256  # connections at once (node/net/descriptors.py); more are closed
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
                await self.send(stream, error_reply(None, bad_frame))
        except Exception as error:
            if not only(error, (trio.BrokenResourceError, trio.ClosedResourceError, _Lagged)):
                # A bug of ours: this client is dropped, the node serves the others.
                log.exception("ipc client failed")
        finally:
            await stream.aclose()

    async def send(self, stream, reply: dict[str, Any]) -> None:
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
            await self.send(stream, error_reply(None, error))
            return
        row = OPS.get(op)
        if row is None or not row.stream:
            await self._send_frame(stream, await answer(self.area, number, op, frame))
            return
        try:
            request = parse_request(op, frame, self.service.store.limits)
            once_of(op, frame)  # refused: a stream writes nothing
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
        await self.send(stream, reply)

    async def follow(self, stream, number, position: int, next_page) -> None:
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


class _Lagged(Exception):
    """A subscriber fell too far behind or stopped reading."""


_GONE = (_Lagged, trio.BrokenResourceError, trio.ClosedResourceError)  # a client that left
REFUSAL_SECONDS = 1.0  # at most, to tell a client over the cap why it is refused
