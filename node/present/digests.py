"""A timeline's digest as people compare it: its first 16 hex digits (`short`), and the
rows `status` shows (the CLI's `tangled status`, the web view's `/`).

A digest (storage/views/digest.py) is the hash of a timeline's order, with its
count: two nodes that show the same row hold the same timeline in the same
order. `--json` carries all 64 digits (`digests_json`).
"""

from __future__ import annotations

from typing import Any

from tanglenode.node.present.text import safe
from tanglenode.protocol.identity import message_text

SHORT = 16  # hex digits shown to people


def short(digest: bytes) -> str:
    return bytes(digest).hex()[:SHORT]


def digest_rows(digests: list[dict[str, Any]]) -> list[tuple[str, int, str]]:
    """(timeline, count, short digest) of each of `status`'s digests, as IPC sent them;
    the tangle's name, text others chose, made safe to show."""
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
