"""`message-ids` holds each id's position and ref number; `tl-refs` no id, spacetime refs
short (storage/feeds/message_ids.py); a schema-14 store is rewritten when opened
(storage/feeds/ids_migration.py)."""

from __future__ import annotations

import struct

import lmdb
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tanglenode.protocol.message import TangleLink
from tanglenode.storage.engine.ref_numbers import numbering_problems
from tanglenode.storage.errors import StoreDamaged, TimelineError
from tanglenode.storage.feeds.ingest import Outcome
from tanglenode.storage.feeds.layout import MAX_NAMED_DATABASES, Tables
from tanglenode.storage.feeds.message_ids import split_row, where_of
from tanglenode.storage.views.timelines import SPACETIME, spacetime_ref
from tests.factories import Feed
from tests.storage.schema_14 import write_schema_14_ids

U32 = struct.Struct(">I")


def rows(store) -> dict[str, dict[bytes, bytes]]:
    tables, timelines = store.ctx.tables, store.ctx.timeline_tables
    with store.ctx.read() as txn:
        return {
            name: {bytes(k): bytes(v) for k, v in txn.cursor(db=db)}
            for name, db in (
                ("ids", tables.message_ids),
                ("refs", timelines.refs),
                ("names", timelines.ref_names),
            )
        }


def numbers(store, refs) -> dict[bytes, bytes | None]:
    with store.ctx.read() as txn:
        find = store.ctx.timeline_tables.ref_numbers(txn).find
        return {ref: find(ref) for ref in refs}


def conversation():
    """alice's root and reply, bob's reply naming a message of carol's not delivered
    (`missing`), and a message with a timeframe."""
    alice, bob, carol = Feed("ids-a"), Feed("ids-b"), Feed("ids-c")
    root = alice.root("chat", {"text": "root"})
    reply = alice.append({"text": "two"}, tangles={"chat": TangleLink(root.id, (root.id,))})
    missing = carol.append({"text": "late"}, tangles={"chat": TangleLink(root.id, (root.id,))})
    waiting = bob.append(
        {"text": "names carol's"},
        tangles={"chat": TangleLink(root.id, (missing.id,))},
        timeframe={alice.public: 2},
    )
    plain = bob.append({"text": "no tangle"})
    return root, reply, missing, waiting, plain


def test_ids_are_numbered_in_their_own_rows_and_tl_refs_holds_no_id(open_store):
    root, reply, missing, waiting, plain = conversation()
    store = open_store()
    store.writes.ingest([m.raw for m in (root, reply, waiting, plain)])
    found = rows(store)
    assert {len(ref) for ref in found["refs"]} == {24}  # spacetime refs, short, and no id
    assert {len(ref) for ref in found["names"].values()} == {32, 24}
    ids = found["ids"]
    assert {len(ids[m.id]) for m in (root, reply, waiting)} == {12}  # held, numbered
    assert len(ids[plain.id]) == 8  # held, in no tangle: no number
    assert len(ids[missing.id]) == 4  # named, not held: its number alone
    before = numbers(store, [root.id, reply.id, missing.id, waiting.id])
    assert all(before.values()) and len(set(before.values())) == 4
    assert {found["names"][n] for n in before.values()} == set(before)
    assert store.feeds.check().ok

    store.writes.ingest([missing.raw])  # it arrives: held, with the number it had
    after = rows(store)["ids"][missing.id]
    assert len(after) == 12 and after[-4:] == before[missing.id]
    assert numbers(store, before) == before
    assert set(store.tangles.tangle_tips(root.id, "chat")) == {reply.id, waiting.id}
    assert store.feeds.check().ok


def test_positions_come_back_through_the_feed_numbers(open_store):
    root, reply, missing, waiting, plain = conversation()
    store = open_store()
    store.writes.ingest([m.raw for m in (root, reply, waiting, plain)])
    ids = store.ctx.tables.ids
    with store.ctx.read() as txn:
        for m in (root, reply, waiting, plain):
            assert ids.position(txn, m.id) == m.author + struct.pack(">Q", m.seq)
            assert ids.holds(txn, m.id)
        assert ids.position(txn, missing.id) is None and not ids.holds(txn, missing.id)
        low, high = b"\x00" * 32, b"\xff" * 32
        held = sorted(m.id for m in (root, reply, waiting, plain))
        assert ids.held_between(txn, low, high, 10) == held  # not the number-only row
        assert ids.held_between(txn, low, high, 2) == held[:2]
    assert store.feeds.get(missing.id) is None and store.feeds.get(plain.id) == plain


def test_spacetime_refs_are_stored_short_and_read_back_whole(open_store):
    root, reply, _missing, waiting, plain = conversation()
    store = open_store()
    store.writes.ingest([m.raw for m in (root, reply, waiting, plain)])
    with store.ctx.read() as txn:
        refs = store.ctx.timeline_tables.ref_numbers(txn)
        for m in (root, reply, waiting, plain):
            whole = spacetime_ref(m.author, m.seq, m.id)
            number = refs.find(whole)
            assert number is not None
            stored = bytes(txn.get(number, db=store.ctx.timeline_tables.ref_names))
            assert len(stored) == 24 and stored[4:8] == whole[36:40] and stored[8:] == whole[40:]
        fresh = store.ctx.timeline_tables.ref_numbers(txn)  # nothing cached
        assert [fresh.ref(refs.find(spacetime_ref(m.author, m.seq, m.id))) for m in (root,)] == [
            spacetime_ref(root.author, root.seq, root.id)
        ]
    spacetime = store.timelines.timeline(SPACETIME)
    assert sorted(msg_id for _rank, msg_id in spacetime) == sorted(
        m.id for m in (root, reply, waiting, plain)
    )


def test_a_ref_that_would_read_back_as_a_spacetime_ref_is_refused(open_store):
    store = open_store()
    with store.ctx.write() as txn:
        refs = store.ctx.timeline_tables.ref_numbers(txn)
        for length in (24, 28):
            with pytest.raises(TimelineError):
                refs.assign(b"x" * length)
        assert refs.assign(b"y" * 27) == refs.find(b"y" * 27)  # other lengths are as they are


def test_a_message_cut_by_a_fork_proof_keeps_its_number(open_store):
    alice = Feed("ids-fork")
    root = alice.root("chat", {"n": 1})
    second = alice.append({"n": 2}, tangles={"chat": TangleLink(root.id, (root.id,))})
    twin = Feed(alice.keypair)
    twin.messages = alice.messages[:1]
    other = twin.append({"n": "other 2"})
    store = open_store()
    store.writes.ingest([root.raw, second.raw])
    before = numbers(store, [root.id, second.id])
    (result,) = store.writes.ingest([other.raw])
    assert result.outcome is Outcome.FORK
    row = rows(store)["ids"][second.id]
    assert row == before[second.id]  # no longer held: its number alone
    assert numbers(store, before) == before
    assert store.feeds.check().ok


def test_check_finds_an_id_numbered_twice(open_store):
    root, reply, _missing, waiting, plain = conversation()
    store = open_store()
    store.writes.ingest([m.raw for m in (root, reply, waiting, plain)])
    number = numbers(store, [reply.id])[reply.id]
    with store.ctx.write() as txn:
        txn.put(reply.id, number, db=store.ctx.timeline_tables.refs)  # in tl-refs as well
    timelines = store.ctx.timeline_tables
    with store.ctx.read() as txn:
        problems = numbering_problems(
            txn, timelines.refs, timelines.ref_names, timelines.ref_home(txn)
        )
    assert problems == ["tl-refs and tl-ref-names disagree on 1 refs"]
    assert not store.feeds.check().ok


def test_a_schema_14_store_is_rewritten_when_opened_and_equal(open_store):
    root, reply, missing, waiting, plain = conversation()
    store = open_store()
    store.writes.ingest([m.raw for m in (root, reply, waiting, plain)])
    refs = [m.id for m in (root, reply, missing, waiting)] + [
        spacetime_ref(m.author, m.seq, m.id) for m in (root, reply, waiting, plain)
    ]
    before_numbers, before_rows = numbers(store, refs), rows(store)
    spacetime = store.timelines.timeline(SPACETIME)
    chat = store.timelines.timeline(store.timelines.timeline_name(root.id, "chat"))
    path = store.path
    store.close()
    env = lmdb.open(str(path), max_dbs=MAX_NAMED_DATABASES)
    tables = Tables.open(env)
    with env.begin(write=True) as txn:
        write_schema_14_ids(env, txn, tables)
        txn.put(b"schema", b"14", db=tables.meta)
        old = {bytes(k): bytes(v) for k, v in txn.cursor(db=env.open_db(b"tl-refs", txn=txn))}
    env.close()
    assert {len(ref) for ref in old} == {32, 56}  # the layout of then

    phases = []
    reopened = open_store(path.name, create=False, progress=lambda *done: phases.append(done))
    assert rows(reopened) == before_rows  # byte for byte
    assert numbers(reopened, refs) == before_numbers
    assert reopened.timelines.timeline(SPACETIME) == spacetime
    assert reopened.timelines.timeline(reopened.timelines.timeline_name(root.id, "chat")) == chat
    assert phases[-1][0] == "ref numbers rewritten"
    assert reopened.feeds.check().ok
    reopened.writes.ingest([missing.raw])
    assert numbers(reopened, [missing.id]) == {missing.id: before_numbers[missing.id]}
    assert reopened.feeds.check().ok


def test_a_schema_14_row_of_another_layout_stops_the_migration_and_writes_nothing(open_store):
    root, reply, _missing, waiting, plain = conversation()
    store = open_store()
    store.writes.ingest([m.raw for m in (root, reply, waiting, plain)])
    path = store.path
    store.close()
    env = lmdb.open(str(path), max_dbs=MAX_NAMED_DATABASES)
    tables = Tables.open(env)
    with env.begin(write=True) as txn:
        write_schema_14_ids(env, txn, tables)
        txn.put(root.id, b"\x01" * 7, db=tables.message_ids)
        txn.put(b"schema", b"14", db=tables.meta)
    with env.begin() as txn:
        kept = [(bytes(k), bytes(v)) for k, v in txn.cursor(db=tables.message_ids)]
    env.close()
    with pytest.raises(StoreDamaged, match="cannot be migrated"):
        open_store(path.name, create=False)
    env = lmdb.open(str(path), max_dbs=MAX_NAMED_DATABASES)
    tables = Tables.open(env)
    with env.begin() as txn:
        assert [(bytes(k), bytes(v)) for k, v in txn.cursor(db=tables.message_ids)] == kept
        assert txn.get(b"schema", db=tables.meta) == b"14"
    env.close()


@given(
    feed_number=st.integers(0, 2**31 - 1),
    seq=st.integers(1, 2**64 - 1),
    number=st.none() | st.binary(min_size=4, max_size=4),
)
def test_a_row_says_where_and_its_number_back_whatever_the_seq(feed_number, seq, number):
    row = where_of(feed_number, seq) + (number or b"")
    assert len(row) == (8 if seq < 2**32 else 12) + (4 if number else 0)
    assert split_row(row) == ((feed_number, seq), number)
    assert split_row(b"\x00\x00\x00\x07") == (None, b"\x00\x00\x00\x07")


def test_a_row_of_no_layout_and_a_feed_number_past_2_to_the_31_are_refused():
    for length in (0, 3, 5, 7, 9, 17):
        with pytest.raises(ValueError):
            split_row(b"\x00" * length)
    with pytest.raises(StoreDamaged):
        where_of(2**31, 1)


def test_a_spacetime_ref_past_seq_2_to_the_32_is_stored_long_and_read_back(open_store):
    store = open_store()
    author = b"\x05" * 32
    refs = [spacetime_ref(author, seq, b"\x09" * 32) for seq in (1, 2**32 - 1, 2**32, 2**63)]
    with store.ctx.write() as txn:
        numbers = store.ctx.timeline_tables.ref_numbers(txn)
        given = [numbers.assign(ref) for ref in refs]
    with store.ctx.read() as txn:
        fresh = store.ctx.timeline_tables.ref_numbers(txn)
        assert [fresh.ref(number) for number in given] == refs
        stored = [len(txn.get(n, db=store.ctx.timeline_tables.ref_names)) for n in given]
        assert stored == [24, 24, 28, 28]
        assert [fresh.find(ref) for ref in refs] == given
