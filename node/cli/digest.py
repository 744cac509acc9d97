"""Timeline digests on the command line: `tangled timeline … --digest` and `status`'s lines.

A digest (storage/views/digest.py) is the hash of a timeline's order, with its
count: two nodes that print the same line hold the same timeline in the
same order. People compare the first 16 hex digits (`short`); `--json`
carries all 64. It is the IPC `timeline` op's (node/cli/backend.py): the
running node answers (its cache serves repeated asks), or the store here
while it is stopped.
"""

from __future__ import annotations

from typing import Any

import click

from tanglenode.node.cli.backend import Backend
from tanglenode.node.cli.support import Context, NotFound, emit_json
from tanglenode.node.cli.terminal import safe
from tanglenode.protocol.identity import message_text

SHORT = 16  # hex digits shown to people


def short(digest: bytes) -> str:
    return bytes(digest).hex()[:SHORT]


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


def digest_rows(digests: list[dict[str, Any]]) -> list[tuple[str, int, str]]:
    """(timeline, count, short digest) of each of `status`'s digests, as IPC sent them;
    the tangle's name, text others chose, made safe for a terminal."""
    rows = []
    for entry in digests:
        if entry.get("spacetime"):
            where = "spacetime"
        else:
            where = f"{safe(entry['tangle'])}/{message_text(bytes(entry['root']))}"
        rows.append((where, entry["count"], short(entry["digest"])))
    return rows


def digests_json(digests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`status`'s digests for `--json`: ids as `%…`, digests as 64 hex digits."""
    shown = []
    for entry in digests:
        entry = dict(entry)
        if "root" in entry:
            entry["root"] = message_text(bytes(entry["root"]))
        entry["digest"] = bytes(entry["digest"]).hex()
        shown.append(entry)
    return shown
