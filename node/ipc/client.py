"""A Trio client for the node's IPC socket.

    async with await connect(socket_path) as node:
        message = await node.publish({"text": "hi"}, {"chat": root_id})
        async for event in node.subscribe(tangle="chat", root=root_id, since=version):
            ...

Every call sends one request and waits for its reply; an error reply raises
`NodeError` with the server's `kind`, an `ErrorKind` (`ErrorKind.NOT_FOUND`,
`ErrorKind.BAD_REQUEST`, ...; docs/IPC.md). For one request without Trio,
node/ipc/oneshot.py's `request` speaks the same frames over a blocking socket.
A stream (`subscribe`, `doc_watch`, `watch_processed`) keeps its connection
to the end: once one has started, any other call on that connection raises
`NodeError` of kind `STREAMING` before sending anything, and the stream goes
on; open a second connection for requests while streaming.
`subscribe` yields events until the caller stops iterating: `{"snapshot":
entries, "start": n}` pages when it starts from a snapshot, then
`{"commands": [{"v": version, "ins": pos, "message": body} | {"v": version,
"mov": [from, to]} | {"v": version, "del": pos}]}`, and `{"lagged":
version}` just before the node drops a subscriber that fell behind (resume
with `since=version`).

`doc_watch` follows a document's text the same way: `{"version", "text",
"start"}` snapshot events (start 0 replaces the text, a later start appends
to it), then `{"entries": [{"version", "msg", "splices"}]}` pages whose
splices (`["ins", pos, text]`, `["del", pos, length]`)
`protocol.doc_ipc.apply_splices` applies in order; resume with `since` =
the last version applied.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import trio

from tanglenode.node.ipc.oneshot import (
    NodeError,
    NodeNotRunning,
    error_from,
    not_running,
    reply_value,
)
from tanglenode.protocol.errors import BadIdentifier
from tanglenode.protocol.framing import MAX_IPC_FRAME, FrameDecoder, encode_frame
from tanglenode.protocol.identity import feed_text, message_text, parse_feed, parse_message_id
from tanglenode.protocol.ipc_fields import ErrorKind

# Between ids as the node sends them (32 bytes) and as people and the CLI write them
# (`%…` a message, `@…` a feed; `parse_*` raise `BadIdentifier`): protocol/identity.py's.
__all__ = [
    "BadIdentifier",
    "NodeClient",
    "NodeError",
    "NodeNotRunning",
    "connect",
    "feed_text",
    "message_text",
    "parse_feed",
    "parse_message_id",
]


class NodeClient:
    def __init__(self, stream: trio.SocketStream) -> None:
        self._stream = stream
        self._decoder = FrameDecoder(MAX_IPC_FRAME)
        self._next_id = 0
        self._stream_op: str | None = None  # the stream this connection carries, once asked

    async def __aenter__(self) -> NodeClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def _frame(self) -> dict[str, Any]:
        while (frame := self._decoder.next_frame()) is None:
            try:
                data = await self._stream.receive_some(65536)
            except trio.BrokenResourceError:  # reset
                data = b""
            if not data:
                raise NodeError(ErrorKind.DISCONNECTED, "the node closed the connection")
            self._decoder.receive_data(data)
        return frame

    async def _send(self, op: str, **arguments: Any) -> int:
        if self._stream_op is not None:  # the node would take any byte for a hang-up
            raise NodeError(
                ErrorKind.STREAMING,
                f"this connection carries a `{self._stream_op}` stream, to its end; "
                f"open a second connection (`connect`) for `{op}` while streaming",
            )
        self._next_id += 1
        try:
            await self._stream.send_all(encode_frame({"op": op, "id": self._next_id, **arguments}))
        except trio.BrokenResourceError:  # the node closed the connection (it stopped)
            raise NodeError(ErrorKind.DISCONNECTED, "the node closed the connection") from None
        return self._next_id

    async def _reply(self, number: int) -> Any:
        return reply_value(await self._frame(), number)

    async def request(self, op: str, **arguments: Any) -> Any:
        return await self._reply(await self._send(op, **arguments))

    async def publish(self, content: Any, tangles: dict[str, bytes | None] | None = None) -> dict:
        return await self.request("publish", content=content, tangles=tangles or {})

    async def get(self, message_id: bytes) -> dict:
        return await self.request("get", message=message_id)

    async def timeline(self, *, start: int = 0, limit: int = 1000, **which: Any) -> dict:
        """`which`: spacetime=True, or tangle=NAME and root=ID."""
        return await self.request("timeline", start=start, limit=limit, **which)

    async def status(self) -> dict:
        return await self.request("status")

    async def connect_peer(self, address: str, key: bytes) -> dict:
        return await self.request("connect", address=address, key=key)

    def subscribe(self, *, since: int | None = None, **which: Any) -> AsyncGenerator[dict, None]:
        """Follow one timeline live: its order, then each change to it (docs/IPC.md, "Streams").

        `which` names the timeline, as for `timeline`:

        - `spacetime=True`, every feed's messages; or `tangle=NAME, root=ROOT`, the
          tangle NAME rooted at message ROOT (its id as 32 bytes: `parse_message_id("%…")`
          turns the text the CLI shows into them); a tangle not seen yet starts empty at
          version 0 and fills when it arrives;
        - `order="rank"` (the default) or `"causal-time"` (entries sort by claimed time);
        - `view="all"` (the default) or `"joined"`, a tangle's joined view.

        `since`: None to start from a snapshot of the whole order, or the last version
        the caller applied (a command's `v`, a `lagged` version) to resume right after
        it; a version the timeline never had, or one whose following commands its log
        no longer holds (it keeps its newest: docs/IPC.md), gets a snapshot too.

        The first item is `{"started": {"version": V, "snapshot": bool}}`; then, if
        `snapshot`, `{"snapshot": [[rank, id], ...], "start": position}` pages of the
        order at V; then `{"commands": [...]}` events, each command `{"v": version,
        "ins": position, "message": body}` (the message as `get` gives it, or its id alone
        if the node no longer holds it), `{"v", "mov": [from, to]}` or `{"v", "del":
        position}` (a spacetime's events also carry `final`), and `{"lagged": version}`
        just before the node drops a subscriber that stopped reading, or whose next
        command the log dropped before it was sent. Ids are bytes
        (`message_text` shows one as `%…`). It runs until the caller stops iterating:
        close it with `contextlib.aclosing`. An error reply raises `NodeError`.
        """
        return self._streaming("subscribe", since=since, **which)

    def doc_watch(self, doc: bytes, *, since: int | None = None) -> AsyncGenerator[dict, None]:
        """Document `doc`'s text: a snapshot (unless `since` still resumes), then splices."""
        return self._streaming("doc-watch", doc=doc, since=since)

    def watch_processed(self, start: int = 0) -> AsyncGenerator[dict, None]:
        """The processed order from index `start`: {"processed": [{"index", "message"}]}."""
        return self._streaming("watch-processed", start=start)

    async def _streaming(self, op: str, **arguments: Any) -> AsyncGenerator[dict, None]:
        number = await self._send(op, **arguments)
        self._stream_op = op
        try:
            started = await self._reply(number)
        except NodeError:  # no stream: a refused one leaves the connection to requests
            self._stream_op = None
            raise
        yield {"started": started}
        while True:
            frame = await self._frame()
            if "error" in frame:
                raise error_from(frame)
            yield frame["event"]


async def connect(path: Path) -> NodeClient:
    """Connect to the node at `path`; raises NodeNotRunning if nothing listens there."""
    try:
        stream = await trio.open_unix_socket(str(path))
    except (FileNotFoundError, ConnectionRefusedError):
        raise not_running(path) from None
    return NodeClient(stream)
