"""Applying validated messages to the feed store inside one write transaction.

Theory of operation
-------------------
Signature and shape checks need no store, so `storage.store` runs them before
it takes the write transaction; what is left here is the feed-chain rule,
decided against the feed's head (the highest stored seq, always contiguous
from 1):

    seq <= head, id already stored or held as evidence -> duplicate
    seq <= head, another id at that seq             -> fork: kept as evidence,
                                                       the feed is now forked
    feed forked, seq > head                         -> rejected, forked-feed
    seq > head + 1                                  -> rejected, missing-previous
    seq == head + 1 but prev is not the head's id   -> rejected, chain-mismatch
    timeframe closes a causal cycle                 -> rejected, timeframe-cycle
    otherwise                                       -> accepted: stored, indexed,
                                                       tangle tips and timelines
                                                       updated (storage.timelines)

A `BatchWriter` caches each feed's head and fork state for the life of the
transaction and writes the heads once, in `finish()`, however many messages
of a feed the batch held.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from protocol.errors import Reason
from protocol.limits import UNLIMITED
from protocol.message import Message, decode_message
from storage.layout import (
    EMPTY,
    Tables,
    feed_key,
    head_value,
    split_feed_key,
    split_head_value,
)
from storage.tangles import add_to_tangles
from storage.timeline import CycleError, TimelineTables, TimelineWriter
from storage.timelines import add_message


class Outcome(enum.StrEnum):
    ACCEPTED = "accepted"
    DUPLICATE = "duplicate"
    REJECTED = "rejected"
    FORK = "fork"


@dataclass(frozen=True, slots=True)
class IngestResult:
    """What became of one message handed to `ingest`."""

    outcome: Outcome
    id: bytes
    reason: Reason | None = None
    detail: str = ""
    message: Message | None = None

    @property
    def stored(self) -> bool:
        """True if the store now holds this message's bytes (accepted or as evidence)."""
        return self.outcome in (Outcome.ACCEPTED, Outcome.FORK)


def read_head(txn, tables: Tables, author: bytes) -> tuple[int, bytes | None]:
    value = txn.get(author, db=tables.heads)
    return (0, None) if value is None else split_head_value(value)


def forked_at(txn, tables: Tables, author: bytes) -> int | None:
    """The lowest seq at which `author`'s feed has fork evidence, or None."""
    cursor = txn.cursor(db=tables.forks)
    if cursor.set_range(author) and cursor.key()[:32] == author:
        return split_feed_key(cursor.key())[1]
    return None


def is_known(txn, tables: Tables, msg_id: bytes) -> bool:
    return (
        txn.get(msg_id, db=tables.message_ids) is not None
        or txn.get(msg_id, db=tables.fork_evidence) is not None
    )


class BatchWriter:
    """Applies messages to one write transaction; call `finish()` before commit."""

    def __init__(self, txn, tables: Tables, timeline_tables: TimelineTables) -> None:
        self._txn = txn
        self._tables = tables
        self._timelines = TimelineWriter(txn, timeline_tables)
        self._heads: dict[bytes, tuple[int, bytes | None]] = {}
        self._dirty_heads: set[bytes] = set()
        self._forked: dict[bytes, bool] = {}
        self._timeframes: dict[bytes, dict[bytes, int]] = {}  # author -> its head's timeframe

    def head_timeframe(self, author: bytes, seq: int) -> dict[bytes, int]:
        """The timeframe of the author's stored message `seq` (its current head)."""
        timeframe = self._timeframes.get(author)
        if timeframe is None:
            raw = self._txn.get(feed_key(author, seq), db=self._tables.messages)
            timeframe = decode_message(bytes(raw), UNLIMITED, verify_signature=False).timeframe
        return timeframe

    def head(self, author: bytes) -> tuple[int, bytes | None]:
        head = self._heads.get(author)
        if head is None:
            head = self._heads[author] = read_head(self._txn, self._tables, author)
        return head

    def is_forked(self, author: bytes) -> bool:
        forked = self._forked.get(author)
        if forked is None:
            forked = self._forked[author] = forked_at(self._txn, self._tables, author) is not None
        return forked

    def apply(self, message: Message) -> IngestResult:
        txn, tables = self._txn, self._tables
        author, seq = message.author, message.seq
        head_seq, head_id = self.head(author)
        if seq <= head_seq:
            # Only here can the message be stored already: heads never move back,
            # and fork evidence is always recorded at or below the head.
            if is_known(txn, tables, message.id):
                return IngestResult(Outcome.DUPLICATE, message.id, message=message)
            return self._record_fork(message)
        if self.is_forked(author):
            return self._reject(message, Reason.FORKED_FEED, "the feed has fork evidence")
        if seq > head_seq + 1:
            return self._reject(
                message, Reason.MISSING_PREVIOUS, f"seq {seq} but the feed ends at {head_seq}"
            )
        if seq > 1 and message.prev != head_id:
            return self._reject(
                message, Reason.CHAIN_MISMATCH, f"prev is not the id of stored seq {head_seq}"
            )
        previous_timeframe = self.head_timeframe(author, head_seq) if seq > 1 else {}
        try:
            add_message(self._timelines, message, previous_timeframe)
        except CycleError:
            return self._reject(
                message, Reason.TIMEFRAME_CYCLE, "its timeframe would place it before itself"
            )
        position = feed_key(author, seq)
        txn.put(position, message.raw, db=tables.messages)
        txn.put(message.id, position, db=tables.message_ids)
        add_to_tangles(txn, tables, message)
        self._heads[author] = (seq, message.id)
        self._timeframes[author] = message.timeframe
        self._dirty_heads.add(author)
        return IngestResult(Outcome.ACCEPTED, message.id, message=message)

    def finish(self) -> None:
        self._timelines.finish()
        for author in self._dirty_heads:
            seq, msg_id = self._heads[author]
            self._txn.put(author, head_value(seq, msg_id), db=self._tables.heads)
        self._dirty_heads.clear()

    def _record_fork(self, message: Message) -> IngestResult:
        txn, tables = self._txn, self._tables
        txn.put(message.id, message.raw, db=tables.fork_evidence)
        txn.put(feed_key(message.author, message.seq) + message.id, EMPTY, db=tables.forks)
        self._forked[message.author] = True
        return IngestResult(
            Outcome.FORK,
            message.id,
            Reason.FORKED_FEED,
            f"a different message is stored at seq {message.seq}",
            message=message,
        )

    @staticmethod
    def _reject(message: Message, reason: Reason, detail: str) -> IngestResult:
        return IngestResult(Outcome.REJECTED, message.id, reason, detail)
