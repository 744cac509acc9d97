"""The documents' backlog: processed document messages not woven yet, in processed order.

Theory of operation
-------------------
The documents view weaves inside the transaction that processes a message
(storage/documents/view.py), and one write transaction runs at a time: a
batch heavy with document work (a crowd's thousands of edits, a paste of
16,384 atoms in each of hundreds of messages) would hold every other message
of its batch, and every batch after it, until all of it is woven. So a
transaction weaves at most `SLICE` units of work (`DocumentEngine.apply`'s
cost: an edit's atoms, plus `MESSAGE_COST` a message). The document messages
past that, and every one processed while any waits, go to `doc-queue` (a
counter -> the message's position), in processed order; the transaction
commits with them stored and processed, and later transactions weave the
backlog a slice at a time (`Writes.weave_backlog`), each letting the
writes queued meanwhile go first.

Documents are still woven in processed order (nothing is woven while the
backlog holds anything), so the weave is the one a store that wove
everything at once has. Until the backlog is woven, a document reads as
the messages woven so far; the node weaves it before answering a document
request (node/ipc/ops.py), and the store's own write calls weave it before they
return, but for the node's ingest, which leaves it to the node.
"""

from __future__ import annotations

from typing import Any

from tanglenode.storage.feeds.layout import U64

SLICE = 16_000  # units of weaving work one write transaction does, at most
MESSAGE_COST = 64  # a document message's work beyond its atoms


class Backlog:
    """`doc-queue` inside one write transaction."""

    def __init__(self, txn: Any, db: Any) -> None:
        self._txn = txn
        self._db = db
        self._waiting: bool | None = None

    def waiting(self) -> bool:
        if self._waiting is None:
            self._waiting = self._txn.cursor(db=self._db).first()
        return self._waiting

    def push(self, position: bytes) -> None:
        cursor = self._txn.cursor(db=self._db)
        following = U64.unpack(cursor.key())[0] + 1 if cursor.last() else 0
        self._txn.put(U64.pack(following), position, db=self._db)
        self._waiting = True

    def take(self) -> bytes | None:
        """The oldest message's position, no longer in the backlog; None if it is empty."""
        cursor = self._txn.cursor(db=self._db)
        if not cursor.first():
            self._waiting = False
            return None
        position = bytes(cursor.value())
        cursor.delete()
        return position


def backlog_size(txn: Any, db: Any) -> int:
    return txn.stat(db)["entries"]
