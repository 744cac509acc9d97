"""`tangled group ...`: private groups through the running node."""

from __future__ import annotations

import json
from typing import Any

import click
import trio

from tanglenode.node.cli.support import (
    Context,
    call_node,
    emit_json,
    json_option,
    read_content,
    render_body,
)
from tanglenode.protocol.identity import parse_feed, parse_message_id


@click.group("group")
def group_command() -> None:
    """Private groups: create, add, exclude, post, members, epochs, timeline."""


def _group_call(op: str, **arguments: Any) -> Any:
    obj = click.get_current_context().find_object(Context)
    return render_body(trio.run(call_node, obj, op, arguments))


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
    obj = click.get_current_context().find_object(Context)
    value = read_content(content, obj.settings)
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
