"""A document message's weft, read through its timeframe (docs/DOCUMENTS.md).

Theory of operation
-------------------
The weft of a woven message is the join of its own feed at its own seq, the
weft of its author's last message woven into the document before it, and,
for each timeframe entry (feed F, seq s), the weft of F's last message
woven into the document at or below s. `doc-yarn` (docno + author + seq ->
mno) finds that message with one seek, and each woven message's weft is
stored with its record, so reading a new weft costs a seek per timeframe
entry, never the document's history. `DocWefts` reads and caches one
document's wefts inside one transaction (the engine drops it when it
rebuilds the document).

`covers` and `inside` answer, from a message's feed and seq alone, the two
questions the engine asks of another message: was it processed before this
one on every node (the timeframe names it or a later message of its feed),
and is it inside a weft.
"""

from __future__ import annotations

from tanglenode.protocol.message import Message
from tanglenode.storage.documents.rows import (
    R_WEFT,
    DocumentTables,
    Weft,
    join_wefts,
    stored_record,
)
from tanglenode.storage.feeds.layout import U32, U64, split_feed_key


def covers(txn, message_ids, message: Message, msg_id: bytes) -> bool:
    """Whether `message`'s own feed or timeframe names `msg_id` or a later message of its
    feed: then it was processed before `message` on every node that holds both."""
    position = message_ids.position(txn, msg_id)
    if position is None:
        return False
    author, seq = split_feed_key(position)
    if author == message.author:
        return seq < message.seq
    return message.timeframe.get(author, 0) >= seq


def inside(txn, message_ids, msg_id: bytes, weft: Weft) -> bool:
    """Whether message `msg_id` is inside `weft`. A message inside an edit's weft was
    processed before the edit on every node, so the answer never depends on delivery: a
    message this node does not hold is outside (or a proof removed it, everywhere)."""
    position = message_ids.position(txn, msg_id)
    if position is None:
        return False
    author, seq = split_feed_key(position)
    return weft.get(author, 0) >= seq


class DocWefts:
    """One document's wefts inside one transaction: stored ones read once, new ones made."""

    def __init__(self, txn, tables: DocumentTables, docno: int) -> None:
        self._txn = txn
        self._tables = tables
        self._docno = docno
        self._known: dict[int, Weft] = {}  # mno -> weft

    def of(self, mno: int) -> Weft:
        """The weft of the document's message `mno` (woven, so stored)."""
        weft = self._known.get(mno)
        if weft is None:
            record = stored_record(self._txn, self._tables, self._docno, mno)
            weft = self._known[mno] = record[R_WEFT]
        return weft

    def remember(self, mno: int, weft: Weft) -> None:
        self._known[mno] = weft

    def of_edit(self, message: Message) -> Weft:
        """The weft of `message`, about to be woven (see the module's docstring)."""
        author, seq = message.author, message.seq
        wefts: list[Weft] = [{author: seq}]
        for feed, upto in [(author, seq - 1), *message.timeframe.items()]:
            mno = self._last_woven(feed, upto)
            if mno is not None:
                wefts.append(self.of(mno))
        return join_wefts(wefts)

    def _last_woven(self, feed: bytes, upto: int) -> int | None:
        """The mno of `feed`'s last message woven into the document at a seq <= `upto`."""
        prefix = U32.pack(self._docno) + feed
        cursor = self._txn.cursor(db=self._tables.yarn)
        if cursor.set_range(prefix + U64.pack(upto + 1)):
            if not cursor.prev():
                return None
        elif not cursor.last():
            return None
        return U32.unpack(cursor.value())[0] if cursor.key()[:36] == prefix else None
