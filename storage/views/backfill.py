"""Indexing the messages a store held before an index existed, once, a batch at a time.

Theory of operation
-------------------
An index kept at ingest (the names feeds give themselves, the contacts) is
empty in a store written before it existed. Opening such a store runs
`backfill` until it returns None: the stored messages in key order, a
bounded batch per write transaction (the write lock is never held long, in
case a node runs beside), each message whose stored bytes contain the
index's `word` (every message it indexes has it verbatim) given to its
`index` function, and the index's `meta` marker written in the transaction
of the last batch. Indexing is idempotent (a message's row is the same
whoever writes it), so a backfill cut short simply runs again at the next
open. A new store writes every marker with its schema.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tanglenode.storage.feeds.stored_form import parse_stored

BACKFILL_BATCH = 4096  # messages read per write transaction of a backfill
_U64 = struct.Struct(">Q")


@dataclass(frozen=True, slots=True)
class Backfill:
    """One index's backfill: its `meta` marker, the word its messages hold, and how to
    index one message (txn, the store's tables, author, seq, content)."""

    marker: bytes
    word: bytes
    index: Callable[[Any, Any, bytes, int, Any], None]

    def needed(self, txn: Any, meta: Any) -> bool:
        return txn.get(self.marker, db=meta) is None

    def run(self, txn: Any, tables: Any, start: bytes, limit: int = BACKFILL_BATCH) -> bytes | None:
        """Index up to `limit` stored messages from key `start` on (b"": the first) in write
        transaction `txn`; the key to go on from, None once the store is indexed (the marker
        is then written in `txn`). A store marked already is left alone (a backfill may run
        in two processes at once)."""
        if not self.needed(txn, tables.meta):
            return None
        for count, (position, body) in enumerate(tables.bodies.rows(txn, start)):
            if count == limit:
                return position
            if self.word in body:
                author, seq = position[:32], _U64.unpack(position[32:40])[0]
                message = parse_stored(tables.bodies.rebuild(txn, position, body))
                self.index(txn, tables, author, seq, message.content)
        txn.put(self.marker, b"1", db=tables.meta)
        return None
