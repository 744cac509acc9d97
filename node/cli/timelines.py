"""`tangled timeline` and `tangled watch`: a timeline read once, or followed live.

While the node runs both ask it over IPC; `timeline` reads the store
directly when it is stopped.
"""

from __future__ import annotations

from contextlib import aclosing
from datetime import UTC, datetime
from typing import Any

import click
import trio

from tanglenode.node.cli.support import (
    COUNT,
    INDEX,
    JOINED_OPTION,
    ORDER_OPTION,
    BadInput,
    Context,
    NotFound,
    call_node,
    emit_json,
    json_option,
    node_running,
    timeline_spec,
)
from tanglenode.node.client import connect
from tanglenode.protocol.identity import message_text, parse_message_id
from tanglenode.storage.causal_key import MAX_TIME
from tanglenode.storage.causal_window import WINDOW_MODES
from tanglenode.storage.errors import UnknownTimeline
from tanglenode.storage.store import FeedStore
from tanglenode.storage.timeline import Command, Delete, Insert, Move


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


def _store_timeline(which: dict[str, Any], spec: str | None) -> tuple[bytes, str]:
    """The store's name of the timeline `timeline_spec` named, and its label."""
    view, order = which.get("view", "all"), which["order"]
    name = FeedStore.timeline_name(which.get("root"), which.get("tangle"), view, order)
    label = "spacetime" if spec is None else str(spec)
    extras = [word for word in (view, order) if word not in ("all", "rank")]
    return name, label + "".join(f" ({word})" for word in extras)


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
    help="Print the ins/mov/del commands after this version instead of the order.",
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
    as_json: bool,
) -> None:
    """Print a tangle's timeline (NAME/ROOT) or the spacetime: order, position or commands."""
    which = timeline_spec(spec, spacetime, joined, order)
    name, label = _store_timeline(which, spec)
    if obj.settings.ipc_socket_path.is_socket() and trio.run(node_running, obj):
        source: Any = _NodeTimelines(obj, which)
    else:  # the node is stopped: read the store directly
        source = _StoreTimelines(obj.open_store(), name)
    with source:
        try:
            source.version()
        except UnknownTimeline:
            raise NotFound(f"no timeline {label} in the store") from None
        value = "time" if order == "causal-time" else "rank"  # what entries sort by
        if at_id is not None:
            found = source.placement(parse_message_id(at_id), at_id, label)
            if as_json:
                emit_json({"id": at_id, **found})
            else:
                click.echo(_placement_text(found))
            return
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
            for index, (time, msg_id) in enumerate(entries, offset):
                where = "position" if first is not None else "index"
                if as_json:
                    emit_json({where: index, "time": time, "id": message_text(msg_id)})
                else:
                    click.echo(f"{index:>6}  {time:>6}  {message_text(msg_id)}")
            return
        if since is not None:
            for number, command in enumerate(source.commands(since), since + 1):
                _echo_command(number, command, as_json)
            return
        for position, (rank, msg_id, *state) in enumerate(source.entries(start, limit), start):
            if as_json:
                record = {"position": position, value: rank, "id": message_text(msg_id)}
                emit_json(record | ({"state": state[0]} if state else {}))
            else:
                shown = f"  {state[0]}" if state else ""
                click.echo(f"{position:>6}  {rank:>6}  {message_text(msg_id)}{shown}")


def _placement_text(found: dict[str, Any]) -> str:
    """`position P  rank R`, then the state in a tangle's timeline (what it waits on, or why
    it is invalid)."""
    where = f"time {found['time']}" if "time" in found else f"rank {found['rank']}"
    text = f"position {found['position']}  {where}"
    if "state" in found:
        text += f"  {found['state']}"
    if found.get("waiting"):
        text += "  waiting on " + " ".join(found["waiting"])
    if found.get("reason"):
        text += f"  ({found['reason']})"
    return text


class _StoreTimelines:
    """`tangled timeline` reading the store itself (the node is not running)."""

    def __init__(self, store: FeedStore, name: bytes) -> None:
        self.store, self.name = store, name

    def __enter__(self):
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.store.close()

    def version(self) -> int:
        return self.store.timeline_version(self.name)

    def placement(self, msg_id: bytes, shown: str, label: str) -> dict[str, Any]:
        found = self.store.timeline_member(self.name, msg_id)
        if found is None:
            raise NotFound(f"{shown} is not in timeline {label}")
        placement, state = found
        reply: dict[str, Any] = {"position": placement.position}
        if placement.time is None:
            reply["rank"] = placement.rank
        else:
            reply["time"] = placement.time
        reply |= state.fields() if state is not None else {}
        if "waiting" in reply:
            reply["waiting"] = [message_text(p) for p in reply["waiting"]]
        return reply

    def commands(self, since: int) -> list[Command]:
        return self.store.timeline_commands(self.name, since)

    def window(self, low: int, high: int, mode: str, start: int, limit: int | None):
        _version, first, entries = self.store.timeline_window(
            self.name, low, high, mode, start, limit
        )
        return first, entries

    def entries(self, start: int, limit: int | None) -> list[tuple]:
        stop = None if limit is None else start + limit
        return self.store.timeline_at(self.name, start, stop, states=True)[1]


class _NodeTimelines:
    """`tangled timeline` asking the running node over IPC."""

    def __init__(self, obj: Context, which: dict[str, Any]) -> None:
        self.obj, self.which = obj, which

    def __enter__(self):
        return self

    def __exit__(self, *exc_info: object) -> None:
        pass

    def _call(self, op: str, **arguments: Any) -> Any:
        try:
            return trio.run(call_node, self.obj, op, {**self.which, **arguments})
        except NotFound as error:
            raise UnknownTimeline(str(error)) from None

    def version(self) -> int:
        return self._call("timeline", limit=0)["version"]

    def placement(self, msg_id: bytes, shown: str, label: str) -> dict[str, Any]:
        try:
            found = trio.run(call_node, self.obj, "placement", {**self.which, "message": msg_id})
        except NotFound:
            raise NotFound(f"{shown} is not in timeline {label}") from None
        if "waiting" in found:
            found["waiting"] = [message_text(bytes(p)) for p in found["waiting"]]
        return found

    def window(self, low: int, high: int, mode: str, start: int, limit: int | None):
        window = {"from_time": low, "to_time": high, "window": mode, "start": start}
        reply = self._call("timeline", **window, limit=10_000 if limit is None else limit)
        return reply["start"], [(time, msg_id) for time, msg_id, *_state in reply["entries"]]

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
            page_size = 10_000 if limit is None else min(10_000, limit - len(entries))
            page = self._call("timeline", start=start + len(entries), limit=page_size)["entries"]
            entries.extend(tuple(entry) for entry in page)
            if len(page) < page_size:
                break
        return entries


def _echo_command(number: int, command: Command, as_json: bool) -> None:
    if isinstance(command, Insert):
        record = {
            "version": number,
            "op": "ins",
            "pos": command.pos,
            "id": message_text(command.id),
        }
        text = f"{number}  ins {command.pos} {record['id']}"
    elif isinstance(command, Delete):
        record = {"version": number, "op": "del", "pos": command.pos}
        text = f"{number}  del {command.pos}"
    else:
        record = {"version": number, "op": "mov", "from": command.src, "to": command.dst}
        text = f"{number}  mov {command.src} {command.dst}"
    if as_json:
        emit_json(record)
    else:
        click.echo(text)


@click.command()
@click.argument("spec", required=False, metavar="[NAME/ROOT]")
@click.option("--spacetime", is_flag=True, help="The timeline of all feeds.")
@click.option("--since", type=INDEX, default=None, help="Resume after VERSION.")
@click.option("--count", type=COUNT, default=None, help="Stop after N commands.")
@JOINED_OPTION
@ORDER_OPTION
@click.pass_obj
def watch(
    obj: Context,
    spec: str | None,
    spacetime: bool,
    since: int | None,
    count: int | None,
    joined: bool,
    order: str,
) -> None:
    """Follow NAME/ROOT live: its snapshot (or commands since VERSION), then each change."""
    which = timeline_spec(spec, spacetime, joined, order)
    trio.run(_watch, obj, which, since, count)


async def _watch(obj: Context, which: dict[str, Any], since: int | None, count: int | None) -> None:
    seen = 0
    async with (
        await connect(obj.settings.ipc_socket_path) as client,
        aclosing(client.subscribe(since=since, **which)) as events,
    ):
        async for event in events:
            if "started" in event:
                click.echo(f"# version {event['started']['version']}")
            elif "snapshot" in event:
                for offset, (rank, msg_id) in enumerate(event["snapshot"]):
                    click.echo(f"{event['start'] + offset} {rank} {message_text(msg_id)}")
            elif "lagged" in event:
                raise BadInput(f"fell behind; resume with --since {event['lagged']}")
            else:
                for command in event["commands"]:
                    if "ins" in command:
                        body = command["message"]
                        msg_id = body["id"] if isinstance(body, dict) else body
                        click.echo(f"{command['v']} ins {command['ins']} {message_text(msg_id)}")
                    elif "del" in command:
                        click.echo(f"{command['v']} del {command['del']}")
                    else:
                        click.echo(f"{command['v']} mov {command['mov'][0]} {command['mov'][1]}")
                    seen += 1
                    if count is not None and seen >= count:
                        return
