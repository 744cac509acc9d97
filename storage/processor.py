"""The causal processor (docs/PROCESSING.md): every node processes all messages in one agreed order.

Theory of operation
-------------------
A stored message is *ready* when its feed's previous message is processed
and every (feed, seq) of its timeframe is processed. Among ready messages
the lowest seq goes first, then the lowest feed key (bytes). Only the next
unprocessed message of each feed can be a candidate, so the state is small:

    proc-frontier  feed -> processed seq (u64)             the processed frontier
    proc-log       index (u64) -> feed + seq               the processed order, from 0
    proc-position  feed + seq -> index (u64)               the same, by message
    proc-wait      feed + seq + waiting feed -> ""         candidate of `waiting feed` needs
                                                           (feed, seq) processed first
    proc-waiting   feed -> needed feed + seq               the same, by the waiting feed

Ready candidates live in a heap for the length of one transaction: `advance`
runs until none is left, so none outlives it. The frontier rows are written
once per feed when `advance` ends, and a feed found to have no waiters is not
looked up again in the same transaction (until one starts waiting on it).

A candidate is checked once when it appears (its feed got its next message,
or its previous one was processed) and again only when the one entry it
waits on is processed; so processing costs the candidate's timeframe size
per message, never a scan of all feeds. All of it happens in the write
transaction that stored the messages, so the processed order commits with
them, and a crash leaves both or neither.

A candidate waiting on a message the store does not have is *stalled*: the
report names the waiting feed and seq and the (feed, seq) it waits for.

A feed found invalid from seq b (storage.invalidation) will never have a
message at b or above, yet honest timeframes may name one (written before
the proof was known). Such a need is met once the feed is processed up to
b - 1, its valid end: otherwise one liar could stall every honest feed that
ever heard of it. `forget` drops the invalid feed's own candidate and wakes
whoever waited beyond its end.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import lmdb

from tanglenode.protocol.message import Message
from tanglenode.storage.layout import EMPTY, U64, Bodies, feed_key, split_feed_key


@dataclass(frozen=True, slots=True)
class ProcessorTables:
    frontier: Any
    log: Any
    position: Any
    wait: Any
    waiting: Any

    @classmethod
    def open(cls, env: lmdb.Environment) -> ProcessorTables:
        with env.begin(write=True) as txn:
            return cls(
                frontier=env.open_db(b"proc-frontier", txn=txn),
                log=env.open_db(b"proc-log", txn=txn),
                position=env.open_db(b"proc-position", txn=txn),
                wait=env.open_db(b"proc-wait", txn=txn),
                waiting=env.open_db(b"proc-waiting", txn=txn),
            )


@dataclass(frozen=True, slots=True)
class Stall:
    """Feed `feed`'s message `seq` waits for (`needs_feed`, `needs_seq`), which is not stored."""

    feed: bytes
    seq: int
    needs_feed: bytes
    needs_seq: int


def processed_seq(txn, tables: ProcessorTables, feed: bytes) -> int:
    raw = txn.get(feed, db=tables.frontier)
    return 0 if raw is None else U64.unpack(raw)[0]


def processed_frontier(txn, tables: ProcessorTables) -> dict[bytes, int]:
    return {bytes(k): U64.unpack(v)[0] for k, v in txn.cursor(db=tables.frontier)}


def processed_count(txn, tables: ProcessorTables) -> int:
    cursor = txn.cursor(db=tables.log)
    return U64.unpack(cursor.key())[0] + 1 if cursor.last() else 0


def processed_index(txn, tables: ProcessorTables, feed: bytes, seq: int) -> int | None:
    """Where (feed, seq) stands in the processed order, None if not processed."""
    raw = txn.get(feed_key(feed, seq), db=tables.position)
    return None if raw is None else U64.unpack(raw)[0]


def read_processed(
    txn, tables: ProcessorTables, start: int, limit: int
) -> list[tuple[int, bytes, int]]:
    """(index, feed, seq) of processed messages from index `start` on."""
    cursor = txn.cursor(db=tables.log)
    found: list[tuple[int, bytes, int]] = []
    if not cursor.set_range(U64.pack(start)):
        return found
    for key, value in cursor:
        if len(found) >= limit:
            break
        feed, seq = split_feed_key(value)
        found.append((U64.unpack(key)[0], feed, seq))
    return found


def stalls(txn, tables: ProcessorTables, messages_db) -> list[Stall]:
    """Candidates waiting on a message the store does not hold."""
    found = []
    for feed, needed in txn.cursor(db=tables.waiting):
        needs_feed, needs_seq = split_feed_key(needed)
        if txn.get(feed_key(needs_feed, needs_seq), db=messages_db) is None:
            seq = processed_seq(txn, tables, bytes(feed)) + 1
            found.append(Stall(bytes(feed), seq, needs_feed, needs_seq))
    return found


class Processor:
    """Advances the processed order inside one write transaction."""

    def __init__(
        self,
        txn,
        tables: ProcessorTables,
        bodies: Bodies,
        invalid_db,
        batch: Mapping[tuple[bytes, int], Message] | None = None,
    ) -> None:
        self._txn = txn
        self._tables = tables
        self._bodies = bodies
        self._invalid = invalid_db
        # The messages this transaction stored, (feed, seq) -> message, already decoded.
        self._batch = batch or {}
        # Caches for this transaction: processed seqs, candidates' sorted timeframes,
        # and how many leading entries of each are known processed (that only grows).
        self._processed: dict[bytes, int] = {}
        self._timeframes: dict[tuple[bytes, int], list[tuple[bytes, int]]] = {}
        self._checked: dict[tuple[bytes, int], int] = {}
        self._ready: list[tuple[int, bytes]] = []  # (seq, feed): the tie-break order
        self._no_waiters: set[bytes] = set()  # feeds nobody waits on (as of this transaction)
        self.order: list[tuple[bytes, int]] = []  # (feed, seq) processed here, in order

    def _seq(self, feed: bytes) -> int:
        seq = self._processed.get(feed)
        if seq is None:
            seq = self._processed[feed] = processed_seq(self._txn, self._tables, feed)
        return seq

    def advance(self, feeds: Iterable[bytes]) -> int:
        """Process everything that became ready after `feeds` got new messages; returns count."""
        txn, tables = self._txn, self._tables
        for feed in feeds:
            if txn.get(feed, db=tables.waiting) is None:
                self._consider(feed)
        index = first = processed_count(txn, tables)
        ready, order, moved = self._ready, self.order, set()
        while ready:
            seq, feed = heapq.heappop(ready)
            position = feed_key(feed, seq)
            number = U64.pack(index)
            txn.put(number, position, db=tables.log, append=True)
            txn.put(position, number, db=tables.position)
            self._processed[feed] = seq
            moved.add(feed)
            order.append((feed, seq))
            index += 1
            if feed not in self._no_waiters:
                self._wake(feed, seq)
            self._consider(feed)
        for feed in moved:
            txn.put(feed, U64.pack(self._processed[feed]), db=tables.frontier)
        return index - first

    def _consider(self, feed: bytes) -> None:
        """Place feed's next unprocessed message, if stored: ready, or waiting on one entry."""
        txn, tables = self._txn, self._tables
        seq = self._seq(feed) + 1
        candidate = (feed, seq)
        timeframe = self._timeframes.get(candidate)
        if timeframe is None:
            message = self._batch.get(candidate)
            if message is None:
                message = self._bodies.message(txn, feed_key(feed, seq))
                if message is None:
                    return
            timeframe = self._timeframes[candidate] = sorted(
                entry for entry in message.timeframe.items() if entry[0] != feed
            )
        start = self._checked.get(candidate, 0)
        for offset, (needs_feed, needs_seq) in enumerate(timeframe[start:], start):
            if self._seq(needs_feed) < needs_seq:
                needs_seq = self._valid_need(needs_feed, needs_seq)
                if self._seq(needs_feed) >= needs_seq:
                    continue
                self._checked[candidate] = offset
                needed = feed_key(needs_feed, needs_seq)
                txn.put(needed + feed, EMPTY, db=tables.wait)
                txn.put(feed, needed, db=tables.waiting)
                self._no_waiters.discard(needs_feed)
                return
        self._timeframes.pop(candidate)
        self._checked.pop(candidate, None)
        heapq.heappush(self._ready, (seq, feed))

    def _valid_need(self, feed: bytes, seq: int) -> int:
        """The seq a need of (feed, seq) really waits for: never past an invalid feed's end."""
        raw = self._txn.get(feed, db=self._invalid)
        return seq if raw is None else min(seq, U64.unpack(raw[:8])[0] - 1)

    def forget(self, feed: bytes, invalid_from: int) -> None:
        """`feed` holds nothing from `invalid_from` on: drop its candidate, wake its waiters.

        Call `advance` afterwards (with no feeds) to process what became ready.
        """
        txn, tables = self._txn, self._tables
        self._timeframes = {k: v for k, v in self._timeframes.items() if k[0] != feed}
        needed = txn.get(feed, db=tables.waiting)
        if needed is not None:  # its next message is gone; it waits for nothing now
            txn.delete(bytes(needed) + feed, db=tables.wait)
            txn.delete(feed, db=tables.waiting)
        cursor = txn.cursor(db=tables.wait)
        woken = []
        if cursor.set_range(feed_key(feed, invalid_from)):
            while cursor.key()[:32] == feed:
                woken.append(bytes(cursor.key()[40:]))
                if not cursor.delete():
                    break
        for waiting in woken:
            txn.delete(waiting, db=tables.waiting)
            self._checked.pop((waiting, self._seq(waiting) + 1), None)
            self._consider(waiting)
        self._consider(feed)

    def _wake(self, feed: bytes, seq: int) -> None:
        """Re-check the candidates that waited on (feed, s) for any s <= seq."""
        txn, tables = self._txn, self._tables
        cursor = txn.cursor(db=tables.wait)
        woken = []
        if cursor.set_range(feed):
            while cursor.key()[:32] == feed:
                waited_seq = U64.unpack(cursor.key()[32:40])[0]
                if waited_seq > seq:
                    break
                woken.append(bytes(cursor.key()[40:]))
                if not cursor.delete():
                    break
        if cursor.key()[:32] != feed:
            self._no_waiters.add(feed)  # nobody waits on any seq of it
        for waiting in woken:
            txn.delete(waiting, db=tables.waiting)
            self._consider(waiting)
