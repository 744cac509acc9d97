"""The processed order's two tables, `proc-log` and `proc-position` (since schema 14).

Theory of operation
-------------------
The causal processor (storage.feeds.processor) gives each message it
processes the next index, from 0, and keeps the order both ways:

    proc-log       index (u64 BE) -> feed number (u32 BE) + seq (u32 BE;
                                     u64 BE from 2**32 on: told apart by length)
                                     empty: a blocked feed's message, purged
    proc-position  feed + first seq of a run (u64 BE) -> the indexes (u64 BE
                                     each) of seqs first, first + 1, ..., in order

`proc-log` is appended (its pages fill); a feed is named by its number in
the `feeds` table (assigned once, never reused: storage.feeds.feed_numbers), 8
bytes a row's value where the feed key and seq took 40. Not by the
message's arrival number: the stored form leaves the author out, so an
arrival names no feed without the index, and the numbers of bodies a fork
proof takes out are given again, while the order keeps the index of a
message processed and then cut away.

A feed is processed seq after seq from 1 (it is only ever purged whole,
and a cut leaves its processed rows), so `proc-position` keeps its indexes
in runs of 64 seqs, exactly as `message-at` keeps arrival numbers
(storage.feeds.message_at, whose `PositionIndex` it is): one row, and one
dirtied page, for 64 messages, where a row a message put 64 insert points
of 40-byte keys into the tree; a batch grows each run in memory and puts it
once (`ProcessedRows.flush`). Its key is the feed key, not its number:
every reader (`processed_index`, replication, the documents' reweave) asks
by feed key, so no lookup of the number comes first, and a purge is one
key range; the 28 bytes more a row are 28 bytes per 64 messages.

A feed's number is looked up (or, the first time it is processed before
any timeframe named it, assigned) by the processor in the transaction that
processes it, through `FeedNumbers` like every other numbering of feeds.

A store of schema 13 held `proc-log` values of feed key + seq (40 bytes)
and one `proc-position` row a message (feed + seq -> index); `migrate_13`
rewrites both from those rows in the transaction that opens the store
(storage.store), and the store then says schema 14.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Iterator
from typing import Any

from tanglenode.storage.feeds.feed_numbers import FeedNumbers
from tanglenode.storage.feeds.message_at import RUN, PositionIndex
from tanglenode.storage.feeds.rewrite import copy_back

log = logging.getLogger(__name__)

_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")
_SHORT = struct.Struct(">II")  # feed number, seq below 2**32
_LONG = struct.Struct(">IQ")  # feed number, seq from 2**32 on
_CHUNK = 10_000  # rows a migration step copies between progress reports


def log_value(number: int, seq: int) -> bytes:
    """The `proc-log` value naming feed `number`'s message `seq`."""
    return _SHORT.pack(number, seq) if seq < 2**32 else _LONG.pack(number, seq)


def split_log_value(value: bytes) -> tuple[int, int]:
    """(feed number, seq) of a non-empty `proc-log` value."""
    if len(value) == _SHORT.size:
        return _SHORT.unpack(value)
    if len(value) == _LONG.size:
        return _LONG.unpack(value)
    raise ValueError(f"proc-log value {bytes(value).hex()} is malformed")


class ProcessedRows:
    """`proc-log` and `proc-position` in one transaction (see the module docstring).

    The runs `append` grows are kept in memory and written once each by `flush`, which
    the writer calls before anything else of the transaction reads `proc-position`
    (`index_of` reads them where they are): a batch puts a run a feed, not a row a
    message."""

    def __init__(self, txn, log_db: Any, position_db: Any, feeds_db: Any) -> None:
        self._txn = txn
        self.log = log_db
        self.positions = PositionIndex(position_db)
        self.numbers = FeedNumbers(txn, feeds_db)
        self._runs: dict[bytes, bytearray] = {}  # run key -> its indexes, grown here

    def count(self) -> int:
        """How many indexes were given: the last one + 1."""
        cursor = self._txn.cursor(db=self.log)
        return _U64.unpack(cursor.key())[0] + 1 if cursor.last() else 0

    def index_of(self, position: bytes) -> int | None:
        """The index of the message at `position` (feed + seq), None if not processed."""
        seq = _U64.unpack_from(position, 32)[0]
        if seq == 0:
            return None
        first = (seq - 1) // RUN * RUN + 1
        run = self._runs.get(position[:32] + _U64.pack(first))
        if run is None:
            raw = self.positions.get(self._txn, position)
            return None if raw is None else _U64.unpack(raw)[0]
        at = (seq - first) * 8
        return _U64.unpack_from(run, at)[0] if len(run) >= at + 8 else None

    def append(self, index: int, feed: bytes, seq: int) -> None:
        """Give (feed, seq), its feed's next seq processed, `index`: the next index."""
        first = (seq - 1) // RUN * RUN + 1
        key = feed + _U64.pack(first)
        run = self._runs.get(key)
        if run is None:
            run = self._runs[key] = bytearray(self._txn.get(key, db=self.positions.db) or b"")
        if len(run) != (seq - first) * 8:
            raise ValueError(f"{feed.hex()}:{seq} is not the next seq processed of its feed")
        number = _U64.pack(index)
        value = log_value(self.numbers.number(feed), seq)
        self._txn.put(number, value, db=self.log, append=True)
        run += number

    def flush(self) -> None:
        """Write the runs `append` grew."""
        txn, db = self._txn, self.positions.db
        for key, run in self._runs.items():
            txn.put(key, bytes(run), db=db)
        self._runs.clear()

    def entries(self, start: int = 0) -> Iterator[tuple[int, bytes | None, int]]:
        """(index, feed, seq) from index `start` on; (index, None, 0) for a purged one."""
        cursor = self._txn.cursor(db=self.log)
        if not cursor.set_range(_U64.pack(start)):
            return
        key_of = self.numbers.key
        for key, value in cursor:
            index = _U64.unpack(key)[0]
            if not value:  # its feed was blocked and purged
                yield index, None, 0
                continue
            number, seq = split_log_value(value)
            yield index, key_of(number), seq

    def purge(self, feed: bytes) -> None:
        """Take `feed` out of the order: its `proc-log` rows empty, its runs gone."""
        self.flush()
        txn = self._txn
        for _position, index in list(self.positions.entries(txn, feed + _U64.pack(1), feed)):
            txn.put(index, b"", db=self.log)
        db = self.positions.db
        cursor = txn.cursor(db=db)
        if cursor.set_range(feed):
            while cursor.key()[:32] == feed:
                if not cursor.delete():
                    break


def migrate_13(
    env: Any,
    txn,
    feeds_db: Any,
    progress: Callable[[str, int], None] | None = None,
) -> int:
    """Rewrite a schema-13 store's `proc-log` and `proc-position` rows in this schema's
    layout, in `txn`; how many `proc-log` rows. Each table's new rows go to a scratch
    table first, appended, then back into the emptied table, appended: every page full."""
    log_db = env.open_db(b"proc-log", txn=txn)
    position_db = env.open_db(b"proc-position", txn=txn)
    scratch = env.open_db(b"proc-migrating", txn=txn)
    numbers = FeedNumbers(txn, feeds_db)
    done = 0

    def report(phase: str) -> None:
        log.info("schema 13 -> 14: %d %s", done, phase)
        if progress is not None:
            progress(phase, done)

    # proc-log: feed key + seq (u64) -> feed number + seq
    txn.drop(scratch, delete=False)
    with txn.cursor(db=scratch) as out:
        for key, value in txn.cursor(db=log_db):
            if value:
                if len(value) != 40:
                    raise ValueError(f"proc-log row {bytes(key).hex()} is malformed")
                value = log_value(numbers.number(bytes(value[:32])), _U64.unpack(value[32:])[0])
            if not out.put(bytes(key), bytes(value), append=True):
                raise ValueError(f"proc-log row {bytes(key).hex()} is out of order")
            done += 1
            if done % _CHUNK == 0:
                report("processed order rows rewritten")
    entries = done
    copy_back(txn, scratch, log_db)
    if done % _CHUNK or not done:  # the last step, unless reported already
        report("processed order rows rewritten")

    # proc-position: feed + seq -> index, a row a message; now in runs
    done = 0
    txn.drop(scratch, delete=False)
    with txn.cursor(db=scratch) as out:
        run_key, run = b"", bytearray()
        for key, value in txn.cursor(db=position_db):
            if len(key) != 40 or len(value) != 8:
                raise ValueError(f"proc-position row {bytes(key).hex()} is malformed")
            seq = _U64.unpack(key[32:])[0]
            first = (seq - 1) // RUN * RUN + 1
            new_key = bytes(key[:32]) + _U64.pack(first)
            if new_key != run_key:
                if run:
                    out.put(run_key, bytes(run), append=True)
                run_key, run = new_key, bytearray()
            if seq - first != len(run) // 8:
                raise ValueError(f"proc-position row {bytes(key).hex()} leaves a gap")
            run += value
            done += 1
            if done % _CHUNK == 0:
                report("processed positions rewritten")
        if run:
            out.put(run_key, bytes(run), append=True)
    copy_back(txn, scratch, position_db)
    if done % _CHUNK or not done:
        report("processed positions rewritten")
    txn.drop(scratch, delete=True)
    return entries
