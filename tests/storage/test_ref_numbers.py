"""Ref numbers (storage/engine/ref_numbers.py): the engine's rows hold 4-byte numbers, given in
order of first use and never reused; a read never numbers a ref; an aborted transaction takes
its numbers with it."""

import struct

import pytest

from tanglenode.storage.engine.causal_timeline import CausalWriter, causal_name
from tanglenode.storage.engine.timeline import CycleError, TimelineWriter, UnknownEvent
from tanglenode.storage.engine.timeline_reader import TimelineReader, membership
from tests.timeline_oracle import EngineHarness, expected_rows


@pytest.fixture
def engine(tmp_path):
    harness = EngineHarness(tmp_path / "tl")
    yield harness
    harness.close()


def numbering(engine) -> dict[bytes, int]:
    """ref -> number, from both tables, which must mirror each other."""
    with engine.env.begin() as txn:
        by_ref = {bytes(k): bytes(v) for k, v in txn.cursor(db=engine.tables.refs)}
        by_number = {bytes(k): bytes(v) for k, v in txn.cursor(db=engine.tables.ref_names)}
    assert {number: ref for ref, number in by_ref.items()} == by_number
    return {ref: struct.unpack(">I", number)[0] for ref, number in by_ref.items()}


def number_of(engine, ref: bytes) -> bytes:
    return struct.pack(">I", numbering(engine)[ref])


def test_rows_hold_numbers_given_in_order_of_first_use(engine):
    engine.add_batch([(b"msg-b" * 8, [b"msg-a" * 8]), (b"msg-c" * 8, [b"msg-b" * 8])])
    b, a, c = b"msg-b" * 8, b"msg-a" * 8, b"msg-c" * 8
    assert numbering(engine) == {b: 0, a: 1, c: 2}  # b, then its link a, then c
    raw = engine.raw_rows()
    number = {ref: number_of(engine, ref) for ref in (a, b, c)}
    # tl-nodes: number + rank; the sort id is the ref's, so the row leaves it out
    assert raw["nodes"] == {(number[b], b"\x00\x00\x00\x00"), (number[c], b"\x00\x00\x00\x01")}
    # tl-succ: link number -> member number; a's row is b's pending reference to it
    assert raw["succ"] == {(number[a], number[b]), (number[b], number[c])}
    assert raw["pending"] == {(number[b], b"\x00\x00\x00\x01")}
    assert engine.rows() == expected_rows([(b, [a]), (c, [b])])
    engine.add(a)  # a arrives: it keeps the number its pending reference gave it
    assert numbering(engine) == {b: 0, a: 1, c: 2}
    assert engine.order() == [a, b, c]


def test_a_sort_id_other_than_the_ref_is_kept_in_the_row(engine):
    with engine.env.begin(write=True) as txn:
        writer = TimelineWriter(txn, engine.tables)
        writer.add(b"t", b"position-1", sort_id=b"id-z")
        writer.add(b"t", b"position-2", [b"position-1"], sort_id=b"id-a")
        writer.finish()
    assert engine.order() == [b"id-z", b"id-a"]
    raw = dict(engine.raw_rows()["nodes"])
    assert raw[number_of(engine, b"position-2")] == b"\x00\x00\x00\x01id-a"


def test_causal_time_rows_are_keyed_by_the_same_numbers(engine):
    with engine.env.begin(write=True) as txn:
        writer = TimelineWriter(txn, engine.tables)
        twins = writer.companion(CausalWriter)
        for ref, links, time in [(b"a" * 32, [], 5), (b"b" * 32, [b"a" * 32], 7)]:
            writer.add(b"t", ref, links)
            twins.add(b"t", ref, links, time)
        writer.finish()
    with engine.env.begin() as txn:
        number = txn.get(causal_name(b"t"), db=engine.tables.names)
        nodes = [bytes(k) for k in txn.cursor(db=engine.tables.causal_nodes).iternext(values=False)]
        times = [(bytes(k), bytes(v)) for k, v in txn.cursor(db=engine.tables.causal_times)]
    ours = {number_of(engine, b"a" * 32), number_of(engine, b"b" * 32)}
    assert {key[:4] for key in nodes} == {number} and {key[4:] for key in nodes} == ours
    assert [(key[12:], value) for key, value in times] == [
        (b"a" * 32, number_of(engine, b"a" * 32)),
        (b"b" * 32, number_of(engine, b"b" * 32)),
    ]


def test_a_cycle_names_refs_not_numbers(engine):
    with engine.env.begin(write=True) as txn:
        writer = TimelineWriter(txn, engine.tables)
        twins = writer.companion(CausalWriter)
        for ref, links in [(b"a", [b"c"]), (b"b", [b"a"])]:
            writer.add(b"t", ref, links)
            twins.add(b"t", ref, links, 1)
        with pytest.raises(CycleError) as refused:
            writer.add(b"t", b"c", [b"b"])
        assert refused.value.loop == [b"c", b"b", b"a"]  # each follows the next, a follows c
        with pytest.raises(CycleError) as refused:  # the twin refuses it too, by refs
            twins.add(b"t", b"c", [b"b"], 1)
        assert refused.value.loop == [b"c", b"b"]
        writer.finish()


def test_an_aborted_transaction_takes_its_numbers_with_it(engine):
    engine.add_batch([(b"a", []), (b"b", [b"a"])])
    with engine.env.begin(write=True) as txn:
        writer = TimelineWriter(txn, engine.tables)
        writer.add(b"t", b"x", [b"b", b"missing"])
        writer.finish()
        txn.abort()
    assert numbering(engine) == {b"a": 0, b"b": 1}
    engine.add_batch([(b"y", [b"a"]), (b"x", [b"y"])])  # new writers, new transactions
    assert numbering(engine) == {b"a": 0, b"b": 1, b"y": 2, b"x": 3}
    assert engine.order() == [b"a", b"b", b"y", b"x"]
    assert engine.rows() == expected_rows(
        [(b"a", []), (b"b", [b"a"]), (b"y", [b"a"]), (b"x", [b"y"])]
    )


def test_a_nested_transaction_that_aborts_leaves_its_parent_numbering_right(engine):
    engine.add(b"a")
    with engine.env.begin(write=True) as parent:
        with engine.env.begin(write=True, parent=parent) as child:
            writer = TimelineWriter(child, engine.tables)
            writer.add(b"t", b"gone", [b"a", b"never"])
            writer.finish()
            child.abort()
        writer = TimelineWriter(parent, engine.tables)
        writer.add(b"t", b"kept", [b"a"])
        writer.finish()
    assert numbering(engine) == {b"a": 0, b"kept": 1}
    assert engine.order() == [b"a", b"kept"]


def test_reads_of_refs_without_a_number_write_nothing(engine):
    engine.add_batch([(b"a", []), (b"b", [b"a", b"pending"])])
    before = numbering(engine)
    with engine.env.begin(write=True) as txn:  # a write transaction: the reads could write
        reader = TimelineReader(txn, engine.tables)
        for ref in (b"unknown", b"pending"):
            assert reader.placement(b"t", ref) is None
            assert reader.member_rank(b"t", ref) is None
            assert not membership(txn, engine.tables, b"t")(ref)
        assert reader.successors(b"t", b"unknown") == []
        assert reader.successors(b"t", b"pending") == [b"b"]
        assert reader.pending_members(b"t") == [(b"b", 1)]
        writer = TimelineWriter(txn, engine.tables)
        with pytest.raises(UnknownEvent):
            writer.remove(b"t", b"unknown", [], lambda ref: [])
        writer.finish()
        assert txn.stat(engine.tables.refs)["entries"] == len(before)
        assert txn.stat(engine.tables.ref_names)["entries"] == len(before)
    assert numbering(engine) == before


def test_removal_and_adding_again_restore_the_raw_rows(engine):
    events = [(b"a", []), (b"b", [b"a"]), (b"c", [b"b", b"a"]), (b"d", [b"c", b"q"])]
    engine.add_batch(events)
    before = (engine.raw_rows(), numbering(engine), engine.order())
    engine.remove(b"b")  # c waits for b again: its number stays, as c's pending reference
    assert numbering(engine) == before[1]
    assert engine.rows() == expected_rows([event for event in events if event[0] != b"b"])
    engine.add(b"b", [b"a"])
    assert (engine.raw_rows(), numbering(engine), engine.order()) == before
    engine.remove(b"d")
    engine.remove(b"a")
    engine.add_batch([(b"a", []), (b"d", [b"c", b"q"])])
    assert (engine.raw_rows(), numbering(engine), engine.order()) == before


def test_two_numberings_of_one_transaction_never_give_the_same_number(engine):
    """Each `RefNumbers` goes on from its own last number; one of them numbering in between
    makes LMDB's append refuse the other's guess, which then reads the table's end."""
    with engine.env.begin(write=True) as txn:
        first, second = engine.tables.ref_numbers(txn), engine.tables.ref_numbers(txn)
        given = [first.assign(b"a"), first.assign(b"b"), second.assign(b"c")]
        given += [first.assign(b"d"), second.assign(b"e"), first.assign(b"f")]
        assert first.find(b"zz") is None and first.assign(b"zz") not in given  # once absent
    assert sorted(numbering(engine).values()) == list(range(7))
    assert len(set(given)) == len(given)
