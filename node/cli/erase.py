"""`tangled delete MSG` and `tangled purge MSG…`: forgetting content.

`delete` erases one of our own messages everywhere: it publishes our erase
request (through the running node, or on the stopped node's store), which
drops the content here at once and on every node that processes it; the
header stays, so every link through the message holds. `purge` drops the
contents of any messages here only, an operator's choice never asked of
peers. Either way `tangled compact` (node stopped) then returns the space,
and no byte of what went stays in the data directory.
"""

from __future__ import annotations

import click

from tanglenode.node.cli.backend import ask
from tanglenode.node.cli.lookup import message_arg
from tanglenode.node.cli.support import Context, emit_json, json_option
from tanglenode.protocol.identity import message_text


@click.command("delete")
@click.argument("message", metavar="MSG")
@json_option
@click.pass_obj
def delete_command(obj: Context, message: str, as_json: bool) -> None:
    """Erase our message MSG on every node: its content goes, its header (and links) stay."""
    done = ask(obj, "delete", message=message_arg(obj, message))
    request = message_text(done["message"]["id"])
    if as_json:
        emit_json({"erased": message_text(done["erased"]), "request": request})
        return
    click.echo(f"erased {message_text(done['erased'])} (request {request}; peers follow)")


@click.command("purge")
@click.argument("messages", nargs=-1, required=True, metavar="MSG...")
@json_option
@click.pass_obj
def purge_command(obj: Context, messages: tuple[str, ...], as_json: bool) -> None:
    """Drop the contents of MSG... here only (headers stay); `tangled compact` frees the space."""
    ids = [message_arg(obj, text) for text in messages]
    done = ask(obj, "purge", messages=ids)
    if as_json:
        emit_json({"purged": [message_text(each) for each in done["purged"]]})
        return
    click.echo(f"purged {len(done['purged'])} of {len(ids)} (the others held no content here)")
