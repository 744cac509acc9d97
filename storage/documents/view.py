"""Documents as a derived view (storage/feeds/derived.py).

Documents follow the causal processor, not arrival: an edit is woven once
every message its timeframe names is processed (docs/DOCUMENTS.md), so this
view acts in `processed`. A proof that cut a feed back first weaves again
every document that lost messages (`DocumentWeaver.rebuild_after_proofs`),
then the messages just processed are woven in processed order, erase
requests among them (storage.documents.erased: an erased message is woven
from the skeleton its request brings). `forget` takes an erased or purged
message's characters out of every document row, its atoms left in place.
Its `content` is each document's text at the processed frontier and the
edits set aside, by the document's root id: what every node holding the
same messages reads alike (the weave's row numbers are local).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from tanglenode.protocol.document import TANGLE
from tanglenode.protocol.message import Message
from tanglenode.storage.documents import erased, revisions
from tanglenode.storage.documents.backlog import SLICE, Backlog, backlog_size
from tanglenode.storage.documents.reweave import DocumentWeaver
from tanglenode.storage.documents.rows import M_ID, DocumentTables, pack, unpack, woven_tips
from tanglenode.storage.documents.siblings import index_current, mark_current
from tanglenode.storage.feeds.derived import Table, ViewCost, ViewHooks
from tanglenode.storage.feeds.layout import U32, U64

if TYPE_CHECKING:
    from tanglenode.storage.context import StoreContext
    from tanglenode.storage.feeds.derived import Position, ProcessedStep, WriteScope


class DocumentsView:
    """The documents' weaves, set-aside edits and splice logs (storage.documents.engine)."""

    name = "documents"
    tables = tuple(Table(name) for name in DocumentTables.NAMES if name not in DocumentTables.KEPT)
    version = 1
    optional = False
    cost = ViewCost(0, 0.004, "documents: their text, history and blame")

    def __init__(self, ctx: StoreContext, slice_work: int = SLICE) -> None:
        self._ctx = ctx
        self.slice = slice_work  # weaving one transaction does (storage.documents.backlog)
        self.hooks = ViewHooks(
            settle=self.settle,
            backlog=lambda txn: backlog_size(txn, ctx.document_tables.queue),
            catch_up=lambda txn, work: weave_backlog(txn, ctx, SLICE if work is None else work),
            publishes_alone=lambda tangles: TANGLE in tangles,
            tips=self._tips,
            opened=self._index_children,
        )

    def accepted(self, scope: WriteScope, message: Message) -> None:
        pass  # woven once processed

    def cut(self, scope: WriteScope, message: Message) -> None:
        pass  # the proof's step rebuilds the documents that lost messages

    def forget(self, scope: WriteScope, message: Message) -> None:
        """Take an erased or purged message's characters out of every document row, its
        atoms left in place (storage.documents.erased)."""
        weaver = DocumentWeaver.over(scope.txn, self._ctx)
        erased.forget(weaver, message)
        weaver.finish()

    def processed(self, scope: WriteScope, step: ProcessedStep) -> None:
        """Weave the document messages just processed, in processed order (after rebuilding
        the documents a proof took messages from)."""
        if not step.order and not step.invalidated:
            return
        weaver = DocumentWeaver.over(scope.txn, self._ctx)
        engine = weaver.engine
        if step.invalidated:
            weaver.rebuild_after_proofs(dict(step.invalidated), step.cut)
        backlog = Backlog(scope.txn, self._ctx.document_tables.queue)
        spent = 0
        for position in step.order:
            message = step.message(scope, position)
            if spent < self.slice and not backlog.waiting():
                spent += erased.weave_one(weaver, message)
            elif erased.concerns_documents(message):  # woven later, in processed order
                backlog.push(position[0] + U64.pack(position[1]))
        engine.finish()

    def settle(self, txn: Any) -> None:
        """Weave the whole backlog now (`tangled reindex`, and its check, read the view
        whole)."""
        weave_backlog(txn, self._ctx, None)

    def _index_children(self) -> None:
        """Weave the documents once more, in one transaction, when the index of each atom's
        children (storage/documents/siblings.py) does not know every message woven: a
        store written since by a build without it."""
        tables = self._ctx.document_tables
        with self._ctx.read() as txn:
            if index_current(txn, tables.sibs, tables.msgs):
                return
        with self._ctx.write() as txn:
            weaver = DocumentWeaver.over(txn, self._ctx)
            weaver.weave_again()
            weaver.finish()
            mark_current(txn, tables.sibs, tables.msgs)

    def _tips(self, txn: Any, root: bytes, name: str) -> list[bytes] | None:
        """A new edit links to the document's woven tips, which our timeframe covers
        (storage.documents.engine); other tangles are not the documents'."""
        return woven_tips(txn, self._ctx.document_tables, root) if name == TANGLE else None

    def check(self, txn: Any, messages: Mapping[Position, Message]) -> list[str]:
        return []  # `tangled reindex --verify documents` compares with a rebuild

    def content(self, txn: Any) -> Iterator[tuple[bytes, bytes]]:
        tables = self._ctx.document_tables
        for key, raw in txn.cursor(db=tables.meta):
            docno, meta = U32.unpack(key)[0], unpack(raw)
            root = meta[M_ID]
            aside = []
            cursor = txn.cursor(db=tables.aside)
            if cursor.set_range(root):
                for row, value in cursor:
                    if row[:32] != root:
                        break
                    aside.append([bytes(row[32:]), unpack(value)[0]])
            text = revisions.revision(txn, tables, docno, None)
            yield root, pack([text, aside])


def weave_backlog(txn: Any, ctx: StoreContext, work: int | None) -> int:
    """Weave the oldest of the documents' backlog in `txn`, about `work` units of it (None:
    all of it); how many messages remain (storage.documents.backlog)."""
    queue = ctx.document_tables.queue
    if not backlog_size(txn, queue):
        return 0
    weaver = DocumentWeaver.over(txn, ctx)
    backlog = Backlog(txn, queue)
    spent = 0
    while (work is None or spent < work) and (position := backlog.take()) is not None:
        message = ctx.tables.bodies.message(txn, position)
        if message is not None:  # else a proof or a block took it since
            spent += erased.weave_one(weaver, message)
    weaver.finish()
    return backlog_size(txn, queue)
