"""`tangled publish`, `log`, `show`, `feeds`, `forks`, `check`: our feed and the store."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from tanglenode.config.secret import read_secret
from tanglenode.node.cli.backend import publish_content
from tanglenode.node.cli.support import (
    COUNT,
    SEQ,
    BadInput,
    Context,
    ExitCode,
    NotFound,
    emit_json,
    json_option,
    log,
    read_content,
    tangle_name,
)
from tanglenode.node.present.render import format_timestamp, message_dict, tag_text
from tanglenode.node.present.text import safe, safe_json
from tanglenode.protocol.identity import feed_text, message_text
from tanglenode.storage.errors import StoreDamaged

if TYPE_CHECKING:
    from tanglenode.node.cli.summary import Viewer
    from tanglenode.protocol.message import Message

# The views' modules (names.py, summary.py) load inside the commands that show messages or
# feeds, not for `publish` (docs/BENCHMARKS.md, "Start-up").


def _parse_tangle_option(obj: Context, option: str) -> tuple[str, bytes | None]:
    """`--tangle NAME[=ROOT]`: ROOT a message id, whole or cut short (node/cli/lookup.py)."""
    from tanglenode.node.cli.lookup import message_arg  # loads nothing a whole id needs

    name, sep, root = option.partition("=")
    if not name:
        raise BadInput(f"--tangle {option[:80]!r}: expected NAME (a new tangle) or NAME=ROOT_ID")
    return tangle_name(name), message_arg(obj, root) if sep else None


@click.command()
@click.argument("content")
@click.option(
    "--tangle",
    "tangle_options",
    multiple=True,
    metavar="NAME[=ROOT]",
    help="Put the message in tangle NAME rooted at ROOT; without ROOT it roots a new tangle.",
)
@json_option
@click.pass_obj
def publish(obj: Context, content: str, tangle_options: tuple[str, ...], as_json: bool) -> None:
    """Sign and publish a message whose CONTENT is JSON ('-' reads stdin), through the node.

    While the node is stopped the message goes into the store directly (the node
    sends it to peers once it runs)."""
    value = read_content(content, obj.settings)
    tangles = dict(_parse_tangle_option(obj, option) for option in tangle_options)
    body = publish_content(obj, value, tangles)
    log.info("published", seq=body["seq"], id=body["id"])
    if as_json:
        emit_json(body)
    else:
        click.echo(body["id"])


def log_header(id_width: int = 44) -> str:
    from tanglenode.node.cli.summary import Viewer

    return (
        f"{'SEQ':>6}  {'ID':<{id_width}}  {'TANGLES':<12}  "
        + Viewer.header("").lstrip()
        + "   ([chat*]: in tangle chat, * its root)"
    )


@click.command("log")
@click.argument("feed", required=False)
@click.option("--from", "from_seq", type=SEQ, default=1, help="First seq.")
@click.option("--limit", type=COUNT, default=None, help="At most this many.")
@json_option
@click.pass_obj
def log_command(
    obj: Context, feed: str | None, from_seq: int, limit: int | None, as_json: bool
) -> None:
    """List FEED's messages (default: our own feed); --json gives JSON lines.

    Each message one row: seq, id, the tangles it is in ([chat*]: in tangle chat,
    the * marks the tangle's root message), author, claimed time (UTC) and what it
    says in one line (a post's first line, a document edit as +N -M in "title", a
    follow as follows ~name, another kind its type and JSON; at most 200 characters,
    control characters as ?); group messages are opened where our keys open them.
    --json prints every field of each message instead, and adds `private` (the
    opened part of a group message). FEED is an @id (or
    enough of its start to be the only one), ~NAME (the name it chose) or a petname.
    """
    from tanglenode.node.cli.lookup import feed_arg
    from tanglenode.node.cli.summary import fit, open_viewer

    obj.require_data_dir()  # before the secret: a mistyped --data-dir says so
    author = feed_arg(obj, feed) if feed else read_secret(obj.settings.secret_path).public
    with obj.open_store() as store:
        if store.feeds.get_by_seq(author, 1) is None:
            if feed:
                raise NotFound(f"no feed {feed} in the store")
            return  # our own feed, still empty
        viewer = open_viewer(obj, store, as_json=as_json)
        if not as_json:
            click.echo(fit(log_header(log_id_width(viewer)), viewer.width))
        remaining = limit
        while remaining is None or remaining > 0:
            page = store.feeds.read_feed(author, from_seq, min(remaining or 1000, 1000))
            for message in page:
                if as_json:
                    emit_json(_with_private(viewer, message))
                else:
                    click.echo(log_line(viewer, message))
            if not page:
                break
            from_seq = page[-1].seq + 1
            remaining = None if remaining is None else remaining - len(page)


def log_id_width(viewer: Viewer) -> int:
    """Columns of `log`'s ids: whole, unless the terminal leaves the content too little."""
    return viewer.id_width(len(f"{'SEQ':>6}  "), len(f"  {'TANGLES':<12}"))


def log_line(viewer: Viewer, message: Message) -> str:
    """`seq  id  [tangles]  author  time  summary`, cut to the terminal (ids shortened on
    a narrow one)."""
    from tanglenode.node.cli.summary import fit

    tangles = ",".join(
        f"{safe(name)}{'*' if link.is_root else ''}" for name, link in message.tangles.items()
    )
    shown = fit(f"[{tangles}]" if tangles else "", 12)
    return fit(
        f"{message.seq:>6}  {viewer.id_text(message.id, log_id_width(viewer))}  {shown:<12}  "
        f"{viewer.columns(message)}",
        viewer.width,
    )


def _with_private(viewer: Viewer, message: Message) -> dict[str, Any]:
    body = message_dict(message)
    opened = viewer.machine.opened(message)
    return body | ({"private": opened} if opened is not None else {})


@click.command()
@click.argument("message_id")
@json_option
@click.pass_obj
def show(obj: Context, message_id: str, as_json: bool) -> None:
    """Print the message MESSAGE_ID: who wrote it, when, what it says, then its fields.

    Group messages are opened where our keys open them (their `private` part).
    --json prints the fields alone, on one line. MESSAGE_ID may be cut short: the
    one message held whose id starts so (4 characters after the % at least).
    """
    from tanglenode.node.cli.backend import store_asker
    from tanglenode.node.cli.lookup import message_arg
    from tanglenode.node.cli.summary import fit, open_viewer

    with obj.open_store() as store:  # first: a damaged store says so before anything
        message = store.feeds.get(message_arg(obj, message_id, store_asker(store)))
        if message is None:
            raise NotFound(f"no message {message_id} in the store")
        viewer = open_viewer(obj, store, as_json=as_json)
        body = _with_private(viewer, message)
        erased = None if message.has_content else store.feeds.erased_by(message.id)
        if not message.has_content:  # its header alone: erased, purged or never had
            body["content"] = None
            body["erased_by"] = message_text(erased) if erased else None
            body["purged"] = erased == b""
        if as_json:
            emit_json(body)
            return
        author = viewer.names.name(message.author)
        ours = "  (our feed)" if viewer.names.is_ours(message.author) else ""
        named = f"  {safe(author)}" if author else ""
        click.echo(f"author   {feed_text(message.author)}{named}{ours}")
        click.echo(f"seq      {message.seq}")
        click.echo(f"time     {format_timestamp(message.timestamp)}")
        if message.has_content:
            click.echo(fit(f"says     {safe(viewer.human.line(message))}", viewer.width))
        elif erased:
            click.echo(f"erased   by its author's request {message_text(erased)}")
        else:
            click.echo("erased   " + ("purged here" if erased == b"" else "content not held"))
        click.echo(safe_json(body, indent=2))  # content's unsafe characters as \\uXXXX


@click.command()
@json_option
@click.pass_obj
def feeds(obj: Context, as_json: bool) -> None:
    """List the feeds in the store: our own marked, names, head seq, where invalid ones end.

    A feed is shown by our petname for it, else the name it chose itself (~name).
    --json adds `ours` (true for our own feed) and keeps ids, never names.
    """
    from tanglenode.node.cli.names import ids_only, load_names
    from tanglenode.node.cli.summary import fit

    with obj.open_store() as store:
        infos = store.feeds.held()
        names = ids_only(obj) if as_json else load_names(obj, store)
    if not as_json and infos:
        click.echo(f"  {'FEED':<44}  {'NAME':<20}  {'SEQ':>8}")
    for info in infos:
        record = {
            "feed": feed_text(info.author),
            "seq": info.head_seq,
            "head": message_text(info.head_id) if info.head_id else None,
            "invalid_from": info.invalid_from,
            "ours": names.is_ours(info.author),
        }
        if as_json:
            emit_json(record)
        else:
            invalid = f"  INVALID from {info.invalid_from}" if info.invalid_from else ""
            mark = "*" if record["ours"] else " "
            name = fit(safe(names.name(info.author) or "-"), 20)
            ours = "  (our feed)" if record["ours"] else ""
            click.echo(f"{mark} {record['feed']}  {name:<20}  {info.head_seq:>8}{invalid}{ours}")


@click.command()
@json_option
@click.pass_obj
def forks(obj: Context, as_json: bool) -> None:
    """List the evidence held: fork proofs (two messages at one seq), then suspected forks
    (one seq named with two tags).

    A suspected fork is a (feed, seq) some message names by a tag (the first bytes of an
    id) other than the one of the message held there: the naming message waits for the
    proof, which gossip asks peers for. --json gives one object per line, the suspected
    ones with kind `suspected`, their tags as unpadded URL-safe base64."""
    with obj.open_store() as store:
        evidence = store.feeds.evidence()
        suspected = store.feeds.suspected_forks()
    if not evidence and not suspected and not as_json:  # JSON lines: none is no line
        click.echo("no forks and no suspected forks")
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
    for each in suspected:
        record = {
            "kind": "suspected",
            "feed": feed_text(each.feed),
            "seq": each.seq,
            "named_tag": tag_text(each.named_tag),
            "held_tag": tag_text(each.held_tag),
            "named_by": feed_text(each.by_feed),
        }
        if as_json:
            emit_json(record)
        else:
            held = record["held_tag"] or "nothing"
            click.echo(
                f"suspected: {record['feed']} seq {each.seq}: {record['named_by']} names "
                f"{record['named_tag']}, held {held}"
            )


@click.command()
@json_option
@click.pass_obj
def check(obj: Context, as_json: bool) -> int:
    """Re-verify every stored message and every index."""
    from tanglenode.storage.feeds.check import CheckReport

    try:
        with obj.open_store() as store:
            report = store.feeds.check()
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
