"""The processed order's rows (storage/feeds/processor_rows.py): `proc-log` names feeds by
number, `proc-position` keeps runs of 64 seqs; a schema-13 store is rewritten when opened."""

from __future__ import annotations

import struct

import lmdb
import pytest

from tanglenode.storage.errors import StoreDamaged
from tanglenode.storage.feeds.layout import MAX_NAMED_DATABASES, SCHEMA_VERSION, Tables
from tanglenode.storage.feeds.message_at import RUN
from tanglenode.storage.feeds.processor import ProcessorTables, processed_index
from tanglenode.storage.feeds.processor_rows import log_value, split_log_value
from tanglenode.storage.scope import Scope
from tanglenode.storage.store import FeedStore
from tests.factories import Feed
from tests.storage.schema_14 import write_schema_14_ids

U64 = struct.Struct(">Q")


def order(store):
    return store.feeds.processed(0, 10**6)


def chains(feeds: int, length: int, named: bool = True) -> list[Feed]:
    """`feeds` feeds of `length` messages, each (when `named`) naming the one before it of
    the previous feed."""
    made = [Feed(f"rows-{n}") for n in range(feeds)]
    for seq in range(1, length + 1):
        for n, feed in enumerate(made):
            other = made[n - 1]
            if named and n and seq > 1:
                feed.append(timeframe={other.public: other.messages[seq - 2]})
            else:
                feed.append()
    return made


def raws(feeds: list[Feed]) -> list[bytes]:
    """Their messages seq by seq, the feeds interleaved."""
    return [feed.messages[seq].raw for seq in range(len(feeds[0].messages)) for feed in feeds]


def old_layout(path, drop_numbers: bool = False) -> None:
    """Write the store's `proc-log` and `proc-position` back as schema 13 kept them (feed
    key + seq (u64) in `proc-log`, one `proc-position` row a message), and its id rows as
    schema 14 kept them (tests/storage/schema_14.py), and mark it schema 13; `drop_numbers`:
    empty `feeds` too (a store none of whose messages names a feed numbered none then)."""
    env = lmdb.open(str(path), max_dbs=MAX_NAMED_DATABASES)
    try:
        tables = Tables.open(env)
        proc = ProcessorTables.open(env)
        with env.begin(write=True) as txn:
            rows = proc.rows(txn)
            log = [
                (index, b"" if feed is None else feed + U64.pack(seq))
                for index, feed, seq in rows.entries()
            ]
            positions = [(bytes(p), bytes(i)) for p, i in rows.positions.entries(txn)]
            txn.drop(proc.log, delete=False)
            txn.drop(proc.position, delete=False)
            for index, value in log:
                txn.put(U64.pack(index), value, db=proc.log)
            for position, index in positions:
                txn.put(position, index, db=proc.position)
            write_schema_14_ids(env, txn, tables)
            if drop_numbers:
                txn.drop(tables.feeds, delete=False)
            txn.put(b"schema", b"13", db=tables.meta)
    finally:
        env.close()


def proc_rows(where) -> tuple[list[tuple[bytes, bytes]], list[tuple[bytes, bytes]], bytes]:
    """`proc-log`'s rows, `proc-position`'s and the schema, of an open store or a closed
    one's path."""
    if isinstance(where, FeedStore):
        return _rows(where.ctx.env)
    env = lmdb.open(str(where), max_dbs=MAX_NAMED_DATABASES)
    try:
        return _rows(env)
    finally:
        env.close()


def _rows(env) -> tuple[list[tuple[bytes, bytes]], list[tuple[bytes, bytes]], bytes]:
    tables = Tables.open(env)
    proc = ProcessorTables.open(env)
    with env.begin() as txn:
        return (
            [(bytes(k), bytes(v)) for k, v in txn.cursor(db=proc.log)],
            [(bytes(k), bytes(v)) for k, v in txn.cursor(db=proc.position)],
            bytes(txn.get(b"schema", db=tables.meta)),
        )


def test_the_log_names_feeds_by_number_and_positions_keep_runs(open_store):
    feeds = chains(3, RUN + 6)
    store = open_store()
    store.writes.ingest(raws(feeds))
    processed = order(store)
    assert len(processed) == 3 * (RUN + 6)
    log, positions, schema = proc_rows(store)
    assert schema == SCHEMA_VERSION == b"15"
    assert {len(value) for _key, value in log} == {8}
    # two runs a feed: seqs 1-64 and 65-70
    assert len(positions) == 6
    assert sorted(len(value) for _key, value in positions) == [6 * 8] * 3 + [RUN * 8] * 3
    with store.ctx.read() as txn:
        for index, feed, seq in processed:
            assert processed_index(txn, store.ctx.processor_tables, feed, seq) == index
        assert processed_index(txn, store.ctx.processor_tables, feeds[0].public, RUN + 7) is None
    assert store.feeds.check().ok


def test_a_seq_past_two_to_the_32_takes_a_long_value():
    assert split_log_value(log_value(7, 2**32 - 1)) == (7, 2**32 - 1)
    assert len(log_value(7, 2**32)) == 12 and split_log_value(log_value(7, 2**32)) == (7, 2**32)
    with pytest.raises(ValueError):
        split_log_value(b"\x00" * 9)


def test_a_purged_feed_leaves_empty_rows_and_comes_back_anew(open_store):
    feeds = chains(2, 3, named=False)
    blocked = feeds[1].public
    store = open_store()
    store.writes.ingest(raws(feeds))
    store.writes.set_scope(Scope(None, {}, frozenset({blocked})))
    assert [feed for _i, feed, _s in order(store)] == [feeds[0].public] * 3
    log, positions, _schema = proc_rows(store)
    assert sum(1 for _key, value in log if not value) == 3
    assert [key[:32] for key, _value in positions] == [feeds[0].public]
    store.writes.set_scope(Scope(None))
    store.writes.ingest([m.raw for m in feeds[1].messages])
    assert [(f, s) for i, f, s in order(store)][3:] == [(blocked, 1), (blocked, 2), (blocked, 3)]
    assert [i for i, _f, _s in order(store)][3:] == [6, 7, 8]  # an index is never given again
    assert store.feeds.check().ok


@pytest.mark.parametrize("drop_numbers", [False, True], ids=["numbered", "unnumbered"])
def test_a_schema_13_store_is_rewritten_when_opened_and_equal(open_store, drop_numbers):
    # unnumbered: no timeframe names a feed, so a schema-13 store numbered none of them
    feeds = chains(4, RUN + 10, named=not drop_numbers)
    store = open_store()
    store.writes.ingest(raws(feeds)[:-7])
    store.writes.set_scope(Scope(None, {}, frozenset({feeds[3].public})))  # empty rows
    store.writes.set_scope(Scope(None))
    store.writes.ingest(raws(feeds))
    before = order(store)
    frontier = store.feeds.processed_frontier()
    rows_before = proc_rows(store)
    path = store.path
    store.close()
    old_layout(path, drop_numbers)
    old_log, old_positions, schema = proc_rows(path)
    assert schema == b"13" and len(old_positions) == len(before)
    assert {len(v) for _k, v in old_log} == {0, 40}

    phases = []
    reopened = open_store(path.name, create=False, progress=lambda *done: phases.append(done))
    assert order(reopened) == before
    assert reopened.feeds.processed_frontier() == frontier
    assert reopened.feeds.check().ok
    log, positions, schema = proc_rows(reopened)
    assert schema == b"15"
    if not drop_numbers:
        assert (log, positions) == rows_before[:2]  # byte for byte, and no number given
    assert {len(v) for _k, v in log} == {0, 8}
    assert ("processed order rows rewritten", len(old_log)) in phases
    assert ("processed positions rewritten", len(old_positions)) in phases
    # and it goes on: a new message of each feed is processed after the rest
    more = [feed.append().raw for feed in feeds]
    reopened.writes.ingest(more)
    after = order(reopened)
    assert after[: len(before)] == before and len(after) == len(before) + len(feeds)
    assert reopened.feeds.check().ok


def test_a_migration_that_fails_leaves_the_store_as_it_was(open_store):
    feeds = chains(2, 3)
    store = open_store()
    store.writes.ingest(raws(feeds))
    path = store.path
    store.close()
    old_layout(path)
    env = lmdb.open(str(path), max_dbs=MAX_NAMED_DATABASES)
    with env.begin(write=True) as txn:
        txn.put(U64.pack(1), b"\x01" * 7, db=env.open_db(b"proc-log", txn=txn))
    env.close()
    kept = proc_rows(path)
    with pytest.raises(StoreDamaged, match="cannot be migrated"):
        open_store(path.name, create=False)
    assert proc_rows(path) == kept and kept[2] == b"13"


def test_check_finds_the_processed_order_tables_disagreeing(open_store):
    feeds = chains(2, 4)
    store = open_store()
    store.writes.ingest(raws(feeds))
    assert store.feeds.check().ok
    path = store.path
    store.close()
    env = lmdb.open(str(path), max_dbs=MAX_NAMED_DATABASES)
    proc = ProcessorTables.open(env)
    with env.begin(write=True) as txn:
        number, seq = split_log_value(txn.get(U64.pack(2), db=proc.log))
        txn.put(U64.pack(2), log_value(number, seq + 1), db=proc.log)  # names another seq
        txn.put(U64.pack(3), log_value(999, 1), db=proc.log)  # a feed numbered none
    env.close()
    problems = open_store(path.name, create=False).feeds.check().problems
    assert any(p.startswith("proc-log row 3 is unreadable") for p in problems)
    assert any("which proc-log does not give it" in p for p in problems)
    assert any(p.startswith("proc-log rows ") and "both name" in p for p in problems)


def test_runs_grown_in_a_transaction_are_read_before_and_after_they_are_put(open_store):
    store = open_store()
    tables = store.ctx.processor_tables
    a, b = b"a" * 32, b"b" * 32
    with store.ctx.write() as txn:
        rows = tables.rows(txn)
        for index, (feed, seq) in enumerate([(a, 1), (b, 1), *((a, s) for s in range(2, 70))]):
            rows.append(index, feed, seq)
        with pytest.raises(ValueError, match="not the next seq"):
            rows.append(70, b, 3)
        assert rows.index_of(a + U64.pack(69)) == 69 and rows.index_of(b + U64.pack(1)) == 1
        assert rows.index_of(b + U64.pack(2)) is None and rows.index_of(a + U64.pack(0)) is None
        assert txn.get(a + U64.pack(1), db=tables.position) is None  # not put yet
        rows.flush()
        again = tables.rows(txn)
        assert again.index_of(a + U64.pack(65)) == 65 and again.index_of(a + U64.pack(70)) is None
        assert [(i, f, s) for i, f, s in again.entries(68)] == [(68, a, 68), (69, a, 69)]
        assert len(txn.get(a + U64.pack(1), db=tables.position)) == RUN * 8
        again.purge(a)
        assert again.index_of(a + U64.pack(3)) is None
        assert [f for _i, f, _s in again.entries()] == [None, b] + [None] * 68
