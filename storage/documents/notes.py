"""Comments and inclusions: document messages kept beside the weave (docs/DOCUMENTS.md).

Theory of operation
-------------------
A comment (storage/documents/comments.py) and an inclusion
(storage/documents/transclusion.py) are messages of a document's tangle
that change no text. The engine (storage/documents/engine.py) hands them
here when it processes them, in the transaction that stored them, and they
are checked where an edit is checked, against the document and the
message's weft (read through its timeframe, as an edit's), so that every
node keeps the same ones and sets aside the same ones with one reason:

- the document's init inside the message's timeframe, the document woven
  here, the message sealed in the document's group if it is private;
- a comment on a range: both ends text atoms of messages of this document
  inside its weft;
- a reply: in the `comment` tangle of a comment its timeframe names
  (checked first, from the reply alone: a comment is in no weft), kept in
  this document, and itself no reply;
- an inclusion: its place a text atom (or the root) of this document
  inside its weft, and another document as its source, whose range is read
  only when the document is shown (a node may not hold it or be able to
  open it).

What passes is a row of `doc-comments` or `doc-includes`. Nothing here is
woven, takes a version, or enters a weft: the document's text, versions
and wefts are the same with or without them. When a document is woven
again, they are decided again after its messages (storage/documents/reweave.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tanglenode.protocol.document import (
    COMMENT_TANGLE,
    DocComment,
    DocInclude,
    DocReason,
    DocumentError,
)
from tanglenode.protocol.message import Message
from tanglenode.storage.documents.rows import (
    C_THREAD,
    ROOT,
    TEXT_ATOM,
    DocumentTables,
    group_of,
    pack,
    segment_kinds,
    unpack,
)
from tanglenode.storage.documents.wefts import covers
from tanglenode.storage.feeds.layout import U32

if TYPE_CHECKING:
    from tanglenode.storage.documents.engine import DocumentEngine


class Notes:
    """Checks and keeps comments and inclusions through the engine that processes them."""

    def __init__(self, engine: DocumentEngine, txn, tables: DocumentTables, message_ids) -> None:
        self._engine = engine
        self._txn = txn
        self._tables = tables
        self._message_ids = message_ids

    def keep(
        self, message: Message, root: bytes, note: DocComment | DocInclude, group: bytes | None
    ) -> None:
        """Keep `note` (of document `root`, opened from `group`'s seal or plain) or raise
        `DocumentError` saying why it is set aside."""
        if not covers(self._txn, self._message_ids, message, root):
            raise DocumentError(DocReason.OUTSIDE_WEFT, "the doc/init is outside its weft")
        doc = self._engine.document(root)
        if group_of(doc.meta) != group:
            raise DocumentError(
                DocReason.WRONG_GROUP, "it is sealed (or not) as its document's edits are"
            )
        if isinstance(note, DocComment):
            row = self._comment(message, doc, note)
            db = self._tables.comments
        else:
            row = self._include(message, root, doc, note)
            db = self._tables.includes
        self._txn.put(U32.pack(doc.docno) + message.id, pack(row), db=db)

    def _comment(self, message: Message, doc, comment: DocComment) -> list:
        thread = message.tangles.get(COMMENT_TANGLE)
        row = [message.author, message.seq, message.timestamp, comment.text]
        if comment.range is not None:
            if thread is not None and thread.root is not None:
                raise DocumentError(
                    DocReason.MALFORMED, "a comment on a range starts its own thread"
                )
            weft = doc.wefts.of_edit(message)
            for ref in comment.range:
                self._atom_of_kind(doc, ref, weft, {TEXT_ATOM}, "a range's ends are text atoms")
            first, last = comment.range
            return [*row, first.msg, first.index, last.msg, last.index, None]
        if thread is None or thread.root is None:
            raise DocumentError(
                DocReason.MALFORMED, f"a reply is in the {COMMENT_TANGLE!r} tangle it answers"
            )
        # A comment is in no weft (it is not woven): the reply's timeframe names it,
        # checked first, from the reply alone, so that every node gives one reason.
        if not covers(self._txn, self._message_ids, message, thread.root):
            raise DocumentError(
                DocReason.OUTSIDE_WEFT, "answers a comment outside the reply's timeframe"
            )
        key = U32.pack(doc.docno) + thread.root
        answered = self._txn.get(key, db=self._tables.comments)
        if answered is None:
            self._engine.wait_if_sealed(doc, thread.root)
            raise DocumentError(DocReason.UNKNOWN_ATOM, "answers no comment of this document")
        if unpack(answered)[C_THREAD] is not None:
            raise DocumentError(DocReason.MALFORMED, "a reply answers a comment, not a reply")
        return [*row, None, None, None, None, thread.root]

    def _include(self, message: Message, root: bytes, doc, include: DocInclude) -> list:
        if include.source == root:
            raise DocumentError(DocReason.MALFORMED, "a document includes another document")
        weft = doc.wefts.of_edit(message)
        self._atom_of_kind(
            doc, include.at, weft, {ROOT, TEXT_ATOM}, "an inclusion goes after a text atom"
        )
        row = [message.author, message.seq, message.timestamp, include.at.msg, include.at.index]
        row += [include.source, include.first.msg, include.first.index]
        return [*row, include.last.msg, include.last.index]

    def _atom_of_kind(self, doc, ref, weft, kinds: set[int], wrong: str) -> None:
        _mno, segments = self._engine.cited(doc, ref, weft, 0, [], {})
        found = segment_kinds(segments, ref.index, 1)
        if found is None:
            raise DocumentError(DocReason.UNKNOWN_ATOM, f"atom {ref.index} absent")
        if not found <= kinds:
            raise DocumentError(DocReason.WRONG_KIND, wrong)
