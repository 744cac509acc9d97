"""Comments on a document's ranges, and their replies (docs/DOCUMENTS.md, "Comments").

Theory of operation
-------------------
A comment is a `doc/comment` message of the document's tangle
(protocol/document.py): it names the text atoms at the two ends of the
range it is about, as a link does (protocol/doc_link.py), and roots its own
`comment` tangle, where its replies go. The engine checks it where the
edits are checked, in processed order and against the comment's weft, so
every node keeps the same comments and sets aside the same ones; a private
document's comments are sealed in its group as its edits are, and wait for
a key as they do. A comment changes no text: it is not woven, takes no
version, and no later message's weft depends on it, so the text of a
document is the same whether or not a node keeps its comments.

Read, a comment shows the text between its ends now, whatever was typed
inside the range since; when all of that text was deleted it shows the
deleted text (every text atom between its ends), marked so, as a reader
of the paper would see a note beside struck-out text. Comments come in the
order of their ranges in the text (those on deleted text last), each with
its replies in (claimed time, id) order: the same on every node.

Writing publishes through the store's one writer, in one transaction with
weaving what the backlog holds first, so the range is read from the text
the writer sees.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tanglenode.protocol.doc_link import Link
from tanglenode.protocol.document import (
    COMMENT_TANGLE,
    TANGLE,
    AtomRef,
    DocumentError,
    comment_content,
)
from tanglenode.protocol.identity import message_text
from tanglenode.protocol.message import Message
from tanglenode.storage.documents import revisions
from tanglenode.storage.documents.rows import (
    C_AUTHOR,
    C_FIRST,
    C_FIRST_INDEX,
    C_LAST,
    C_LAST_INDEX,
    C_TEXT,
    C_THREAD,
    C_TIMESTAMP,
    DocumentTables,
    keys_with,
    unpack,
)
from tanglenode.storage.errors import BadSplice, UnknownDocument
from tanglenode.storage.feeds.layout import U32

if TYPE_CHECKING:
    from tanglenode.storage.context import StoreContext
    from tanglenode.storage.documents.ops import DocumentOps
    from tanglenode.storage.writes import Writes

MAX_SHOWN = 1000  # comments (with their replies) a read returns, at most
QUOTE_KEPT = 4000  # code points of a comment's range a read keeps


@dataclass(frozen=True, slots=True)
class Reply:
    id: bytes
    author: bytes
    timestamp: int
    text: str


@dataclass(frozen=True, slots=True)
class Comment:
    id: bytes
    author: bytes
    timestamp: int
    text: str
    link: Link  # the range it is about
    quote: str  # the range's text now, all of it deleted: the deleted text (<= QUOTE_KEPT)
    length: int  # code points of that text, whole
    start: int | None  # where the range starts in the current text; None when deleted
    replies: tuple[Reply, ...]

    @property
    def deleted(self) -> bool:
        return self.start is None


def read_comments(txn, tables: DocumentTables, docno: int, doc: bytes) -> tuple[list[Comment], int]:
    """Document `docno`'s comments (at most `MAX_SHOWN`, in text order) and how many it has.

    One walk over the document places every comment's range
    (`revisions.locate`), whatever their number; each quote is kept to
    `QUOTE_KEPT` code points."""
    prefix = U32.pack(docno)
    tops = []
    replies: dict[bytes, list[Reply]] = {}
    for key in keys_with(txn, tables.comments, prefix):
        row = unpack(txn.get(key, db=tables.comments))
        msg_id = bytes(key[4:])
        if row[C_THREAD] is None:
            tops.append((msg_id, row))
        else:
            reply = Reply(msg_id, row[C_AUTHOR], row[C_TIMESTAMP], row[C_TEXT])
            replies.setdefault(row[C_THREAD], []).append(reply)
    ends = {}
    for msg_id, row in tops:
        refs = ((row[C_FIRST], row[C_FIRST_INDEX]), (row[C_LAST], row[C_LAST_INDEX]))
        ends[msg_id] = (refs, [_atom(txn, tables, docno, ref) for ref in refs])
    located = revisions.locate(
        txn, tables, docno, (atom for _refs, atoms in ends.values() for atom in atoms)
    )
    comments = []
    for msg_id, row in tops:
        (first, last), atoms = ends[msg_id]
        text, start, every = located.span(atoms[0], atoms[1])
        quote = text or every
        thread = sorted(replies.get(msg_id, ()), key=lambda r: (r.timestamp, r.id))
        comments.append(
            Comment(
                msg_id,
                row[C_AUTHOR],
                row[C_TIMESTAMP],
                row[C_TEXT],
                Link(doc, first, last, doc),
                quote[:QUOTE_KEPT],
                len(quote),
                start if text else None,
                tuple(thread),
            )
        )
    comments.sort(key=lambda c: (c.start is None, c.start or 0, c.timestamp, c.id))
    return comments[:MAX_SHOWN], len(comments)


def _atom(txn, tables: DocumentTables, docno: int, ref: tuple[bytes, int]) -> tuple[int, int]:
    key = txn.get(ref[0], db=tables.ids)
    if key is None or U32.unpack(key[:4])[0] != docno:
        raise UnknownDocument(f"the document holds no message {message_text(ref[0])}")
    return U32.unpack(key[4:8])[0], ref[1]


class DocumentComments:
    """`store.documents.comments`: comment on a range, reply, read (one transaction each)."""

    def __init__(self, ctx: StoreContext, writes: Writes, documents: DocumentOps) -> None:
        self._ctx = ctx
        self._writes = writes
        self._documents = documents

    def comment(self, doc: bytes, start: int, end: int, text: str) -> Message:
        """Comment on the current text's code points `start` .. `end` - 1 (`BadSplice` if
        that is no range of it)."""
        link = self._documents.document_link(doc, start, end)
        return self.comment_on(link, text)

    def comment_on(self, link: Link, text: str) -> Message:
        """Comment on the range `link` names (`UnknownDocument` if its ends are not text
        atoms of the document; `BadSplice` for a text that is no comment's)."""
        first, last = AtomRef(*link.first), AtomRef(*link.last)
        content = _content(text, first, last)
        cited = [first.msg, last.msg]  # a link's ends name their messages (never SELF)
        return self._publish(link.doc, content, cited, None, link)  # type: ignore[arg-type]

    def reply(self, comment: bytes, text: str) -> Message:
        """Answer `comment` (a comment on a range, not a reply); `UnknownDocument` if this
        node holds no such comment."""
        with self._ctx.read() as txn:
            doc = self._document_of(txn, comment)
        return self._publish(doc, _content(text, None, None), [comment], comment, None)

    def comments(self, doc: bytes) -> tuple[list[Comment], int]:
        """Document `doc`'s comments, with their replies, and how many it has."""
        self._writes.weave_all()
        with self._ctx.read() as txn:
            docno = self._documents.docno_in(txn, doc)
            return read_comments(txn, self._ctx.document_tables, docno, doc)

    def _publish(
        self,
        doc: bytes,
        content: dict,
        cites: list[bytes],
        thread: bytes | None,
        link: Link | None,
    ) -> Message:
        def ends_are_text(txn, docno: int) -> None:
            if link is not None:  # ends that are text atoms of this document
                for ref in (link.first, link.last):
                    self._documents.atom_in(txn, docno, ref)

        return self._documents.publish_beside(
            doc, content, cites, {COMMENT_TANGLE: thread}, ends_are_text
        )

    def _document_of(self, txn, comment: bytes) -> bytes:
        tables = self._ctx.document_tables
        feeds = self._ctx.tables
        position = feeds.ids.position(txn, comment)
        message = None if position is None else feeds.bodies.message(txn, bytes(position))
        link = None if message is None else message.tangles.get(TANGLE)
        if link is None or link.root is None:
            raise UnknownDocument(f"no comment {message_text(comment)}")
        docno = self._documents.docno_in(txn, link.root)
        row = txn.get(U32.pack(docno) + comment, db=tables.comments)
        if row is None:
            raise UnknownDocument(f"no comment {message_text(comment)} kept in its document")
        if unpack(row)[C_THREAD] is not None:
            raise UnknownDocument("that is a reply: answer the comment it answers")
        return link.root


def _content(text: str, first: AtomRef | None, last: AtomRef | None) -> dict:
    try:
        return comment_content(text, first, last)
    except DocumentError as error:
        raise BadSplice(f"not a comment: {error.detail}") from None
