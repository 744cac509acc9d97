"""`tangled invite create | use | list | revoke`: joining a node in one step.

`create` prints the code alone on stdout (so `CODE=$(tangled invite create)`
works) and what it allows on stderr; `use` prints one line saying whom we
joined, what we carry of them now and whether they follow us back. Codes
are secrets: nothing here logs one. Refusals exit 3 with the inviter's
reason code first (`invite-used-up: ...`), so scripts can tell them apart.
"""

from __future__ import annotations

import re
import time
from typing import Any

import click

from tanglenode.node.cli.backend import ask
from tanglenode.node.cli.names import lazy_label
from tanglenode.node.cli.support import BadInput, Context, NotFound, emit_json, json_option
from tanglenode.node.ipc.oneshot import NodeError
from tanglenode.protocol.address import parse_address
from tanglenode.protocol.identity import feed_text
from tanglenode.protocol.invite import MAX_CODE_CHARS, BadInvite, parse_code
from tanglenode.protocol.ipc_fields import ErrorKind
from tanglenode.protocol.ipc_invites import MAX_EXPIRES

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 7 * 86_400}
_DURATION = re.compile(r"(\d{1,7})([smhdw])")


def parse_duration(text: str) -> int | None:
    """`30m`, `12h`, `7d`, `2w` as seconds; `never` as None."""
    if text == "never":
        return None
    found = _DURATION.fullmatch(text.strip())
    if found is None:
        raise BadInput(f"--expires {text[:40]!r}: a number and s, m, h, d or w (7d), or never")
    seconds = int(found[1]) * _UNITS[found[2]]
    if not 1 <= seconds <= MAX_EXPIRES:
        raise BadInput(f"--expires is at most {MAX_EXPIRES // 86_400} days")
    return seconds


def _call(obj: Context, op: str, **arguments: Any) -> Any:
    """`ask`, a refusal becoming exit 3 with its reason code first."""
    try:
        return ask(obj, op, **arguments)
    except NodeError as error:
        if error.kind == ErrorKind.NOT_FOUND:
            raise NotFound(error.message) from None
        if error.kind in (ErrorKind.REFUSED, ErrorKind.BAD_REQUEST):
            prefix = f"{error.reason}: " if error.reason else ""
            raise BadInput(prefix + error.message) from None
        raise


@click.group("invite")
def invite_command() -> None:
    """Invites: create a code for someone to join this node, use one, list, revoke.

    The running node keeps each invite (only a hash of its secret), counts its
    uses down and follows back whoever redeems it, unless the invite says not
    to (docs/PEERS.md, "Invites")."""


def _when(seconds: float | None) -> str:
    if seconds is None:
        return "never"
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(seconds))


@invite_command.command("create")
@click.option("--uses", default=1, show_default=True, help="How many people may redeem it.")
@click.option(
    "--expires",
    "expires",
    default="7d",
    show_default=True,
    help="How long it stays good: 30m, 12h, 7d, 2w, or never.",
)
@click.option(
    "--no-follow-back",
    is_flag=True,
    help="Do not follow whoever redeems it (a community peer with follow_invited still does).",
)
@click.option(
    "--address",
    "addresses",
    multiple=True,
    metavar="HOST:PORT",
    help="Where redeemers reach this node (repeatable; default: where it listens).",
)
@json_option
@click.pass_obj
def invite_create(
    obj: Context,
    uses: int,
    expires: str,
    no_follow_back: bool,
    addresses: tuple[str, ...],
    as_json: bool,
) -> None:
    """Print a code that lets someone join this node in one step (tangled invite use CODE)."""
    made = _call(
        obj,
        "invite-create",
        uses=uses,
        expires=parse_duration(expires),
        follow_back=not no_follow_back,
        addresses=list(addresses),
    )
    if as_json:
        emit_json({"code": made["code"], "id": made["id"]})
        return
    click.echo(made["code"])
    back = "follows back" if made["follows_back"] else "does not follow back"
    uses_text = "1 use" if made["uses"] == 1 else f"{made['uses']} uses"
    click.echo(
        f"invite {made['id']}: {uses_text}, expires {_when(made['expires'])}, {back}; "
        f"reached at {', '.join(made['addresses'])}",
        err=True,
    )
    if all(_loopback(address) for address in made["addresses"]):
        click.echo(
            "note: only this machine reaches those addresses; for others, listen on a "
            'reachable one (listen = "0.0.0.0:8008" in tangled.toml) or give --address',
            err=True,
        )


def _loopback(address: str) -> bool:
    host = parse_address(address)[0]
    return host == "localhost" or host.startswith("127.") or host == "::1"


@invite_command.command("use")
@click.argument("code", metavar="CODE")
@click.option("--no-save", is_flag=True, help="Do not add the inviter to the config's peers.")
@json_option
@click.pass_obj
def invite_use(obj: Context, code: str, no_save: bool, as_json: bool) -> None:
    """Redeem CODE: the running node joins the inviter, follows it and dials it at every start.

    CODE '-' reads it from stdin (a code on the command line shows in `ps`)."""
    if code == "-":
        code = click.get_text_stream("stdin").read(MAX_CODE_CHARS + 1).strip()
    try:
        parse_code(code)  # a typo is told here, before the node is asked
    except BadInvite as error:
        raise BadInput(f"{error.refusal}: {error}") from None
    done = _call(obj, "invite-use", code=code, save=not no_save)
    inviter = done["inviter"]
    if as_json:
        emit_json(
            {
                "inviter": feed_text(inviter),
                "address": done["address"],
                "follows_back": done["follows_back"],
                "carried": done["carried"],
                "saved": done["saved"],
            }
        )
        return
    who = lazy_label(obj, whole_ids=True)(inviter)
    carried = "carried now" if done["carried"] else "NOT carried (see tangled scope)"
    back = "they follow you back" if done["follows_back"] else "they do not follow you back"
    if done["saved"] is None:
        saved = "not saved (no config file)" if not no_save else "not saved"
    elif done["saved"] is False and done.get("not_saved"):
        saved = f"not saved: {done['not_saved']}"
    else:
        saved = f"saved in {obj.config_file}"
    click.echo(f"joined {who} at {done['address']}: following, {carried}; {back}; {saved}")


@invite_command.command("list")
@json_option
@click.pass_obj
def invite_list(obj: Context, as_json: bool) -> None:
    """The invites this node made: id, state, uses left, expiry, who redeemed them."""
    rows = _call(obj, "invite-list")["invites"]
    if as_json:
        emit_json(
            [row | {"redeemed_by": [feed_text(f) for f in row["redeemed_by"]]} for row in rows]
        )
        return
    if not rows:
        click.echo("no invites (tangled invite create makes one)")
        return
    label = lazy_label(obj)
    for row in rows:
        who = ", ".join(label(feed) for feed in row["redeemed_by"]) or "nobody yet"
        back = "follows back" if row["follow_back"] else "no follow back"
        click.echo(
            f"{row['id']}  {row['state']:<8} {row['left']}/{row['uses']} left  "
            f"expires {_when(row['expires'])}  {back}  redeemed by {who}"
        )


# An invite's ID is base64url, so it may begin with "-": taken as the ID, never as an option.
@invite_command.command("revoke", context_settings={"ignore_unknown_options": True})
@click.argument("ident", metavar="ID")
@json_option
@click.pass_obj
def invite_revoke(obj: Context, ident: str, as_json: bool) -> None:
    """Revoke the invite ID (tangled invite list): it can no longer be redeemed."""
    done = _call(obj, "invite-revoke", invite=ident)
    if as_json:
        emit_json({"id": done["id"], "state": done["state"], "revoked": done["revoked"]})
        return
    click.echo(f"revoked invite {done['id']}")
