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

A store written before this table existed holds `about` messages and an
empty table. Opening it indexes them once (`backfill_abouts`, called by
`FeedStore` until the `meta` row `abouts-indexed` says it is done): the
stored messages in key order, a bounded batch per write transaction (the
write lock is never held long, in case a node runs beside), the marker
written in the transaction of the last batch. Indexing is idempotent (the
latest seq wins), so a backfill cut short simply runs again at the next
open. A new store writes the marker with its schema. A feed cut back before
the backfill is indexed from the messages it still holds, as `tangled
import` of its bundle would: an earlier `about` may then name it.
Not a schema version: a new version refuses the store until it is exported
and imported, which a table that can be filled in place does not need.
`tangled check` rebuilds the table from the messages and compares
(`storage.check`).
"""

from __future__ import annotations

import struct
import unicodedata
from typing import Any

from tanglenode.protocol.identity import feed_text
from tanglenode.storage.stored_form import parse_stored

ABOUTS_DB = b"abouts"
ABOUTS_INDEXED = b"abouts-indexed"  # the `meta` row: every stored message is indexed
BACKFILL_BATCH = 4096  # messages read per write transaction of the backfill
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


def backfill_abouts(
    txn: Any, tables: Any, start: bytes, limit: int = BACKFILL_BATCH
) -> bytes | None:
    """Index up to `limit` stored messages from key `start` on (b"": the first) in
    write transaction `txn`; the key to go on from, None once the store is indexed.

    At the end it writes the `meta` marker in `txn`, and a store marked already
    is left alone (a backfill may run in two processes at once).
    """
    if txn.get(ABOUTS_INDEXED, db=tables.meta) is not None:
        return None
    cursor = txn.cursor(db=tables.messages)
    found, count = cursor.set_range(start), 0
    while found and count < limit:
        key, value = cursor.item()
        if b"about" in value:  # the word is in every `about`'s content, verbatim
            author, seq = bytes(key[:32]), _U64.unpack(key[32:40])[0]
            message = parse_stored(tables.bodies.rebuild(txn, key, value))
            index_about(txn, tables.abouts, author, seq, message.content)
        found, count = cursor.next(), count + 1
    if found:
        return bytes(cursor.key())
    txn.put(ABOUTS_INDEXED, b"1", db=tables.meta)
    return None
