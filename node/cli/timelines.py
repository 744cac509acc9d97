"""`tangled timeline` and `tangled watch`: a timeline read once, or followed live.

`timeline` asks through node/cli/backend.py (the IPC ops `timeline`,
`commands` and `placement`): the running node, or its own handlers on the
store opened here while it is stopped. `watch` follows the running node.
"""

from __future__ import annotations

from contextlib import aclosing
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import click
import trio

from tanglenode.node.cli.backend import Backend
from tanglenode.node.cli.digest import show_digest
from tanglenode.node.cli.lookup import message_arg
from tanglenode.node.cli.summary import Viewer, fit, open_viewer
from tanglenode.node.cli.support import (
    COUNT,
    INDEX,
    JOINED_OPTION,
    ORDER_OPTION,
    BadInput,
    Context,
    NotFound,
    emit_json,
    json_option,
    timeline_spec,
)
from tanglenode.node.ipc.client import NodeError, NodeNotRunning, connect
from tanglenode.node.present.render import TIME_WIDTH, format_timestamp
from tanglenode.protocol.errors import TanglenodeError
from tanglenode.protocol.identity import message_text
from tanglenode.protocol.ipc import PAGE, ErrorKind
from tanglenode.storage.engine.causal_key import MAX_TIME
from tanglenode.storage.engine.causal_window import WINDOW_MODES
from tanglenode.storage.engine.timeline import Command, Delete, Insert, Move

if TYPE_CHECKING:
    from tanglenode.storage.store import FeedStore


class ClaimedTime(click.ParamType):
    """A claimed time: integer milliseconds since the epoch, or ISO-8601 (UTC if no zone)."""

    name = "TIME"

    def convert(self, value: Any, param: Any, ctx: Any) -> int:
        if isinstance(value, int):
            return value
        text = str(value).strip()
        try:
            if text.isdigit():
                millis = int(text)
            else:
                moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
                if moment.tzinfo is None:
                    moment = moment.replace(tzinfo=UTC)
                millis = round(moment.timestamp() * 1000)
        except (ValueError, OverflowError):
            self.fail(f"{text!r} is neither milliseconds nor an ISO-8601 time", param, ctx)
        if not 0 <= millis <= MAX_TIME:
            self.fail(f"{text!r} is outside 0 to 2**64 - 1 milliseconds", param, ctx)
        return millis


def _label(which: dict[str, Any], spec: str | None) -> str:
    """How the timeline `timeline_spec` named is called in messages."""
    view, order = which.get("view", "all"), which["order"]
    label = "spacetime" if spec is None else str(spec)
    extras = [word for word in (view, order) if word not in ("all", "rank")]
    return label + "".join(f" ({word})" for word in extras)


@click.command()
@click.argument("spec", required=False, metavar="[NAME/ROOT]")
@click.option("--spacetime", is_flag=True, help="The timeline of all feeds.")
@click.option("--start", type=INDEX, default=0, help="First position.")
@click.option("--limit", type=COUNT, default=None, help="At most this many.")
@click.option("--at", "at_id", metavar="ID", help="Print only this message's position and rank.")
@JOINED_OPTION
@ORDER_OPTION
@click.option(
    "--from-time",
    type=ClaimedTime(),
    help="Causal-time window: from this time (ms since the epoch, or ISO-8601).",
)
@click.option(
    "--to-time",
    type=ClaimedTime(),
    help="Causal-time window: to this time (ms since the epoch, or ISO-8601).",
)
@click.option(
    "--window",
    "mode",
    type=click.Choice(WINDOW_MODES),
    default="implied",
    show_default=True,
    help="implied: the stored order's stretch between the first and last message in the "
    "window; strict: only the messages in it, sorted among themselves.",
)
@click.option(
    "--since",
    type=INDEX,
    default=None,
    metavar="VERSION",
    help="Print the ins/mov/del commands after this version instead of the order "
    "(not found, exit 4, once the log dropped them: [timelines] keep_commands).",
)
@click.option(
    "--digest",
    is_flag=True,
    help="Print only the count and digest (hash of the order): equal on nodes that agree.",
)
@json_option
@click.pass_obj
def timeline(
    obj: Context,
    spec: str | None,
    spacetime: bool,
    start: int,
    limit: int | None,
    at_id: str | None,
    joined: bool,
    order: str,
    from_time: int | None,
    to_time: int | None,
    mode: str,
    since: int | None,
    digest: bool,
    as_json: bool,
) -> None:
    """Print a tangle's timeline (NAME/ROOT) or the spacetime: order, position or commands."""
    which = timeline_spec(spec, spacetime, joined, order, lambda root: message_arg(obj, root))
    label = _label(which, spec)
    if digest:
        given = {"--at": at_id, "--since": since, "--limit": limit, "--from-time": from_time}
        given |= {"--to-time": to_time, "--start": start or None}
        clash = [option for option, value in given.items() if value is not None]
        if clash:
            raise click.UsageError(f"--digest covers the whole timeline: drop {', '.join(clash)}")
        return show_digest(obj, which, label, as_json)
    with Backend(obj) as backend:
        source = _Timelines(backend, which)
        try:
            source.version()
        except NotFound:
            raise NotFound(f"no timeline {label} in the store") from None
        value = "time" if order == "causal-time" else "rank"  # what entries sort by
        if at_id is not None:
            found = source.placement(message_arg(obj, at_id, backend.call), at_id, label)
            if as_json:
                emit_json({"id": at_id, **found})
            else:
                click.echo(_placement_text(found))
            return
        viewer = open_viewer(obj, backend.store(), as_json=as_json)
        if from_time is not None or to_time is not None:
            if order != "causal-time":
                raise BadInput("--from-time/--to-time need --order causal-time")
            window = (
                0 if from_time is None else from_time,
                MAX_TIME if to_time is None else to_time,
            )
            if window[0] > window[1]:
                raise BadInput("--from-time is after --to-time")
            first, entries = source.window(*window, mode, start, limit)
            offset = start if first is None else first  # strict: index inside the window
            where = "position" if first is not None else "index"
            if not as_json:
                ids = viewer.id_width(len(f"{0:>8}  {0:>{TIME_WIDTH}}  "))
                columns = f"{where.upper():>8}  {'TIME':>{TIME_WIDTH}}  {'ID':<{ids}}"
                click.echo(fit(viewer.header(columns), viewer.width))
            for index, (time, msg_id) in enumerate(entries, offset):
                if as_json:
                    record = {where: index, "time": time, "id": message_text(msg_id)}
                    emit_json(record | viewer.fields(viewer.message(msg_id)))
                else:
                    shown = f"{format_timestamp(time):>{TIME_WIDTH}}  {viewer.id_text(msg_id, ids)}"
                    click.echo(viewer.row(f"{index:>8}  {shown}", msg_id))
            return
        if since is not None:
            for number, command in enumerate(source.commands(since), since + 1):
                _echo_command(viewer, number, command, as_json)
            return
        header, wide = False, _key_width(value)
        ids = 0  # the ids' columns, once the first row says whether a state column follows
        for position, (rank, msg_id, *state) in enumerate(source.entries(start, limit), start):
            if as_json:
                record = {"position": position, value: rank, "id": message_text(msg_id)}
                record |= {"state": state[0]} if state else {}
                emit_json(record | viewer.fields(viewer.message(msg_id)))
                continue
            if not header:
                header = True
                states = f"  {'STATE':<8}" if state else ""
                ids = viewer.id_width(len(f"{0:>6}  {0:>{wide}}  "), len(states))
                columns = f"{'POS':>6}  {value.upper():>{wide}}  {'ID':<{ids}}{states}"
                click.echo(fit(viewer.header(columns), viewer.width))
            shown = f"  {state[0]:<8}" if state else ""
            key = _key_text(value, rank)
            text = f"{position:>6}  {key:>{wide}}  {viewer.id_text(msg_id, ids)}{shown}"
            click.echo(viewer.row(text, msg_id))


def _key_width(value: str) -> int:
    """Columns of what a timeline's entries sort by: a time, or a rank."""
    return TIME_WIDTH if value == "time" else 6


def _key_text(value: str, key: int) -> str:
    """An entry's sort key for a person: a causal time as every time is shown, or a rank."""
    return format_timestamp(key) if value == "time" else str(key)


def _store_or_none(obj: Context) -> FeedStore | None:
    """The store, read beside the running node for the messages' content; None if absent."""
    try:
        return obj.open_store()
    except NotFound:
        return None


def _placement_text(found: dict[str, Any]) -> str:
    """`position P  rank R`, then the state in a tangle's timeline (what it waits on, or why
    it is invalid)."""
    where = (
        f"time {format_timestamp(found['time'])}" if "time" in found else f"rank {found['rank']}"
    )
    text = f"position {found['position']}  {where}"
    if "state" in found:
        text += f"  {found['state']}"
    if found.get("waiting"):
        text += "  waiting on " + " ".join(found["waiting"])
    if found.get("reason"):
        text += f"  ({found['reason']})"
    return text


class _Timelines:
    """`tangled timeline`'s reads of one timeline, `which` as the IPC requests name it, a
    page at a time (node/cli/backend.py)."""

    PAGE = 10_000  # entries per request (the node caps a reply at 50,000)

    def __init__(self, backend: Backend, which: dict[str, Any]) -> None:
        self.backend, self.which = backend, which

    def _call(self, op: str, **arguments: Any) -> Any:
        return self.backend.call(op, **self.which, **arguments)

    def version(self) -> int:
        return self._call("timeline", limit=0)["version"]

    def placement(self, msg_id: bytes, shown: str, label: str) -> dict[str, Any]:
        try:
            found = self._call("placement", message=msg_id)
        except NotFound:
            raise NotFound(f"{shown} is not in timeline {label}") from None
        if "waiting" in found:
            found["waiting"] = [message_text(bytes(p)) for p in found["waiting"]]
        return found

    def window(self, low: int, high: int, mode: str, start: int, limit: int | None):
        """Where the window's entries start (None: strict), and its entries from `start`."""
        window = {"from_time": low, "to_time": high, "window": mode}
        first, entries = None, []
        while limit is None or len(entries) < limit:
            size = self.PAGE if limit is None else min(self.PAGE, limit - len(entries))
            reply = self._call("timeline", **window, start=start + len(entries), limit=size)
            if not entries:
                first = reply["start"]
            entries.extend((time, msg_id) for time, msg_id, *_state in reply["entries"])
            if len(reply["entries"]) < size:
                break
        return first, entries

    def commands(self, since: int) -> list[Command]:
        commands: list[Command] = []
        while True:  # pages of at most 50,000 (the node's cap per reply)
            page = self._call("commands", since=since + len(commands), limit=50_000)["commands"]
            commands.extend(
                Insert(c["ins"], c["id"])
                if "ins" in c
                else Delete(c["del"])
                if "del" in c
                else Move(*c["mov"])
                for c in page
            )
            if not page:
                return commands

    def entries(self, start: int, limit: int | None) -> list[tuple]:
        entries: list[tuple] = []
        while limit is None or len(entries) < limit:
            size = self.PAGE if limit is None else min(self.PAGE, limit - len(entries))
            page = self._call("timeline", start=start + len(entries), limit=size)["entries"]
            entries.extend(tuple(entry) for entry in page)
            if len(page) < size:
                break
        return entries


def _echo_command(viewer: Viewer, number: int, command: Command, as_json: bool) -> None:
    if isinstance(command, Insert):
        record = {
            "version": number,
            "op": "ins",
            "pos": command.pos,
            "id": message_text(command.id),
        }
        if as_json:
            emit_json(record | viewer.fields(viewer.message(command.id)))
        else:
            prefix = f"{number}  ins {command.pos} "
            shown = viewer.id_text(command.id, viewer.id_width(len(prefix)))
            click.echo(viewer.row(prefix + shown, command.id))
        return
    if isinstance(command, Delete):
        record = {"version": number, "op": "del", "pos": command.pos}
        text = f"{number}  del {command.pos}"
    else:
        record = {"version": number, "op": "mov", "from": command.src, "to": command.dst}
        text = f"{number}  mov {command.src} {command.dst}"
    if as_json:
        emit_json(record)
    else:
        click.echo(text)


# -- watch ------------------------------------------------------------------------------

RECONNECT_WAIT = 60.0  # seconds `watch` waits for a node that went away, by default


class NodeGone(TanglenodeError):
    """`watch`: the node went away and its socket did not come back in time (exit 1)."""


@click.command()
@click.argument("spec", required=False, metavar="[NAME/ROOT]")
@click.option("--spacetime", is_flag=True, help="The timeline of all feeds.")
@click.option(
    "--since",
    type=INDEX,
    default=None,
    metavar="VERSION",
    help="Skip the snapshot: print the commands after VERSION, then each change (a "
    "snapshot after all if the log no longer holds them: [timelines] keep_commands).",
)
@click.option(
    "--count",
    type=COUNT,
    default=None,
    help="Stop after N changes (ins/mov/del) following the snapshot; snapshot rows do not count.",
)
@click.option(
    "--reconnect-wait",
    type=click.FloatRange(0, 86_400),
    default=RECONNECT_WAIT,
    show_default=True,
    metavar="SECONDS",
    help="When the node goes away, wait this long for it to come back, then exit 1; "
    "on its return, resume after the last version printed.",
)
@JOINED_OPTION
@ORDER_OPTION
@json_option
@click.pass_obj
def watch(
    obj: Context,
    spec: str | None,
    spacetime: bool,
    since: int | None,
    count: int | None,
    reconnect_wait: float,
    joined: bool,
    order: str,
    as_json: bool,
) -> None:
    """Follow NAME/ROOT (or --spacetime) live: its snapshot, or the commands after VERSION,
    then each change.

    Rows show position, rank (or claimed time for --order causal-time), id, author,
    time and what the message says; changes are `VERSION ins POS ID ...`,
    `VERSION mov FROM TO` and `VERSION del POS`. If the node restarts, watch says so
    on stderr, waits for it (--reconnect-wait) and resumes after the last version it
    printed; if the timeline's log no longer holds what followed it (the log keeps its
    newest commands), it says so and prints a new snapshot. --json: one object per
    line: `{"version", "snapshot"}` when a subscription starts, then snapshot rows and
    commands as `timeline --json` and `timeline --since --json` print them, with author,
    timestamp and summary added.
    """
    which = timeline_spec(spec, spacetime, joined, order, lambda root: message_arg(obj, root))
    store = _store_or_none(obj)
    try:
        follower = _Follower(obj, which, open_viewer(obj, store, as_json=as_json), as_json, count)
        trio.run(follower.run, since, reconnect_wait)
    except NodeNotRunning:
        obj.require_data_dir()  # a mistyped --data-dir says so
        raise
    finally:
        if store is not None:
            store.close()


class _Follower:
    """One `watch`: prints what a subscription sends, and resubscribes after the last
    version printed when the node goes away (or drops us for lagging)."""

    def __init__(
        self,
        obj: Context,
        which: dict[str, Any],
        viewer: Viewer,
        as_json: bool,
        count: int | None,
    ) -> None:
        self.obj, self.which, self.viewer = obj, which, viewer
        self.as_json, self.count = as_json, count
        self.value = "time" if which.get("order") == "causal-time" else "rank"
        self.wide = _key_width(self.value)  # a time (render.format_timestamp), or a rank
        self.ids = viewer.id_width(len(f"{0:>6}  {0:>{self.wide}}  "))  # short on a narrow tty
        self.last: int | None = None  # the last version printed (a snapshot's, or a command's)
        self.changes = 0
        self.subscriptions = 0
        self.cut_short = False  # a snapshot started whose last page has not come yet

    async def run(self, since: int | None, reconnect_wait: float) -> None:
        path = self.obj.settings.ipc_socket_path
        client = await connect(path)  # not running at all: NodeNotRunning, exit 1
        self.last = since
        while True:
            # A snapshot cut short (the node went away between its pages) cannot be resumed
            # by version: the rows it still owed would be lost. Ask for a new one instead.
            resume = None if self.cut_short else self.last
            try:
                async with client, aclosing(client.subscribe(since=resume, **self.which)) as ev:
                    if await self._follow(ev):
                        return
                    warn = f"fell behind at version {self.last}; resuming"
            except (NodeError, trio.BrokenResourceError, OSError) as error:
                if isinstance(error, NodeError) and error.kind != ErrorKind.DISCONNECTED:
                    raise
                warn = f"the node went away at version {self.last}; waiting for it"
            click.echo(f"tangled: {warn} (up to {reconnect_wait:g} s)", err=True)
            client = await self._reconnect(path, reconnect_wait)
            if self.cut_short:
                click.echo(
                    "tangled: reconnected; the snapshot may have been cut short: a new one",
                    err=True,
                )
            else:
                click.echo(f"tangled: reconnected; resuming after version {self.last}", err=True)

    async def _reconnect(self, path: Any, wait: float) -> Any:
        delay = 0.02
        with trio.move_on_after(wait):
            while True:  # nothing to await but the socket's return: poll, backing off
                try:
                    return await connect(path)
                except NodeNotRunning:
                    await trio.sleep(delay)
                    delay = min(delay * 2, 0.5)
        resume = "" if self.last is None or self.cut_short else f"; resume with --since {self.last}"
        raise NodeGone(f"the node did not come back within {wait:g} s{resume}")

    async def _follow(self, events: Any) -> bool:
        """Print events until --count is reached (True) or the node drops us (False)."""
        async for event in events:
            if "started" in event:
                self._started(event["started"])
            elif "snapshot" in event:
                for offset, (rank, msg_id) in enumerate(event["snapshot"]):
                    self._snapshot_row(event["start"] + offset, rank, msg_id)
                # the node sends a snapshot's pages back to back, full ones but the last
                self.cut_short = len(event["snapshot"]) >= PAGE
            elif "lagged" in event:
                return False
            else:
                self.cut_short = False
                for command in event["commands"]:
                    self._command(command)
                    self.last = command["v"]
                    self.changes += 1
                    if self.count is not None and self.changes >= self.count:
                        return True
        return False

    def _started(self, started: dict[str, Any]) -> None:
        version, snapshot = started["version"], started["snapshot"]
        resumed = self.subscriptions > 0
        self.subscriptions += 1
        if snapshot and self.last is not None and not self.cut_short:
            why = "is not at" if self.last > version else "no longer has"
            click.echo(f"tangled: the node {why} version {self.last}; a new snapshot", err=True)
        self.last = version
        self.cut_short = snapshot  # until a page shorter than a full one, or a command, comes
        if self.as_json:
            emit_json({"version": version, "snapshot": snapshot})
        elif snapshot or not resumed:
            click.echo(f"# version {version}")
            if snapshot:
                columns = f"{'POS':>6}  {self.value.upper():>{self.wide}}  {'ID':<{self.ids}}"
                click.echo(fit(self.viewer.header(columns), self.viewer.width))

    def _snapshot_row(self, position: int, rank: int, msg_id: bytes) -> None:
        if self.as_json:
            record = {"position": position, self.value: rank, "id": message_text(msg_id)}
            emit_json(record | self.viewer.fields(self.viewer.message(msg_id)))
        else:
            shown = self.viewer.id_text(msg_id, self.ids)
            text = f"{position:>6}  {_key_text(self.value, rank):>{self.wide}}  {shown}"
            click.echo(self.viewer.row(text, msg_id))

    def _command(self, wire: dict[str, Any]) -> None:
        if "ins" in wire:
            body = wire["message"]
            command: Command = Insert(wire["ins"], body["id"] if isinstance(body, dict) else body)
        elif "del" in wire:
            command = Delete(wire["del"])
        else:
            command = Move(*wire["mov"])
        _echo_command(self.viewer, wire["v"], command, self.as_json)
