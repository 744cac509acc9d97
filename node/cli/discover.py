"""`tangled whoami`, `tangled tangles`, `tangled group list`: who this node is, what it holds.

`whoami` reads the secret file's public half and looks at the IPC socket,
nothing else: it answers at once, with the node stopped or running. The
other two list a page at a time, through node/cli/backend.py (the IPC ops
`tangles` and `group-list`, docs/IPC.md): the running node answers, or its
own handlers on the store opened here while it is stopped, so both paths
answer alike. A listing walks pages until it
has `--limit` rows or the store has no more, then says on stderr how to
go on (`--after`). Feeds are shown through a `label` (a feed's id by
default); names in listings are text others chose, shown through
`terminal.safe` (unsafe characters as `?`).
"""

from __future__ import annotations

import os
import shlex
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click

from tanglenode.node.cli.backend import Backend
from tanglenode.node.cli.names import lazy_label
from tanglenode.node.cli.support import (
    COUNT,
    BadInput,
    Context,
    NotFound,
    emit_json,
    json_option,
    parse_timeline,
    render_body,
    tangle_name,
)
from tanglenode.node.ipc.oneshot import listening
from tanglenode.node.present.render import TIME_WIDTH, format_timestamp
from tanglenode.node.present.text import safe
from tanglenode.protocol import json_depth
from tanglenode.protocol.errors import BadIdentifier
from tanglenode.protocol.identity import feed_text, parse_feed

Label = Callable[[bytes], str]  # how a feed is shown: its id, or a name (node/cli/names.py)
MAX_SECRET_BYTES = 64 << 10  # a secret file is ~150 bytes
NAME_SHOWN = 60  # characters of a group name on a terminal row


def public_feed(path: Path) -> bytes:
    """The feed id in the secret file at `path`, read without the seed's key derivation."""
    try:
        with path.open("rb") as file:
            data = file.read(MAX_SECRET_BYTES + 1)
    except FileNotFoundError:
        raise NotFound(f"{path}: no secret key here; run `tangled init` first") from None
    except OSError as error:
        raise BadInput(f"{path}: cannot read the secret key: {error.strerror}") from None
    try:
        if len(data) > MAX_SECRET_BYTES:
            raise ValueError("too large")
        document = json_depth.loads(data)
        return parse_feed(document["public"])
    except (ValueError, KeyError, TypeError, BadIdentifier):
        raise BadInput(f"{path}: not a tangled secret key file") from None


def shell_word(text: str) -> str:
    """`text` as one word to paste into a POSIX shell; bash's $'...' where it holds
    characters a terminal would act on, which is also the only way it survives there."""
    if text.isprintable():
        return shlex.quote(text)
    return "$'" + "".join(_ansi_c(c) for c in text) + "'"


def _ansi_c(char: str) -> str:
    """One character inside bash's $'...' quotes."""
    if char in "\\'":
        return "\\" + char
    if char.isprintable():
        return char
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\U{code:08x}"


def when(milliseconds: int | None) -> str:
    return "-" if milliseconds is None else format_timestamp(milliseconds)


# -- whoami ------------------------------------------------------------------------------------


@click.command("whoami")
@json_option
@click.pass_obj
def whoami(obj: Context, as_json: bool) -> None:
    """Our feed id, data directory, config file and whether the node runs (stopped or not)."""
    show_whoami(obj, as_json, label=None if as_json else _our_name(obj))


def _our_name(obj: Context) -> Label:
    """Our feed's name where one is known (a petname, else ~the one we gave ourselves)."""

    def label(feed: bytes) -> str:
        from tanglenode.node.cli.names import load_names

        return load_names(obj).name(feed) or feed_text(feed)

    return label


def show_whoami(obj: Context, as_json: bool, label: Label | None = None) -> None:
    label = label or feed_text
    settings = obj.settings
    obj.require_data_dir()
    feed = public_feed(settings.secret_path)
    try:
        exposed = bool(settings.secret_path.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO))
    except OSError:
        exposed = False
    running = listening(settings.ipc_socket_path)
    config = obj.config_file if obj.config_file.is_file() else None
    if as_json:
        emit_json(
            {
                "feed": feed_text(feed),
                "data_dir": os.path.abspath(settings.data_dir),
                "config": None if config is None else os.path.abspath(config),
                "secret": os.path.abspath(settings.secret_path),
                "socket": os.path.abspath(settings.ipc_socket_path),
                "running": running,
            }
        )
    else:
        rows = [("feed", feed_text(feed))]
        if label(feed) != feed_text(feed):
            rows.append(("name", safe(label(feed))))
        rows += [
            ("data dir", os.path.abspath(settings.data_dir)),
            ("config", os.path.abspath(config) if config else f"none ({obj.config_file} absent)"),
            (
                "node",
                f"running ({os.path.abspath(settings.ipc_socket_path)})" if running else "stopped",
            ),
        ]
        for key, value in rows:
            click.echo(f"{key:<9} {value}")
    if exposed:
        path = settings.secret_path
        click.echo(f"tangled: warning: others may read {path}; run `chmod 600 {path}`", err=True)


# -- the listings: the node's reads, over IPC or on the store ------------------------------------


def pages(
    backend: Backend, op: str, key: str, arguments: dict[str, Any], limit: int
) -> Iterator[Any]:
    """Up to `limit` rows of `op`'s pages (ids as text); then `next` if more remain."""
    wanted, after = limit, arguments.pop("after", None)
    while wanted > 0:
        page = backend.call(op, **arguments, after=after, limit=wanted)
        rows = page[key][:wanted]
        yield from render_body(rows)
        wanted -= len(rows)
        after = page["next"]  # as the wire has it: the next request's `after`
        if after is None:
            return
    yield {"next": render_body(after)}


def _name(text: str) -> str:
    """A tangle name from the command line (bytes that are not UTF-8 name no tangle)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise BadInput(f"{safe(text, 80)!r}: a tangle name is UTF-8 text") from None
    return tangle_name(text)


def _wire_after(spec: str | None) -> dict[str, Any] | None:
    """`--after NAME/ROOT` as the wire's `after`."""
    if spec is None:
        return None
    parsed = parse_timeline(spec, False)
    assert parsed is not None
    name, root = parsed
    return {"root": root, "tangle": _name(name)}


def _more(rows: list[dict[str, Any]], command: str) -> list[dict[str, Any]]:
    """The rows without the trailing `next` marker; a hint on stderr when there is one."""
    if rows and "next" in rows[-1]:
        after = rows.pop()["next"]
        cursor = shell_word(f"{after['tangle']}/{after['root']}")
        sys.stderr.write(f"tangled: more: tangled {command} --after {cursor}\n")
    return rows


# -- tangles -----------------------------------------------------------------------------------


@click.command("tangles")
@click.option("--limit", type=COUNT, default=100, show_default=True, help="Tangles to list.")
@click.option("--after", metavar="NAME/ROOT", help="Start after this tangle (the hint's cursor).")
@click.option("--name", "only", metavar="NAME", help="Only the tangles of this name (e.g. chat).")
@json_option
@click.pass_obj
def tangles(obj: Context, limit: int, after: str | None, only: str | None, as_json: bool) -> None:
    """The tangles held: name/root, messages, joined and pending members, last activity.

    Listed by root id, --limit at a time (the node running or not); a
    member is pending until all it names has joined the root (or for good,
    when it is invalid for the tangle). Last activity is the newest
    claimed time of a member.
    """
    show_tangles(obj, limit, after, only, as_json, label=lazy_label(obj))


def show_tangles(
    obj: Context,
    limit: int,
    after: str | None,
    only: str | None,
    as_json: bool,
    label: Label = feed_text,
) -> None:
    arguments = {"after": _wire_after(after)}
    if only is not None:
        arguments["name"] = _name(only)
    with Backend(obj) as node:
        rows = _more(list(pages(node, "tangles", "tangles", arguments, limit)), "tangles")
    if as_json:
        for row in rows:
            emit_json(row)
        return
    if not rows:
        click.echo("no tangles held" + (f" named {safe(only)!r}" if only else ""), err=True)
        return
    specs = [f"{safe(row['tangle'])}/{row['root']}" for row in rows]
    width = max(len(spec) for spec in specs)
    click.echo(
        f"{'TANGLE':<{width}}  {'MESSAGES':>8}  {'JOINED':>8}  {'PENDING':>8}  "
        f"{'LAST ACTIVITY':<{TIME_WIDTH}}  STARTED BY"
    )
    for spec, row in zip(specs, rows, strict=True):
        author = "(root not held)" if row["author"] is None else label(parse_feed(row["author"]))
        author = safe(author)
        click.echo(
            f"{spec:<{width}}  {row['messages']:>8}  {row['joined']:>8}  {row['pending']:>8}  "
            f"{when(row['last']):<{TIME_WIDTH}}  {author}"
        )


# -- group list ----------------------------------------------------------------------------------


@click.command("list")
@click.option("--limit", type=COUNT, default=100, show_default=True, help="Groups to list.")
@json_option
@click.pass_obj
def group_list(obj: Context, limit: int, as_json: bool) -> None:
    """The groups we are in, or were in: name, members, epochs, last activity.

    Found by the keys this node holds (the node running or not); a group
    we were excluded from shows as `former`, with what we last could read.
    """
    show_group_list(obj, limit, as_json, label=lazy_label(obj))


def show_group_list(obj: Context, limit: int, as_json: bool, label: Label = feed_text) -> None:
    with Backend(obj) as node:
        rows = _more(list(pages(node, "group-list", "groups", {}, limit)), "group list")
    if as_json:
        for row in rows:
            emit_json(row)
        return
    if not rows:
        click.echo("no groups: none of the groups held has a key of ours", err=True)
        return
    width = max(len(row["group"]) for row in rows)
    creators = [safe(label(parse_feed(row["author"]))) for row in rows]
    wide = max(len("CREATED BY"), *(len(creator) for creator in creators))
    click.echo(
        f"{'GROUP':<{width}}  {'MEMBERS':>7}  {'EPOCHS':>6}  {'US':<7}  "
        f"{'LAST ACTIVITY':<{TIME_WIDTH}}  {'CREATED BY':<{wide}}  NAME"
    )
    for row, creator in zip(rows, creators, strict=True):
        us = "member" if row["member"] else "former"
        name = "(cannot open)" if row["name"] is None else safe(row["name"], NAME_SHOWN)
        click.echo(
            f"{row['group']:<{width}}  {row['members']:>7}  {row['epochs']:>6}  {us:<7}  "
            f"{when(row['last']):<{TIME_WIDTH}}  {creator:<{wide}}  {name}"
        )
