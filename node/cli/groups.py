"""`tangled group ...`: private groups, through the running node or on the store here
(node/cli/backend.py; docs/GROUPS.md)."""

from __future__ import annotations

from typing import Any

import click

from tanglenode.node.cli.backend import ask
from tanglenode.node.cli.lookup import feed_arg, message_arg
from tanglenode.node.cli.support import (
    Context,
    emit_json,
    json_option,
    read_content,
    render_body,
)
from tanglenode.node.present.text import safe
from tanglenode.protocol.identity import parse_feed


@click.group("group")
def group_command() -> None:
    """Private groups: create, add, exclude, post, members, epochs, timeline.

    GROUP is a group's id: the id of its root message, which `group create` prints
    (or enough of its start to be the only one: 4 characters after the %, or more).
    Every subcommand asks the running node, or reads and writes the store directly
    while it is stopped (docs/GROUPS.md).
    """


def _obj() -> Context:
    return click.get_current_context().find_object(Context)


def _group_call(op: str, **arguments: Any) -> Any:
    return render_body(ask(_obj(), op, **arguments))


def _group(text: str) -> bytes:
    """GROUP: its id, whole or cut short (node/cli/lookup.py)."""
    return message_arg(_obj(), text, what="group")


def _members(feeds: tuple[str, ...]) -> list[bytes]:
    """Each FEED: an @id (or enough of one), ~NAME or a petname (node/cli/lookup.py)."""
    return [feed_arg(_obj(), feed) for feed in feeds]


def _names() -> Any:
    """Our names for feeds (node/cli/names.py), for the human output only."""
    from tanglenode.node.cli.names import load_names

    return load_names(_obj())


def _named(names: Any, feed_id: str) -> str:
    """`@id  name` (the id first, so the column can be copied), or the id alone."""
    name = names.name(parse_feed(feed_id))
    return f"{feed_id}  {name}" if name else feed_id


@group_command.command("create")
@click.argument("name", metavar="NAME")
def group_create(name: str) -> None:
    """Start a group called NAME (you are its first member); prints the group id."""
    click.echo(_group_call("group-create", name=name)["group"])


@group_command.command("add")
@click.argument("group", metavar="GROUP")
@click.argument("feeds", nargs=-1, required=True, metavar="FEED...")
def group_add(group: str, feeds: tuple[str, ...]) -> None:
    """Add each FEED (an @id, ~NAME or a petname) to GROUP's current epoch; they receive its
    key."""
    click.echo(_group_call("group-add", group=_group(group), members=_members(feeds))["id"])


@group_command.command("exclude")
@click.argument("group", metavar="GROUP")
@click.argument("feeds", nargs=-1, required=True, metavar="FEED...")
def group_exclude(group: str, feeds: tuple[str, ...]) -> None:
    """Exclude each FEED from GROUP and open a new epoch with a new key; prints its id."""
    done = _group_call("group-exclude", group=_group(group), members=_members(feeds))
    click.echo(done["epoch"])


@group_command.command("post")
@click.argument("group", metavar="GROUP")
@click.argument("content", metavar="CONTENT")
def group_post(group: str, content: str) -> None:
    """Post JSON CONTENT ('-' reads stdin) to GROUP, sealed with the current epoch's key.

    Only a member of the current epoch may post: an excluded member is refused (exit 3).
    """
    value = read_content(content, _obj().settings)
    click.echo(_group_call("group-post", group=_group(group), content=value)["id"])


@group_command.command("members")
@click.argument("group", metavar="GROUP")
@json_option
def group_members(group: str, as_json: bool) -> None:
    """GROUP's current members."""
    shown = _group_call("group-show", group=_group(group))
    if as_json:
        emit_json(shown["members"])
    else:
        names = _names()
        for member in shown["members"]:
            click.echo(safe(_named(names, member)))


@group_command.command("epochs")
@click.argument("group", metavar="GROUP")
@json_option
def group_epochs(group: str, as_json: bool) -> None:
    """GROUP's epochs: each one's id, whether it is the current one, its members."""
    shown = _group_call("group-show", group=_group(group))
    if as_json:
        emit_json(shown["epochs"])
        return
    for epoch in shown["epochs"]:
        mark = "current" if epoch["current"] else "       "
        click.echo(f"{epoch['id']}  {mark}  {len(epoch['members'])} members")


@group_command.command("timeline")
@click.argument("group", metavar="GROUP")
@click.option(
    "--tangle",
    type=click.Choice(["group", "members", "epoch"]),
    default="group",
    show_default=True,
    help="group: every message of the group; members: the current epoch's init and its "
    "adds and excludes; epoch: the group's epochs (their inits), in the order they followed.",
)
@click.option(
    "--order",
    type=click.Choice(["rank", "causal-time"]),
    default="rank",
    show_default=True,
    help="rank: ScuttleSort's (rank, id); causal-time: causality, then claimed time, then id.",
)
@json_option
def group_timeline(group: str, tangle: str, order: str, as_json: bool) -> None:
    """GROUP's messages in order, opened where this node holds the key.

    A line per message: its id, its author, its type and what it says (a post's content,
    the members an add or exclude names); "(cannot open)" where we hold no key for it,
    [invalid] where the group's rules refuse it. A GROUP that is not a group: exit 4.
    """
    found = _group_call("group-timeline", group=_group(group), tangle=tangle, order=order)
    if as_json:
        for row in found["entries"]:
            emit_json(row)
        return
    from tanglenode.node.cli.summary import Summaries, fit, terminal_width

    names = _names()
    label = names.label
    summaries = Summaries(label)
    width = terminal_width()
    for row in found["entries"]:
        what = row["type"] or "(cannot open)"
        if row["type"] == "group/post":
            what = summaries.content_line(row["content"])
        elif row["members"]:
            what += " " + ", ".join(label(parse_feed(member)) for member in row["members"])
        flag = "" if row["valid"] or row["type"] is None else "  [invalid]"
        author = label(parse_feed(row["author"]))
        click.echo(fit(safe(f"{row['id']}  {author:<14}  {what}{flag}"), width))
