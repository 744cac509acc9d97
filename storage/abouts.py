"""The names feeds give themselves: an index of `about` messages, kept at ingest.

Theory of operation
-------------------
A feed names itself (Secure Scuttlebutt's convention) by publishing

    {"type": "about", "about": "@FEED", "name": "alice"}

with `about` its own feed id. Only a feed's own `about` names it (anyone may
write an `about` of someone else: that is an opinion, not a name), and the
latest by seq wins. `BatchWriter.apply` calls `index_about` for each accepted
message, in the write transaction that stores it, so the table

    abouts     author -> seq(u64 BE) + name (UTF-8)

always agrees with the stored feeds and a name is one `get`. The name is
cleaned (`clean_name`: no control or format characters, whitespace runs to
one space, at most `MAX_NAME_CHARS` characters) before it is stored, and again
by every reader.

A feed cut back by a proof (a fork or a timeframe cycle) loses its messages
from the boundary on; a row whose seq is at or past the boundary names the
feed by a message no longer held, so readers ignore it (`about_names`): the
feed then shows no self-chosen name, even if an earlier `about` named it.
Stores written before this table existed index the `about` messages they
receive from then on; a `tangled export --bundle` and `import` indexes them all.
`tangled check` rebuilds the table from the messages and compares
(`storage.check`).
"""

from __future__ import annotations

import struct
import unicodedata
from typing import Any

from tanglenode.protocol.identity import feed_text

ABOUTS_DB = b"abouts"
MAX_NAME_CHARS = 40  # a name is a label, not a text
_U64 = struct.Struct(">Q")
_UNSEEN = frozenset("\u200b\u200c\u200d\u2060\ufeff")  # zero-width characters


def clean_name(text: str, limit: int = MAX_NAME_CHARS) -> str:
    """`text` as one safe line: no control, format (bidi overrides, zero-width) or
    private-use characters, whitespace runs as one space, at most `limit` characters."""
    kept = []
    for char in text[: limit * 8]:  # the cut bounds the work; what survives is cut again
        category = unicodedata.category(char)
        if char.isspace() or category in ("Zl", "Zp"):
            kept.append(" ")
        elif category[0] != "C" and char not in _UNSEEN:
            kept.append(char)
    return " ".join("".join(kept).split())[:limit].strip()


def about_name(content: Any, author: bytes) -> str | None:
    """The name `content` gives its author, if it is the author's own `about` with one."""
    if not isinstance(content, dict) or content.get("type") != "about":
        return None
    name = content.get("name")
    if not isinstance(name, str) or content.get("about") != feed_text(author):
        return None
    return clean_name(name) or None


def index_about(txn: Any, db: Any, author: bytes, seq: int, content: Any) -> None:
    """Record the name a just-stored message gives its author (its latest wins)."""
    name = about_name(content, author)
    if name is None:
        return
    held = txn.get(author, db=db)
    if held is not None and _U64.unpack(held[:8])[0] > seq:
        return  # never: a feed grows by seq; kept so a replay cannot go back
    txn.put(author, about_row(seq, name), db=db)


def about_row(seq: int, name: str) -> bytes:
    """The `abouts` value of a name given by the message at `seq`."""
    return _U64.pack(seq) + name.encode()


def read_about(value: bytes) -> tuple[int, str]:
    """A row's (seq, name)."""
    return _U64.unpack(value[:8])[0], clean_name(bytes(value[8:]).decode(errors="replace"))
