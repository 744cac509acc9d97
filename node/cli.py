"""The `tangled` command line.

Exit codes: 0 success; 1 internal or environment failure; 2 bad usage;
3 bad input (invalid config, content, id or message); 4 not found (no such
store, feed or message); 5 `check` found problems. Results go to stdout,
logs and error messages to stderr.
"""

from __future__ import annotations

import enum
import json
import sys
from contextlib import aclosing
from pathlib import Path
from typing import Any

import click
import structlog
import trio

from config.secret import read_secret, write_secret
from config.settings import ConfigError, Settings, config_path, load_settings
from config.template import render_config
from node.client import NodeError, NodeNotRunning, connect
from node.daemon import run_node
from node.linearize import BadEventLine, linearize
from node.logs import configure_logging
from node.render import message_dict, message_line
from protocol.errors import BadIdentifier, LocalProtocolError, TanglenodeError
from protocol.identity import Keypair, feed_text, message_text, parse_feed, parse_message_id
from storage.errors import StoreNotFound, UnknownTangle, UnknownTimeline
from storage.store import FeedStore
from storage.timeline import Command, Insert, Move

log = structlog.get_logger("tangled")


class ExitCode(enum.IntEnum):
    OK = 0
    INTERNAL = 1
    USAGE = 2
    BAD_INPUT = 3
    NOT_FOUND = 4
    CHECK_FAILED = 5


class NotFound(TanglenodeError):
    """What the user named is not in the store."""


class BadInput(TanglenodeError):
    """What the user gave us cannot be used."""


class Context:
    """Global options, and the settings and store they lead to (loaded lazily)."""

    def __init__(self, config: Path | None, data_dir: Path | None) -> None:
        self.config_file = config_path(config, data_dir)
        self.data_dir_flag = data_dir
        self._settings: Settings | None = None

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings(
                self.config_file,
                overrides={"data_dir": str(self.data_dir_flag) if self.data_dir_flag else None},
            )
        return self._settings

    def open_store(self, *, with_keypair: bool = False, create: bool = False) -> FeedStore:
        settings = self.settings
        keypair = read_secret(settings.secret_path) if with_keypair else None
        try:
            return FeedStore(
                settings.store_path,
                keypair=keypair,
                limits=settings.limits.to_protocol(),
                map_size=settings.storage.map_size,
                create=create,
            )
        except StoreNotFound:
            raise NotFound(f"no store at {settings.store_path}; run `tangled init` first") from None


json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")


def emit_json(value: Any) -> None:
    click.echo(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--config", type=click.Path(path_type=Path), help="Config file (tangled.toml).")
@click.option("--data-dir", type=click.Path(path_type=Path), help="Data directory.")
@click.pass_context
def cli(ctx: click.Context, config: Path | None, data_dir: Path | None) -> None:
    """tanglenode: signed append-only feeds, replicated peer to peer."""
    ctx.obj = Context(config, data_dir)
    try:
        settings = ctx.obj.settings
        configure_logging(settings.log_format, settings.log_level)
    except ConfigError:
        configure_logging()  # the command itself reports the config error


@cli.command()
@click.option("--exist-ok", is_flag=True, help="Do nothing if the config already exists.")
@json_option
@click.pass_obj
def init(obj: Context, exist_ok: bool, as_json: bool) -> None:
    """Write a config and a new keypair, create the store, print the feed id."""
    if obj.config_file.exists():
        if exist_ok:
            return
        raise BadInput(f"{obj.config_file} already exists; refusing to overwrite it")
    settings = obj.settings
    data_dir = settings.data_dir.expanduser().resolve()
    keypair = Keypair.generate()
    write_secret(settings.secret_path, keypair)
    obj.config_file.parent.mkdir(parents=True, exist_ok=True)
    obj.config_file.write_text(render_config(data_dir, settings.network_key))
    obj.open_store(create=True).close()
    log.info("initialized", feed=keypair.feed_id, config=str(obj.config_file))
    if as_json:
        emit_json(
            {"feed": keypair.feed_id, "config": str(obj.config_file), "data_dir": str(data_dir)}
        )
    else:
        click.echo(keypair.feed_id)


def _parse_tangle_option(option: str) -> tuple[str, bytes | None]:
    name, sep, root = option.partition("=")
    if not name:
        raise BadInput(f"--tangle {option!r}: expected NAME (a new tangle) or NAME=ROOT_ID")
    return name, parse_message_id(root) if sep else None


@cli.command()
@click.argument("content")
@click.option(
    "--tangle",
    "tangle_options",
    multiple=True,
    metavar="NAME[=ROOT]",
    help="Put the message in tangle NAME rooted at ROOT; without ROOT it roots a new tangle.",
)
@click.option(
    "--offline", is_flag=True, help="Write to the store directly; only while the node is stopped."
)
@json_option
@click.pass_obj
def publish(
    obj: Context, content: str, tangle_options: tuple[str, ...], offline: bool, as_json: bool
) -> None:
    """Sign and publish a message whose CONTENT is JSON ('-' reads stdin), through the node."""
    text = sys.stdin.read() if content == "-" else content
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise BadInput(f"content is not JSON: {error}") from None
    tangles = dict(_parse_tangle_option(option) for option in tangle_options)
    if offline:
        if obj.settings.ipc_socket_path.is_socket() and trio.run(_node_running, obj):
            raise BadInput("the node is running; publish through it (drop --offline)")
        with obj.open_store(with_keypair=True) as store:
            message = store.publish(value, tangles)
        body = message_dict(message)
    else:
        body = render_body(
            trio.run(_ipc_call, obj, "publish", {"content": value, "tangles": tangles})
        )
    log.info("published", seq=body["seq"], id=body["id"])
    if as_json:
        emit_json(body)
    else:
        click.echo(body["id"])


async def _node_running(obj: Context) -> bool:
    try:
        client = await connect(obj.settings.ipc_socket_path)
    except NodeNotRunning:
        return False
    await client.aclose()
    return True


async def _ipc_call(obj: Context, op: str, arguments: dict[str, Any]) -> Any:
    async with await connect(obj.settings.ipc_socket_path) as client:
        try:
            return await client.request(op, **arguments)
        except NodeError as error:
            if error.kind == "not-found":
                raise NotFound(str(error)) from None
            if error.kind in ("bad-request", "UnknownTangle", "InvalidMessage"):
                raise BadInput(str(error)) from None
            raise


@cli.command("log")
@click.argument("feed", required=False)
@click.option("--from", "from_seq", type=click.IntRange(min=1), default=1, help="First seq.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="At most this many.")
@json_option
@click.pass_obj
def log_command(
    obj: Context, feed: str | None, from_seq: int, limit: int | None, as_json: bool
) -> None:
    """List a feed's messages (default: our own feed); --json gives JSON lines."""
    author = parse_feed(feed) if feed else read_secret(obj.settings.secret_path).public
    with obj.open_store() as store:
        if store.get_by_seq(author, 1) is None:
            if feed:
                raise NotFound(f"no feed {feed} in the store")
            return  # our own feed, still empty
        remaining = limit
        while remaining is None or remaining > 0:
            page = store.read_feed(author, from_seq, min(remaining or 1000, 1000))
            for message in page:
                click.echo(json.dumps(message_dict(message)) if as_json else message_line(message))
            if not page:
                break
            from_seq = page[-1].seq + 1
            remaining = None if remaining is None else remaining - len(page)


@cli.command()
@click.argument("message_id")
@json_option
@click.pass_obj
def show(obj: Context, message_id: str, as_json: bool) -> None:
    """Print one message (indented JSON; --json for one line)."""
    with obj.open_store() as store:
        message = store.get(parse_message_id(message_id))
    if message is None:
        raise NotFound(f"no message {message_id} in the store")
    if as_json:
        emit_json(message_dict(message))
    else:
        click.echo(json.dumps(message_dict(message), indent=2, ensure_ascii=False))


@cli.command()
@json_option
@click.pass_obj
def feeds(obj: Context, as_json: bool) -> None:
    """List the feeds in the store with their head seq."""
    with obj.open_store() as store:
        infos = store.feeds()
    for info in infos:
        record = {
            "feed": feed_text(info.author),
            "seq": info.head_seq,
            "head": message_text(info.head_id),
            "forked_at": info.forked_at,
        }
        if as_json:
            emit_json(record)
        else:
            forked = f"  FORKED at {info.forked_at}" if info.forked_at else ""
            click.echo(f"{record['feed']}  {info.head_seq:>8}{forked}")


@cli.command()
@json_option
@click.pass_obj
def forks(obj: Context, as_json: bool) -> None:
    """List fork evidence: pairs of valid messages by one author at one seq."""
    with obj.open_store() as store:
        evidence = store.forks()
    for item in evidence:
        if as_json:
            emit_json(
                {
                    "feed": feed_text(item.author),
                    "seq": item.seq,
                    "stored": message_dict(item.stored),
                    "conflicting": message_dict(item.conflicting),
                }
            )
        else:
            click.echo(
                f"{feed_text(item.author)}  seq {item.seq}  "
                f"{message_text(item.stored.id)} vs {message_text(item.conflicting.id)}"
            )


@cli.command()
@json_option
@click.pass_obj
def check(obj: Context, as_json: bool) -> int:
    """Re-verify every stored message and every index."""
    with obj.open_store() as store:
        report = store.check()
    if as_json:
        emit_json(
            {
                "ok": report.ok,
                "messages": report.messages,
                "feeds": report.feeds,
                "fork_evidence": report.fork_evidence,
                "problems": report.problems,
            }
        )
    else:
        for problem in report.problems:
            click.echo(f"problem: {problem}")
        verdict = "ok" if report.ok else f"{len(report.problems)} problem(s)"
        click.echo(
            f"checked {report.messages} messages in {report.feeds} feeds, "
            f"{report.fork_evidence} fork evidence: {verdict}"
        )
    return ExitCode.OK if report.ok else ExitCode.CHECK_FAILED


def _parse_timeline(spec: str | None, spacetime: bool) -> tuple[bytes, str]:
    if spacetime == (spec is not None):
        raise click.UsageError("give either NAME/ROOT or --spacetime")
    if spacetime:
        return FeedStore.timeline_name(None), "spacetime"
    name, sep, root = spec.rpartition("/")  # ids never contain "/"; names may
    if not sep or not name:
        raise BadInput(f"{spec!r}: expected NAME/ROOT, e.g. chat/%AbC...")
    return FeedStore.timeline_name(parse_message_id(root), name), spec


@cli.command()
@click.argument("spec", required=False, metavar="[NAME/ROOT]")
@click.option("--spacetime", is_flag=True, help="The timeline of all feeds.")
@click.option("--start", type=click.IntRange(min=0), default=0, help="First position.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="At most this many.")
@click.option("--at", "at_id", metavar="ID", help="Print only this message's position and rank.")
@click.option(
    "--since",
    type=click.IntRange(min=0),
    default=None,
    metavar="VERSION",
    help="Print the ins/mov commands after this version instead of the order.",
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
    since: int | None,
    as_json: bool,
) -> None:
    """Print a tangle's timeline (NAME/ROOT) or the spacetime: order, position or commands."""
    name, label = _parse_timeline(spec, spacetime)
    if obj.settings.ipc_socket_path.is_socket() and trio.run(_node_running, obj):
        source: Any = _NodeTimelines(obj, _ipc_timeline(spec, spacetime))
    else:  # the node is stopped: read the store directly
        source = _StoreTimelines(obj.open_store(), name)
    with source:
        try:
            source.version()
        except UnknownTimeline:
            raise NotFound(f"no timeline {label} in the store") from None
        if at_id is not None:
            position, rank = source.placement(parse_message_id(at_id), at_id, label)
            if as_json:
                emit_json({"id": at_id, "position": position, "rank": rank})
            else:
                click.echo(f"position {position}  rank {rank}")
            return
        if since is not None:
            for number, command in enumerate(source.commands(since), since + 1):
                _echo_command(number, command, as_json)
            return
        for position, (rank, msg_id) in enumerate(source.entries(start, limit), start):
            if as_json:
                emit_json({"position": position, "rank": rank, "id": message_text(msg_id)})
            else:
                click.echo(f"{position:>6}  {rank:>6}  {message_text(msg_id)}")


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

    def placement(self, msg_id: bytes, shown: str, label: str) -> tuple[int, int]:
        placement = self.store.timeline_placement(self.name, msg_id)
        if placement is None:
            raise NotFound(f"{shown} is not in timeline {label}")
        return placement.position, placement.rank

    def commands(self, since: int) -> list[Command]:
        return self.store.timeline_commands(self.name, since)

    def entries(self, start: int, limit: int | None) -> list[tuple[int, bytes]]:
        stop = None if limit is None else start + limit
        return self.store.timeline(self.name, start, stop)


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
            return trio.run(_ipc_call, self.obj, op, {**self.which, **arguments})
        except NotFound as error:
            raise UnknownTimeline(str(error)) from None

    def version(self) -> int:
        return self._call("timeline", limit=0)["version"]

    def placement(self, msg_id: bytes, shown: str, label: str) -> tuple[int, int]:
        try:
            found = trio.run(_ipc_call, self.obj, "placement", {**self.which, "message": msg_id})
        except NotFound:
            raise NotFound(f"{shown} is not in timeline {label}") from None
        return found["position"], found["rank"]

    def commands(self, since: int) -> list[Command]:
        found = self._call("commands", since=since, limit=100_000)["commands"]
        return [Insert(c["ins"], c["id"]) if "ins" in c else Move(*c["mov"]) for c in found]

    def entries(self, start: int, limit: int | None) -> list[tuple[int, bytes]]:
        entries: list[tuple[int, bytes]] = []
        while limit is None or len(entries) < limit:
            page_size = 10_000 if limit is None else min(10_000, limit - len(entries))
            page = self._call("timeline", start=start + len(entries), limit=page_size)["entries"]
            entries.extend((rank, msg_id) for rank, msg_id in page)
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
    else:
        record = {"version": number, "op": "mov", "from": command.src, "to": command.dst}
        text = f"{number}  mov {command.src} {command.dst}"
    if as_json:
        emit_json(record)
    else:
        click.echo(text)


@cli.command()
@click.option("--listen", metavar="HOST:PORT", help="Accept peers here (overrides the config).")
@click.pass_obj
def run(obj: Context, listen: str | None) -> None:
    """Run the node: peers, gossip and the IPC socket, until SIGTERM or SIGINT."""
    settings = obj.settings
    if listen:
        settings = load_settings(
            obj.config_file,
            overrides={
                "data_dir": str(obj.data_dir_flag) if obj.data_dir_flag else None,
                "listen": listen,
            },
        )
    keypair = read_secret(settings.secret_path)
    if not settings.store_path.exists():
        raise NotFound(f"no store at {settings.store_path}; run `tangled init` first")
    trio.run(run_node, settings, keypair)


@cli.command()
@json_option
@click.pass_obj
def status(obj: Context, as_json: bool) -> None:
    """The running node's feed, peers (caught up or behind), forks."""
    report = render_body(trio.run(_ipc_call, obj, "status", {}))
    if as_json:
        emit_json(report)
        return
    click.echo(f"feed {report['feed']}  listening on {report['listen']}")
    click.echo(
        f"{report['feeds']} feeds, {report['messages']} messages, {len(report['forks'])} forks"
    )
    for peer in report["peers"]:
        _echo_peer(peer)


def _echo_peer(peer: dict[str, Any]) -> None:
    state = "connected" if peer["connected"] else "disconnected"
    progress = "caught up" if peer["caught_up"] else f"behind on {len(peer['behind'])} feeds"
    line = f"{peer['key']}  {peer['address'] or '-'}  {state}  {progress}"
    if peer["last_error"]:
        line += f"  (last error: {peer['last_error']})"
    click.echo(line)


@cli.command()
@json_option
@click.pass_obj
def peers(obj: Context, as_json: bool) -> None:
    """The running node's peers."""
    report = render_body(trio.run(_ipc_call, obj, "peers", {}))
    if as_json:
        emit_json(report["peers"])
        return
    for peer in report["peers"]:
        _echo_peer(peer)


@cli.command("connect")
@click.argument("address", metavar="HOST:PORT")
@click.argument("key", metavar="FEED_ID")
@click.pass_obj
def connect_command(obj: Context, address: str, key: str) -> None:
    """Make the running node dial a peer (and keep redialing it) until it stops."""
    trio.run(_ipc_call, obj, "connect", {"address": address, "key": parse_feed(key)})
    click.echo(f"dialing {address}")


@cli.command()
@click.argument("spec", required=False, metavar="[NAME/ROOT]")
@click.option("--spacetime", is_flag=True, help="The timeline of all feeds.")
@click.option("--since", type=click.IntRange(min=0), default=None, help="Resume after VERSION.")
@click.option("--count", type=click.IntRange(min=1), default=None, help="Stop after N commands.")
@click.pass_obj
def watch(
    obj: Context, spec: str | None, spacetime: bool, since: int | None, count: int | None
) -> None:
    """Follow a timeline live: its snapshot (or commands since VERSION), then each change."""
    which = _ipc_timeline(spec, spacetime)
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
                    else:
                        click.echo(f"{command['v']} mov {command['mov'][0]} {command['mov'][1]}")
                    seen += 1
                    if count is not None and seen >= count:
                        return


def _ipc_timeline(spec: str | None, spacetime: bool) -> dict[str, Any]:
    if spacetime == bool(spec):
        raise click.UsageError("name one timeline: NAME/ROOT or --spacetime")
    if spacetime:
        return {"spacetime": True}
    name, _sep, root = spec.rpartition("/")  # type: ignore[union-attr]
    if not name:
        raise BadInput(f"{spec!r}: expected NAME/ROOT")
    return {"tangle": name, "root": parse_message_id(root)}


def render_body(value: Any) -> Any:
    """IPC replies with ids as text: bytes of 32 become @feed or %message by where they sit."""
    if isinstance(value, dict):
        rendered = {}
        for key, item in value.items():
            if isinstance(key, bytes):  # a map keyed by message id
                rendered[message_text(key)] = render_body(item)
                continue
            if key in ("author", "feed", "key") and isinstance(item, bytes):
                rendered[key] = feed_text(item)
            elif key in ("clock", "behind", "timeframe") and isinstance(item, dict):
                rendered[key] = {feed_text(feed): seq for feed, seq in item.items()}
            elif key in ("members", "excluded") and isinstance(item, list):
                rendered[key] = [feed_text(feed) for feed in item]
            else:
                rendered[key] = render_body(item)
        return rendered
    if isinstance(value, list):
        return [render_body(item) for item in value]
    if isinstance(value, bytes):
        return message_text(value)
    return value


@cli.group("group")
def group_command() -> None:
    """Private groups: create, add, exclude, post, members, epochs, timeline."""


def _group_call(op: str, **arguments: Any) -> Any:
    obj = click.get_current_context().find_object(Context)
    return render_body(trio.run(_ipc_call, obj, op, arguments))


@group_command.command("create")
@click.argument("name")
def group_create(name: str) -> None:
    """Start a group (you are its first member); prints the group id."""
    click.echo(_group_call("group-create", name=name)["group"])


@group_command.command("add")
@click.argument("group")
@click.argument("feeds", nargs=-1, required=True)
def group_add(group: str, feeds: tuple[str, ...]) -> None:
    """Add members to the group's current epoch; they receive its key."""
    members = [parse_feed(feed) for feed in feeds]
    click.echo(_group_call("group-add", group=parse_message_id(group), members=members)["id"])


@group_command.command("exclude")
@click.argument("group")
@click.argument("feeds", nargs=-1, required=True)
def group_exclude(group: str, feeds: tuple[str, ...]) -> None:
    """Exclude members and open a new epoch with a new key; prints the new epoch's id."""
    members = [parse_feed(feed) for feed in feeds]
    done = _group_call("group-exclude", group=parse_message_id(group), members=members)
    click.echo(done["epoch"])


@group_command.command("post")
@click.argument("group")
@click.argument("content")
def group_post(group: str, content: str) -> None:
    """Post JSON CONTENT to the group, encrypted with the current epoch's key."""
    try:
        value = json.loads(content)
    except json.JSONDecodeError as error:
        raise BadInput(f"content is not JSON: {error}") from None
    click.echo(_group_call("group-post", group=parse_message_id(group), content=value)["id"])


@group_command.command("members")
@click.argument("group")
@json_option
def group_members(group: str, as_json: bool) -> None:
    """The group's current members."""
    shown = _group_call("group-show", group=parse_message_id(group))
    if as_json:
        emit_json(shown["members"])
    else:
        for member in shown["members"]:
            click.echo(member)


@group_command.command("epochs")
@click.argument("group")
@json_option
def group_epochs(group: str, as_json: bool) -> None:
    """The group's epochs: who opened each, what it follows, its members."""
    shown = _group_call("group-show", group=parse_message_id(group))
    if as_json:
        emit_json(shown["epochs"])
        return
    for epoch in shown["epochs"]:
        mark = "current" if epoch["current"] else "       "
        click.echo(f"{epoch['id']}  {mark}  {len(epoch['members'])} members")


@group_command.command("timeline")
@click.argument("group")
@click.option("--tangle", type=click.Choice(["group", "members", "epoch"]), default="group")
@click.option("--order", type=click.Choice(["rank", "causal-time"]), default="rank")
@json_option
def group_timeline(group: str, tangle: str, order: str, as_json: bool) -> None:
    """The group's messages in order, opened where this node holds the key."""
    found = _group_call("group-timeline", group=parse_message_id(group), tangle=tangle, order=order)
    for row in found["entries"]:
        if as_json:
            emit_json(row)
            continue
        what = row["type"] or "(cannot open)"
        if row["type"] == "group/post":
            what = json.dumps(row["content"], ensure_ascii=False)
        elif row["members"]:
            what += " " + " ".join(row["members"])
        flag = "" if row["valid"] or row["type"] is None else "  [invalid]"
        click.echo(f"{row['id']}  {row['author'][:12]}  {what}{flag}")


@cli.command("linearize")
@click.argument("source", type=click.File("r", encoding="utf-8"), default="-", metavar="[FILE]")
@click.option("--db", type=click.Path(file_okay=False, path_type=Path), help="Keep the LMDB here.")
@click.option(
    "--commands",
    "commands_file",
    type=click.File("w", encoding="utf-8"),
    help="Write each event's ins/mov commands to this file.",
)
@click.option("--stats", is_flag=True, help="One JSON line of figures on stderr.")
@click.option(
    "--order",
    type=click.Choice(["rank", "causal-time"]),
    default="rank",
    show_default=True,
    help="rank: the timeline order; causal-time: causality, then (time, id).",
)
def linearize_command(
    source: Any, db: Path | None, commands_file: Any, stats: bool, order: str
) -> None:
    """Linearize JSON-lines events {"id", "after"|"links", "time"} from FILE or stdin."""
    result = linearize(
        source, db=db, causal_time=order == "causal-time", commands_out=commands_file
    )
    click.echo("".join(f"{event_id}\n" for event_id in result.order), nl=False)
    if stats:
        click.echo(json.dumps(result.stats()), err=True)


_BAD_INPUT = (
    ConfigError,
    BadInput,
    BadIdentifier,
    BadEventLine,
    LocalProtocolError,
    UnknownTangle,
)


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point; returns the process exit code."""
    try:
        result = cli.main(args=argv, prog_name="tangled", standalone_mode=False)
    except click.exceptions.Exit as done:
        return done.exit_code
    except click.Abort:
        click.echo("aborted", err=True)
        return ExitCode.INTERNAL
    except click.ClickException as error:
        error.show()
        return ExitCode.USAGE if isinstance(error, click.UsageError) else ExitCode.BAD_INPUT
    except _BAD_INPUT as error:
        click.echo(f"tangled: {error}", err=True)
        return ExitCode.BAD_INPUT
    except NotFound as error:
        click.echo(f"tangled: {error}", err=True)
        return ExitCode.NOT_FOUND
    except TanglenodeError as error:
        click.echo(f"tangled: {error}", err=True)
        return ExitCode.INTERNAL
    except Exception:
        log.exception("internal error")
        return ExitCode.INTERNAL
    return int(result) if isinstance(result, int) else ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())
