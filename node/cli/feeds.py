"""`tangled publish`, `log`, `show`, `feeds`, `forks`, `check`: our feed and the store."""

from __future__ import annotations

import json

import click

from tanglenode.config.secret import read_secret
from tanglenode.node.cli.render import message_dict, message_line
from tanglenode.node.cli.support import (
    COUNT,
    SEQ,
    BadInput,
    Context,
    ExitCode,
    NotFound,
    ask_node,
    emit_json,
    json_option,
    log,
    read_content,
    render_body,
    tangle_name,
)
from tanglenode.protocol.identity import (
    feed_text,
    message_text,
    parse_feed,
    parse_message_id,
)
from tanglenode.storage.errors import DataDirInUse, StoreDamaged


def _parse_tangle_option(option: str) -> tuple[str, bytes | None]:
    name, sep, root = option.partition("=")
    if not name:
        raise BadInput(f"--tangle {option[:80]!r}: expected NAME (a new tangle) or NAME=ROOT_ID")
    return tangle_name(name), parse_message_id(root) if sep else None


@click.command()
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
        body = render_body(ask_node(obj, "publish", {"content": value, "tangles": tangles}))
    log.info("published", seq=body["seq"], id=body["id"])
    if as_json:
        emit_json(body)
    else:
        click.echo(body["id"])


@click.command("log")
@click.argument("feed", required=False)
@click.option("--from", "from_seq", type=SEQ, default=1, help="First seq.")
@click.option("--limit", type=COUNT, default=None, help="At most this many.")
@json_option
@click.pass_obj
def log_command(
    obj: Context, feed: str | None, from_seq: int, limit: int | None, as_json: bool
) -> None:
    """List FEED's messages (default: our own feed); --json gives JSON lines."""
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


@click.command()
@click.argument("message_id")
@json_option
@click.pass_obj
def show(obj: Context, message_id: str, as_json: bool) -> None:
    """Print the message MESSAGE_ID (indented JSON; --json for one line)."""
    with obj.open_store() as store:
        message = store.get(parse_message_id(message_id))
    if message is None:
        raise NotFound(f"no message {message_id} in the store")
    if as_json:
        emit_json(message_dict(message))
    else:
        click.echo(json.dumps(message_dict(message), indent=2, ensure_ascii=False))


@click.command()
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


@click.command()
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


@click.command()
@json_option
@click.pass_obj
def check(obj: Context, as_json: bool) -> int:
    """Re-verify every stored message and every index."""
    from tanglenode.storage.check import CheckReport

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
