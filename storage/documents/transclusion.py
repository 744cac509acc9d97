"""Transclusion: a document showing live ranges of others in place (docs/DOCUMENTS.md).

Theory of operation
-------------------
An inclusion is a `doc/include` message of the including document's
tangle (protocol/document.py): it places a range of another document, named
by the atoms at its ends as a link names it, right after one atom of this
document (the root for the start). The engine keeps it once its place is
checked (storage/documents/engine.py `_include`); the range itself is
another document's, which a node may not hold or be able to read, so it is
read only when the document is shown. Like a comment, an inclusion changes
no text, takes no version and is in no weft: a document's own text is the
same with or without the inclusions, and `doc show` prints it exactly; the
rendering (`doc show --transclude`, the web view) is a separate reading.

Rendering walks the including document's text and, at each inclusion's
place (after its atom: where that atom is in the text now, or was, when it
was deleted), the range's text now in the included document, rendered in
turn with the inclusions that lie strictly inside that range (one at the
range's edges is outside it, as text typed there is outside a link). Every
place the rendering cannot follow says why instead of failing:

- `cycle`: the document is already being shown on this path (A includes B
  includes A): shown as such, not followed;
- `withheld`: a private document this node cannot open;
- `missing`: a document, or a range's end, this node does not hold;
- `deleted`: all of the range was deleted since (its text as it was);
- `too-deep`: past `MAX_DEPTH` inclusions within inclusions;
- `too-many`: a document's inclusions past `MAX_INCLUSIONS`, or past
  `MAX_FOLLOWED` in the whole rendering (counted), or once the rendering
  has walked `MAX_PIECES` pieces of weaves (each document read is one walk);
- `cut`: past `MAX_CODE_POINTS` rendered in all.

Inclusions at one place come in (claimed time, id) order: the same on
every node that holds the same messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from tanglenode.protocol.doc_link import Link
from tanglenode.protocol.document import AtomRef, DocumentError, include_content
from tanglenode.protocol.identity import message_text
from tanglenode.protocol.message import Message
from tanglenode.storage.documents import revisions
from tanglenode.storage.documents.revisions import Located
from tanglenode.storage.documents.rows import (
    I_AT,
    I_AT_INDEX,
    I_AUTHOR,
    I_FIRST,
    I_FIRST_INDEX,
    I_LAST,
    I_LAST_INDEX,
    I_SOURCE,
    I_TIMESTAMP,
    DocumentTables,
    docno_of,
    keys_with,
    unpack,
)
from tanglenode.storage.documents.sealed import waits
from tanglenode.storage.errors import BadSplice, UnknownDocument
from tanglenode.storage.feeds.layout import U32

if TYPE_CHECKING:
    from tanglenode.storage.context import StoreContext
    from tanglenode.storage.documents.ops import DocumentOps
    from tanglenode.storage.writes import Writes

MAX_DEPTH = 4  # inclusions within inclusions followed
MAX_INCLUSIONS = 64  # inclusions of one document shown; the rest are counted
MAX_FOLLOWED = 256  # inclusions followed in all, at every depth
MAX_CODE_POINTS = 1 << 19  # rendered in all (a reply within an IPC frame)
MAX_PIECES = 1 << 21  # pieces of the weaves walked in all: past it, no more is followed


@dataclass(frozen=True, slots=True)
class Part:
    """A piece of a rendering: `text`, or an inclusion (`included` with its `parts`), or a
    place that could not be followed, with why (`kind`, see the module)."""

    kind: str
    text: str = ""
    source: Link | None = None  # the included range
    author: bytes | None = None  # who included it
    parts: tuple[Part, ...] = field(default=())


class _Spot(NamedTuple):
    position: int  # code points of the including text before the inclusion
    timestamp: int
    msg_id: bytes
    row: list


class Renderer:
    """One rendering of a document with its inclusions, inside one read transaction. Each
    document read is one walk over its pieces (`revisions.locate`); the walks of one
    rendering are bounded by `MAX_PIECES` in all."""

    def __init__(self, txn, tables: DocumentTables) -> None:
        self._txn = txn
        self._tables = tables
        self._left = MAX_CODE_POINTS
        self._followed = 0
        self._pieces = 0

    def render(self, doc: bytes) -> list[Part]:
        docno = docno_of(self._txn, self._tables, doc)
        if docno is None:
            raise UnknownDocument(f"no document {message_text(doc)}")
        spots, located = self._read(docno, ())
        return self._render(located, spots, None, (doc,))

    def _read(self, docno: int, also: tuple[tuple[int, int], ...]) -> tuple[list, Located]:
        """Document `docno`'s inclusions (row and place) and its text, with `also` located."""
        rows = []
        for key in keys_with(self._txn, self._tables.includes, U32.pack(docno)):
            row = unpack(self._txn.get(key, db=self._tables.includes))
            at = self._atom(docno, (row[I_AT], row[I_AT_INDEX]))
            if at is not None:  # checked when kept: a document woven again lost it
                rows.append((at, row[I_TIMESTAMP], bytes(key[4:]), row))
        wanted = [at for at, *_rest in rows] + list(also)
        located = revisions.locate(self._txn, self._tables, docno, wanted)
        self._pieces += located.pieces
        spots = []
        for at, timestamp, msg_id, row in rows:
            position, _every, shown = located.where[at]
            spots.append(_Spot(position + int(shown), timestamp, msg_id, row))
        spots.sort()
        return spots, located

    def _render(self, located: Located, spots: list, window, path: tuple[bytes, ...]):
        text = located.text
        low, high = window or (0, len(text))
        inside = [
            spot
            for spot in spots
            if (low < spot.position < high) or (window is None and low <= spot.position <= high)
        ]
        parts: list[Part] = []
        cursor = low
        shown = inside[: max(0, min(MAX_INCLUSIONS, MAX_FOLLOWED - self._followed))]
        self._followed += len(shown)
        for spot in shown:
            self._text_part(parts, text[cursor : spot.position])
            cursor = spot.position
            parts.append(self._included(spot.row, path))
        if len(inside) > len(shown):
            parts.append(Part("too-many", str(len(inside) - len(shown))))
        self._text_part(parts, text[cursor:high])
        return parts

    def _text_part(self, parts: list[Part], text: str) -> None:
        if not text or self._left <= 0:
            return
        shown = text[: self._left]
        self._left -= len(shown)
        parts.append(Part("text", shown))
        if len(shown) < len(text):
            parts.append(Part("cut", str(len(text) - len(shown))))

    def _atom(self, docno: int, ref: tuple[bytes, int]) -> tuple[int, int] | None:
        key = self._txn.get(ref[0], db=self._tables.ids)
        if key is None or U32.unpack(key[:4])[0] != docno:
            return None
        return U32.unpack(key[4:8])[0], ref[1]

    def _included(self, row: list, path: tuple[bytes, ...]) -> Part:
        source = row[I_SOURCE]
        first, last = (row[I_FIRST], row[I_FIRST_INDEX]), (row[I_LAST], row[I_LAST_INDEX])
        link = Link(source, first, last, source)
        author = row[I_AUTHOR]
        if source in path:
            return Part("cycle", source=link, author=author)
        if len(path) > MAX_DEPTH:
            return Part("too-deep", source=link, author=author)
        if self._pieces >= MAX_PIECES:
            return Part("too-many", "1")
        docno = docno_of(self._txn, self._tables, source)
        if docno is None:
            kind = "withheld" if waits(self._txn, self._tables, source) else "missing"
            return Part(kind, source=link, author=author)
        first_at, last_at = self._atom(docno, first), self._atom(docno, last)
        if first_at is None or last_at is None:
            return Part("missing", source=link, author=author)
        ends = (first_at, last_at)
        spots, located = self._read(docno, ends)
        shown, start, every = located.span(ends[0], ends[1])
        if not shown:
            return Part("deleted", every[: max(self._left, 0)], source=link, author=author)
        parts = self._render(located, spots, (start, start + len(shown)), (*path, source))
        return Part("included", source=link, author=author, parts=tuple(parts))


class DocumentTransclusion:
    """`store.documents.transclusion`: include a range, render a document with its inclusions."""

    def __init__(self, ctx: StoreContext, writes: Writes, documents: DocumentOps) -> None:
        self._ctx = ctx
        self._writes = writes
        self._documents = documents

    def include(self, doc: bytes, position: int, link: Link) -> Message:
        """Include the range `link` names in `doc`, after its first `position` code points
        now (`BadSplice` past its end; `UnknownDocument` for a range this node does not
        hold, or one of `doc` itself)."""
        if link.doc == doc:
            raise BadSplice("a document includes ranges of other documents")
        self._writes.weave_all()
        tables = self._ctx.document_tables
        with self._ctx.read() as txn:
            source = self._documents.docno_in(txn, link.doc)
            for ref in (link.first, link.last):
                self._documents.atom_in(txn, source, ref)
            docno = self._documents.docno_in(txn, doc)
            if position == 0:
                at = AtomRef(doc, 0)  # the root: the very start
            else:
                atoms = revisions.visible_atoms(txn, tables, docno, None)
                if not 0 < position <= len(atoms):
                    raise BadSplice(f"no place {position} in a text of {len(atoms)} characters")
                at = AtomRef(*atoms[position - 1])
        try:
            content = include_content(at, link.doc, AtomRef(*link.first), AtomRef(*link.last))
        except DocumentError as error:
            raise BadSplice(f"not an inclusion: {error.detail}") from None

        def place_is_held(txn, docno: int) -> None:
            if at.index or at.msg != doc:
                self._documents.atom_in(txn, docno, (at.msg, at.index))  # type: ignore[arg-type]

        # Only the place is cited: naming the other document's messages in our timeframe
        # would hold our feed back on every node that does not carry their feeds.
        # (at.msg: the document or one of its stored atoms' message, never SELF)
        return self._documents.publish_beside(doc, content, [at.msg], {}, place_is_held)  # type: ignore[list-item]

    def render(self, doc: bytes) -> list[Part]:
        """`doc` with its inclusions in place (see the module)."""
        self._writes.weave_all()
        with self._ctx.read() as txn:
            self._documents.docno_in(txn, doc)  # SealedDocument, UnknownDocument
            return Renderer(txn, self._ctx.document_tables).render(doc)
