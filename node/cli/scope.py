"""`tangled follow`, `unfollow`, `block`, `unblock` and `scope`: what the node carries.

Each of the first four publishes a contact message of ours about one feed
(protocol/contacts.py), through the running node or on the stopped node's
store (node/cli/backend.py), and prints whether the node carries the feed
now; `follow` of a feed the node was never shown (node/ipc/scope_notes.py, nor
a peer of the config) says so, once: likely a mistyped id. `scope` lists
the feeds the node carries and why: ours, followed, a hop further (and
through whom), a group's member; then the blocked ones; then what the
scope's bounds left out (storage/scope.py): per feed (or group) whose
follows (or members) did not all fit, how many were left out when the room
was full (`cap`), and whether it names more feeds than are read of one
(`bound`).
"""

from __future__ import annotations

import click

from tanglenode.node.cli import COMMANDS
from tanglenode.node.cli.backend import ask
from tanglenode.node.cli.lookup import feed_arg
from tanglenode.node.cli.names import lazy_label
from tanglenode.node.cli.support import Context, emit_json, json_option
from tanglenode.protocol.identity import feed_text, message_text


def _contact_command(op: str) -> click.Command:
    @click.command(op, help=COMMANDS[op][1])  # the one line the command table shows
    @click.argument("feed", metavar="FEED")
    @json_option
    @click.pass_obj
    def command(obj: Context, feed: str, as_json: bool) -> None:
        whom = feed_arg(obj, feed)
        done = ask(obj, op, feed=whom)
        seen = done["seen"] or _configured_peer(obj, whom)
        if as_json:
            message = message_text(done["message"]["id"])
            said = {"message": message, "carried": done["carried"], "seen": seen}
            emit_json({"feed": feed_text(whom), **said})
            return
        carried = "carried" if done["carried"] else "not carried"
        never = "; never seen here: following anyway" if op == "follow" and not seen else ""
        click.echo(f"{op}: {lazy_label(obj, whole_ids=True)(whom)} ({carried} now{never})")

    return command


def _configured_peer(obj: Context, feed: bytes) -> bool:
    """Whether `feed` is a peer of the config (shown to us, whether the node runs or not)."""
    return feed_text(feed) in {peer.key for peer in obj.settings.peers}


follow_command = _contact_command("follow")
unfollow_command = _contact_command("unfollow")
block_command = _contact_command("block")
unblock_command = _contact_command("unblock")


@click.command("scope")
@json_option
@click.pass_obj
def scope_command(obj: Context, as_json: bool) -> None:
    """The feeds carried and why (ours, followed, hop N, a group's), the blocked, the left out.

    With [replication] hops = "all", the node carries every feed but the blocked.
    Then what was left out, and why: at most 20,000 feeds are carried (ours,
    those we follow and our groups' members first), the further hops sharing
    the rest in turns across the feeds that follow them; a feed's follows past
    its share are left out (cap), and of a feed that names more than 5,000
    feeds only its first 5,000 are read (bound).
    """
    found = ask(obj, "scope")
    feeds = found["feeds"]
    if as_json:
        emit_json(
            {
                "hops": found["hops"],
                "count": found["count"],
                "feeds": [_entry_json(entry) for entry in feeds],
                "blocked": [feed_text(feed) for feed in found["blocked"]],
                "left_out_count": found["left_out_count"],
                "left_out": [_left_out_json(entry) for entry in found["left_out"]],
            }
        )
        return
    label = lazy_label(obj, whole_ids=True)
    every = found["hops"] == "all"
    click.echo(f"hops: {found['hops']}" + ("  (every feed but the blocked)" if every else ""))
    for entry in feeds:
        why = entry["why"]
        if why == "hop":
            why = f"hop {entry['hop']}, followed by {label(entry['via'])}"
        elif why == "group":
            why = f"member of group {message_text(entry['via'])}"
        click.echo(f"{label(entry['feed'])}  {why}")
    if found["count"] > len(feeds):
        click.echo(f"... and {found['count'] - len(feeds)} more")
    for feed in found["blocked"]:
        click.echo(f"{label(feed)}  blocked")
    if found["left_out"]:
        click.echo(
            f"left out (at most {found['max_feeds']:,} feeds carried,"
            f" {found['max_follows_read']:,} read of one feed):"
        )
    for entry in found["left_out"]:
        click.echo(_left_out_line(entry, label, found))
    if found["left_out_count"] > len(found["left_out"]):
        click.echo(f"... and {found['left_out_count'] - len(found['left_out'])} more left out")


def _left_out_line(entry: dict, label, found: dict) -> str:
    """One introducer's line: whose feeds, how many the cap left out, whether unread."""
    if entry["hop"] == 0:
        whose = f"members of group {message_text(entry['via'])}"
    elif entry["hop"] == 1:
        whose = "feeds we follow"
    else:
        whose = f"hop {entry['hop']}, feeds {label(entry['via'])} follows"
    said = []
    if entry["count"]:
        said.append(f"{entry['count']:,} left out, the room full (cap)")
    if entry["unread"]:
        said.append(f"names more than {found['max_follows_read']:,}: the rest unread (bound)")
    return f"{whose}: {'; '.join(said)}"


def _left_out_json(entry: dict) -> dict:
    via = message_text(entry["via"]) if entry["hop"] == 0 else feed_text(entry["via"])
    return {
        "via": via,
        "hop": entry["hop"],
        "count": entry["count"],
        "unread": entry["unread"],
        "reasons": entry["reasons"],
    }


def _entry_json(entry: dict) -> dict:
    via = entry["via"]
    if via is not None:
        via = message_text(via) if entry["why"] == "group" else feed_text(via)
    return {"feed": feed_text(entry["feed"]), "why": entry["why"], "hop": entry["hop"], "via": via}
