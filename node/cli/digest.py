"""Timeline digests on the command line: `tangled timeline … --digest` and `status`'s lines.

A digest (storage/views/digest.py) is the hash of a timeline's order, with its
count: two nodes that print the same line hold the same timeline in the
same order. People compare the first 16 hex digits (`short`); `--json`
carries all 64. The short form and `status`'s rows are node/present/digests.py's,
shared with the web view's `/`. It is the IPC `timeline` op's (node/cli/backend.py): the
running node answers (its cache serves repeated asks), or the store here
while it is stopped.
"""

from __future__ import annotations

from typing import Any

import click

from tanglenode.node.cli.backend import Backend
from tanglenode.node.cli.support import Context, NotFound, emit_json
from tanglenode.node.present.digests import SHORT as SHORT
from tanglenode.node.present.digests import digest_rows as digest_rows  # `status`'s
from tanglenode.node.present.digests import digests_json as digests_json
from tanglenode.node.present.digests import short
from tanglenode.node.present.text import safe
from tanglenode.protocol.identity import message_text


def show_digest(obj: Context, which: dict[str, Any], label: str, as_json: bool) -> None:
    """Print one timeline's digest, `which` as IPC names it."""
    with Backend(obj) as node:
        try:
            found = node.call("timeline", **which, digest=True)
        except NotFound:
            raise NotFound(f"no timeline {label} in the store") from None
    version, count, digest = found["version"], found["count"], bytes(found["digest"])
    if as_json:
        where = {key: value for key, value in which.items() if key != "root"}
        if "root" in which:
            where["root"] = message_text(which["root"])
        emit_json(where | {"version": version, "count": count, "digest": digest.hex()})
    else:
        click.echo(f"{safe(label)}  {count} entries  digest {short(digest)}")
