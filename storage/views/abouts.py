"""The names feeds give themselves: an index of `about` messages, kept at ingest.

Theory of operation
-------------------
A feed names itself (Secure Scuttlebutt's convention) by publishing

    {"type": "about", "about": "@FEED", "name": "alice"}

with `about` its own feed id. Only a feed's own `about` names it (anyone may
write an `about` of someone else: that is an opinion, not a name), and the
latest by seq wins. `BatchWriter.apply` calls `index_about` for each accepted
message, in the write transaction that stores it: one `put` per own `about`,
nothing for any other message, into

    about-names    author + seq(u64 BE) -> name (UTF-8)

one row per own `about`, so a feed's rows are one contiguous key range in
seq order. The name is cleaned (`clean_name`: no control or format
characters, whitespace runs to one space, at most `MAX_NAME_CHARS`
characters) before it is stored, and again by every reader.

A feed's name is its row with the highest seq below its invalid boundary
(the highest row of all if the feed is valid). A feed cut back by a proof of
a fork loses its messages from the boundary on, and its
rows from there on name it by messages no longer held: they stay, unread
(boundaries only fall, storage.feeds.invalidation, so they can never count again).
The name then depends only on the messages held below the boundary, which
every honest node holds alike whatever the order the messages and the proof
came in: a node that stored the feed's later `about`s before the proof
falls back to the same earlier row as a node that never stored them.
`read_names` reads every feed's name in one pass over the table;
`read_name` one feed's by one seek (to author + boundary) and one step back.

A store written before this table existed holds `about` messages and no
rows: the view's `version` (2) is one such a store never recorded, so
opening it rebuilds the view from the messages held (storage/reindex.py,
"Versions"). A feed cut back before is indexed from the messages it still
holds, as `tangled import` of its bundle would, and so is named as it
would have been at ingest.
The table's first layout (`abouts`: author -> seq + name, marked by
`abouts-indexed`) was never released; a development store holding it has
the old table and marker dropped when opened (`drop_first_layout`, the
view's `opened` hook), so no row of one layout is ever read as the other.
`AboutsView` (storage/views/abouts_view.py) is the derived view
(storage/feeds/derived.py): it indexes each
accepted message and does nothing when a proof cuts a feed back (the rows
stay, unread, as above); its `content` leaves those rows out, so a view
rebuilt by `tangled reindex abouts` from the messages alone equals the one
kept at ingest.
`tangled check` rebuilds the table from the messages and compares
(`AboutsView.check`).
"""

from __future__ import annotations

import struct
import unicodedata
from typing import Any

from tanglenode.protocol.identity import feed_text

ABOUTS_DB = b"about-names"
FIRST_LAYOUT_DB = b"abouts"  # author -> seq + name: development stores only
FIRST_LAYOUT_INDEXED = b"abouts-indexed"
MAX_NAME_CHARS = 40  # a name is a label, not a text
ROW_KEY_LEN = 40  # author (32) + seq (u64 BE)
_U64 = struct.Struct(">Q")
_PAST_EVERY_SEQ = b"\xff" * 9  # after author: sorts after every key of the feed
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
    """Record the name a just-stored message gives its author, as its own row."""
    name = about_name(content, author)
    if name is not None:
        txn.put(about_key(author, seq), name.encode(), db=db)


def about_key(author: bytes, seq: int) -> bytes:
    """The `about-names` key of the own `about` at `seq`."""
    return author + _U64.pack(seq)


def split_about_key(key: bytes) -> tuple[bytes, int]:
    """A row key's (author, seq)."""
    return bytes(key[:32]), _U64.unpack(key[32:ROW_KEY_LEN])[0]


def _read(value: bytes) -> str:
    return clean_name(bytes(value).decode(errors="replace"))


def read_names(txn: Any, db: Any, boundaries: dict[bytes, int]) -> dict[bytes, str]:
    """Feed -> its name, in one pass over the table: each feed's rows come together, in
    seq order, so the last row below the feed's boundary (`boundaries`: the invalid
    feeds) is the one that names it."""
    named: dict[bytes, bytes] = {}
    for key, value in txn.cursor(db=db):
        author, seq = split_about_key(key)
        boundary = boundaries.get(author)
        if boundary is None or seq < boundary:
            named[author] = value
    return {author: name for author, value in named.items() if (name := _read(value))}


def read_name(txn: Any, db: Any, author: bytes, boundary: int | None) -> str | None:
    """One feed's name: seek to its first row at or past `boundary` (None: the feed is
    valid, past its last row), and step back to the row before."""
    cursor = txn.cursor(db=db)
    end = about_key(author, boundary) if boundary is not None else author + _PAST_EVERY_SEQ
    found = cursor.prev() if cursor.set_range(end) else cursor.last()
    if not found or bytes(cursor.key()[:32]) != author:
        return None
    return _read(cursor.value()) or None


def drop_first_layout(env: Any, meta: Any) -> None:
    """Drop the unreleased first layout's table and marker, if this store has them."""
    with env.begin() as txn:
        if txn.get(FIRST_LAYOUT_DB) is None:  # a named database is a row of the main one
            return
    with env.begin(write=True) as txn:
        txn.drop(env.open_db(FIRST_LAYOUT_DB, txn=txn, create=False), delete=True)
        txn.delete(FIRST_LAYOUT_INDEXED, db=meta)
