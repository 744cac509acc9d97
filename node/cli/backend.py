"""Where a `tangled` command's questions go: the running node, or the store opened here.

Theory of operation
-------------------
A command asks through one object, `Backend`, and one method, `call(op,
**arguments)`: an IPC op of docs/IPC.md, whose reply's value it returns.
The first call decides where they all go. If a node answers on the IPC
socket, to it, with the blocking client (node/ipc/oneshot.py). If not, to the
store opened in this process and served by the node's own table of handlers
(`node.ipc.ops.OPS`, through `node.ipc.ops.answer`): the request and the reply are
encoded and decoded as the socket would carry them, so both paths give the
same replies and the same errors. A command that writes (an op that signs:
`publish`, the group and document edits) takes the data directory's lock
there first (storage/feeds/datalock.py) and opens the store with our key; one
that reads takes no lock (LMDB readers never disturb a writer) and reads
our key only for the ops that open groups. The ops only a running node
answers (its status, peers and clock, `connect`; the streams, which the
commands that follow them ask over node/ipc/client.py) say it is not running.

Error replies raise as the CLI reports them (`translated`): `not-found` as
`NotFound` (exit 4), a refused input as `BadInput` (3), the rest as
`NodeError` (1). A data directory that does not exist is not a node that
is not running: every command says so (exit 4) before anything else.

Nothing heavy loads until the store is opened here: a command the running
node answers imports neither Trio nor the store (docs/BENCHMARKS.md,
"Start-up").
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tanglenode.node.cli.support import Context, translated
from tanglenode.node.ipc.oneshot import NodeError, NodeNotRunning, not_running, request

if TYPE_CHECKING:
    from tanglenode.protocol.identity import Keypair
    from tanglenode.storage.store import FeedStore

__all__ = ["Backend", "ask", "call_store", "store_asker"]


class Backend:
    """The running node over its socket, or the store opened here (see the module doc).

    `with Backend(obj) as node: node.call("timeline", spacetime=True)`; `writes`
    says up front that the command will write, so a store opened here is opened
    for it at once.
    """

    def __init__(self, obj: Context, *, writes: bool = False) -> None:
        obj.require_data_dir()  # a mistyped --data-dir is not a stopped node
        self.obj, self.writes = obj, writes
        self.socket_path: Path = obj.settings.ipc_socket_path
        self.remote: bool | None = None  # None until the first call decides
        self._here: _Here | None = None
        self._beside: Any = None  # a store opened to read beside the running node

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if self._here is not None:
            self._here.close()
            self._here = None
        if self._beside is not None:
            self._beside.close()
            self._beside = None

    def call(self, op: str, **arguments: Any) -> Any:
        """The reply's value to `op`, from the node or the store here; errors translated."""
        if self.remote is not False:
            try:
                reply = request(self.socket_path, op, **arguments)
            except NodeNotRunning:
                if self.remote:  # it was running: it went away meanwhile
                    raise
                self.remote = False
            except NodeError as error:
                self.remote = True
                raise translated(error) from None
            else:
                self.remote = True
                return reply
        if self._here is None:
            self._here = _Here(self.obj, self.socket_path, writes=self.writes)
        try:
            return self._here.call(op, arguments)
        except NodeError as error:
            raise translated(error) from None

    @property
    def running(self) -> bool:
        """Whether the calls go to the running node (asked now, if no call said yet)."""
        if self.remote is None:
            from tanglenode.node.ipc.oneshot import listening

            self.remote = listening(self.socket_path)
        return self.remote

    def store(self) -> FeedStore | None:
        """A store to read messages from, for showing them: the one opened here, else one
        opened beside the running node (LMDB readers share it); None where there is none."""
        if self._here is not None and self._here.store is not None:
            return self._here.store
        if self._beside is None:
            from tanglenode.node.cli.support import NotFound

            try:
                self._beside = self.obj.open_store()
            except NotFound:
                return None
        return self._beside


def publish_content(obj: Context, value: Any, tangles: dict[str, bytes | None]) -> dict[str, Any]:
    """Publish `value` through the node, or into the store here while it is stopped."""
    from tanglenode.node.present.render import render_body

    with Backend(obj, writes=True) as node:
        return render_body(node.call("publish", content=value, tangles=tangles))


def ask(obj: Context, op: str, **arguments: Any) -> Any:
    """One question: `Backend(obj).call(op, **arguments)`, closed after."""
    with Backend(obj) as backend:
        return backend.call(op, **arguments)


class _Here:
    """The store opened in this process, served by the node's handlers (`node.ipc.ops.OPS`)."""

    def __init__(self, obj: Context, socket_path: Path, *, writes: bool) -> None:
        self.obj, self.socket_path, self.writes = obj, socket_path, writes
        self.store: FeedStore | None = None
        self.service: Any = None
        self.lock: Any = None
        self._keypair: Keypair | None = None

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = self.service = None
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    def call(self, op: str, arguments: dict[str, Any]) -> Any:
        from tanglenode.node.ipc.ops import OPS

        row = OPS.get(op)
        if row is not None and row.node:
            raise not_running(self.socket_path)
        self._open(row is not None and row.writes)
        keypair = self._key() if row is not None and row.key else None
        return call_store(self.service, keypair, op, **arguments)

    def _open(self, writes: bool) -> None:
        """Open the store (again, with our key under the lock, for the first write)."""
        if self.store is not None and (self.lock is not None or not writes):
            return
        from tanglenode.node.service.store_service import StoreService

        if self.store is not None:  # opened to read; a write needs the lock and our key
            self.store.close()
            self.store = self.service = None
        if writes or self.writes:
            self.lock = self._lock()
            self.store = self.obj.open_store(keypair=self._key())
        else:
            self.store = self.obj.open_store()
        self.service = StoreService(self.store, hops=self.obj.settings.replication.scope_hops())

    def _lock(self) -> Any:
        from tanglenode.storage.errors import DataDirInUse

        try:
            return self.obj.lock_data_dir(_purpose())
        except DataDirInUse as error:
            if error.purpose != "run":
                raise
            raise DataDirInUse(  # started after we looked, or listening elsewhere
                f"the node is running (process {error.pid}) but does not answer on "
                f"{self.socket_path}; try again once it does",
                error.pid,
                error.purpose,
            ) from None

    def _key(self) -> Keypair:
        if self._keypair is None:
            from tanglenode.config.secret import read_secret

            self._keypair = read_secret(self.obj.settings.secret_path)
        return self._keypair


def call_store(service: Any, keypair: Keypair | None, op: str, **arguments: Any) -> Any:
    """`op` answered by the node's own handler (`node.ipc.ops.answer`) on the store of `service`
    (a `StoreService`), with `keypair` as ours: the request and the reply encoded and
    decoded as the socket carries them. The reply's value; an error reply raises
    `NodeError`, as the blocking client's would."""
    import trio

    from tanglenode.node.ipc.area import Area
    from tanglenode.node.ipc.oneshot import reply_value
    from tanglenode.node.ipc.ops import answer
    from tanglenode.protocol.framing import encode_frame

    frame = _decoded(encode_frame({"op": op, "id": 1, **arguments}))  # as the node reads it
    reply = trio.run(answer, Area(service, keypair), 1, op, frame)
    return reply_value(_decoded(reply), 1)  # as the client reads it


def store_asker(store: FeedStore) -> Callable[..., Any]:
    """`call(op, **arguments)` answered on `store`, a store this command opened already
    (LMDB opens a store once a process), as `Backend.call` answers on one of its own;
    nothing more loads until it is called."""

    def call(op: str, **arguments: Any) -> Any:
        from tanglenode.node.service.store_service import StoreService

        return call_store(StoreService(store), None, op, **arguments)

    return call


def _purpose() -> str:
    """What the lock's holder says it does: the command (`doc edit`), as others see it."""
    import click

    context = click.get_current_context(silent=True)
    if context is None:
        return "write"
    return context.command_path.partition(" ")[2] or "write"


def _decoded(frame: bytes) -> Any:
    """The value of one encoded frame, read back as the other end of the socket reads it."""
    from tanglenode.protocol.framing import MAX_IPC_FRAME, FrameDecoder

    reader = FrameDecoder(MAX_IPC_FRAME)
    reader.receive_data(frame)
    return reader.next_frame()
