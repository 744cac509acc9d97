"""The `tangled` command line.

Exit codes: 0 success; 1 internal or environment failure; 2 bad usage;
3 bad input (invalid config, content, id or message); 4 not found (no such
store, feed or message); 5 `check` found problems. Results go to stdout,
logs and error messages to stderr.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
import lmdb
import trio

from tanglenode.config.secret import read_secret, write_secret
from tanglenode.config.settings import ConfigError, load_settings
from tanglenode.config.template import render_config
from tanglenode.node.bundle import BadRecord
from tanglenode.node.cli_archive import export_command, import_command
from tanglenode.node.cli_groups import group_command
from tanglenode.node.cli_support import (
    COUNT,
    SEQ,
    BadInput,
    Context,
    ExitCode,
    NotFound,
    all_peers,
    call_node,
    emit_json,
    json_option,
    log,
    read_content,
    render_body,
    tangle_name,
)
from tanglenode.node.cli_timelines import timeline, watch
from tanglenode.node.daemon import run_node
from tanglenode.node.linearize import BadEventLine, linearize
from tanglenode.node.logs import configure_logging
from tanglenode.node.render import message_dict, message_line
from tanglenode.pipeline.cli import pipeline_command
from tanglenode.protocol.address import parse_address
from tanglenode.protocol.errors import BadIdentifier, LocalProtocolError, TanglenodeError
from tanglenode.protocol.identity import (
    Keypair,
    feed_text,
    message_text,
    parse_feed,
    parse_message_id,
)
from tanglenode.storage.check import CheckReport
from tanglenode.storage.errors import DataDirInUse, OwnFeedBehind, StoreDamaged, UnknownTangle


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
    with obj.lock_data_dir("init"):
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
        raise BadInput(f"--tangle {option[:80]!r}: expected NAME (a new tangle) or NAME=ROOT_ID")
    return tangle_name(name), parse_message_id(root) if sep else None


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
    value = read_content(content, obj.settings)
    tangles = dict(_parse_tangle_option(option) for option in tangle_options)
    if offline:
        try:
            lock = obj.lock_data_dir("publish --offline")
        except DataDirInUse as error:
            if error.purpose != "run":
                raise
            raise DataDirInUse(
                f"the node is running (process {error.pid}); publish through it (drop --offline)",
                error.pid,
            ) from None
        with lock, obj.open_store(with_keypair=True) as store:
            message = store.publish(value, tangles)
        body = message_dict(message)
    else:
        body = render_body(
            trio.run(call_node, obj, "publish", {"content": value, "tangles": tangles})
        )
    log.info("published", seq=body["seq"], id=body["id"])
    if as_json:
        emit_json(body)
    else:
        click.echo(body["id"])


@cli.command("log")
@click.argument("feed", required=False)
@click.option("--from", "from_seq", type=SEQ, default=1, help="First seq.")
@click.option("--limit", type=COUNT, default=None, help="At most this many.")
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
    """List the feeds in the store with their head seq, and where invalid ones end."""
    with obj.open_store() as store:
        infos = store.feeds()
    for info in infos:
        record = {
            "feed": feed_text(info.author),
            "seq": info.head_seq,
            "head": message_text(info.head_id) if info.head_id else None,
            "invalid_from": info.invalid_from,
        }
        if as_json:
            emit_json(record)
        else:
            invalid = f"  INVALID from {info.invalid_from}" if info.invalid_from else ""
            click.echo(f"{record['feed']}  {info.head_seq:>8}{invalid}")


@cli.command()
@json_option
@click.pass_obj
def forks(obj: Context, as_json: bool) -> None:
    """List the evidence held: forks (two messages at one seq) and timeframe cycles."""
    with obj.open_store() as store:
        evidence = store.evidence()
    for item in evidence:
        invalid = {feed_text(author): seq for author, seq in item.invalid.items()}
        if as_json:
            emit_json(
                {
                    "proof": message_text(item.id),
                    "kind": item.kind.value,
                    "invalid": invalid,
                    "messages": [message_dict(message) for message in item.messages],
                }
            )
        else:
            feeds_cut = ", ".join(f"{feed} from seq {seq}" for feed, seq in invalid.items())
            messages = " ".join(
                f"{feed_text(m.author)[:12]}:{m.seq}={message_text(m.id)}" for m in item.messages
            )
            click.echo(f"{item.kind.value}: {feeds_cut or '(nothing cut)'}  [{messages}]")


@cli.command()
@json_option
@click.pass_obj
def check(obj: Context, as_json: bool) -> int:
    """Re-verify every stored message and every index."""
    try:
        with obj.open_store() as store:
            report = store.check()
    except StoreDamaged as error:  # a finding, like any other
        report = CheckReport(problems=[str(error)])
    if as_json:
        emit_json(
            {
                "ok": report.ok,
                "messages": report.messages,
                "feeds": report.feeds,
                "evidence": report.evidence,
                "problems": report.problems,
            }
        )
    else:
        for problem in report.problems:
            click.echo(f"problem: {problem}")
        verdict = "ok" if report.ok else f"{len(report.problems)} problem(s)"
        click.echo(
            f"checked {report.messages} messages in {report.feeds} feeds, "
            f"{report.evidence} evidence messages: {verdict}"
        )
    return ExitCode.OK if report.ok else ExitCode.CHECK_FAILED


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
    report = render_body(trio.run(call_node, obj, "status", {}))
    if as_json:
        emit_json(report)
        return
    click.echo(f"feed {report['feed']}  listening on {report['listen']}")
    forks_total = report.get("forks_total", len(report["forks"]))
    click.echo(f"{report['feeds']} feeds, {report['messages']} messages, {forks_total} forks")
    for peer in report["peers"]:
        _echo_peer(peer)
    more = report.get("peers_total", len(report["peers"])) - len(report["peers"])
    if more > 0:
        click.echo(f"... and {more} more peers (tangled peers)")


def _echo_peer(peer: dict[str, Any]) -> None:
    state = "connected" if peer["connected"] else "disconnected"
    behind = peer.get("behind_feeds", len(peer["behind"]))
    progress = "caught up" if peer["caught_up"] else f"behind on {behind} feeds"
    line = f"{peer['key']}  {peer['address'] or '-'}  {state}  {progress}"
    if peer["last_error"]:
        line += f"  (last error: {peer['last_error']})"
    click.echo(line)


@cli.command()
@json_option
@click.pass_obj
def peers(obj: Context, as_json: bool) -> None:
    """The running node's peers."""
    every = trio.run(all_peers, obj)
    if as_json:
        emit_json(every)
        return
    for peer in every:
        _echo_peer(peer)


@cli.command("connect")
@click.argument("address", metavar="HOST:PORT")
@click.argument("key", metavar="FEED_ID")
@click.pass_obj
def connect_command(obj: Context, address: str, key: str) -> None:
    """Make the running node dial a peer (and keep redialing it) until it stops."""
    parse_address(address)
    trio.run(call_node, obj, "connect", {"address": address, "key": parse_feed(key)})
    click.echo(f"dialing {address}")


cli.add_command(export_command)
cli.add_command(import_command)
cli.add_command(pipeline_command)
cli.add_command(timeline)
cli.add_command(watch)
cli.add_command(group_command)


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
    OwnFeedBehind,
    BadRecord,
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
    except click.ClickException as error:  # one line, as every other error
        where = error.ctx.command_path if isinstance(error, click.UsageError) and error.ctx else ""
        hint = f" (see {where} --help)" if where else ""
        message = " ".join(error.format_message().split())
        click.echo(f"tangled: {message}{hint}", err=True)
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
    except lmdb.Error as error:  # a damaged page met while reading
        click.echo(f"tangled: the store is damaged ({error}); run `tangled check`", err=True)
        return ExitCode.INTERNAL
    except Exception:
        log.exception("internal error")
        return ExitCode.INTERNAL
    return int(result) if isinstance(result, int) else ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())
