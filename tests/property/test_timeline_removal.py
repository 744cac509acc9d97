"""Random DAGs, random interleavings of adds and removes: the engine always equals the
oracle on the members present, whatever was added and taken out before."""

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tanglenode.storage.engine.timeline import Delete, Move, TimelineWriter, apply_commands
from tanglenode.storage.engine.timeline_reader import TimelineReader
from tests.timeline_oracle import EngineHarness, expected_rows, pending_counts, rank_order


@st.composite
def add_remove_scripts(draw):
    """Steps ("add", id, links) / ("remove", id) over a random DAG, some links dangling;
    a member may be removed and added again (with the same links). Plus the transaction
    cuts, the steps after which a transaction flushes and reads mid-way, and a reopen."""
    count = draw(st.integers(1, 24))
    ids = [f"e{index:02d}".encode() for index in range(count)]
    links = {}
    for index, event_id in enumerate(ids):
        earlier = draw(st.lists(st.sampled_from(ids[:index]), max_size=3)) if index else []
        if draw(st.booleans()):
            earlier.append(b"missing-" + event_id)  # never delivered
        links[event_id] = earlier
    present: list[bytes] = []
    steps = []
    for _ in range(draw(st.integers(1, 3 * count))):
        absent = [event_id for event_id in ids if event_id not in present]
        if present and (not absent or draw(st.integers(0, 2)) == 0):
            ref = draw(st.sampled_from(present))
            present.remove(ref)
            steps.append(("remove", ref))
        else:
            ref = draw(st.sampled_from(absent))
            present.append(ref)
            steps.append(("add", ref, links[ref]))
    cuts = sorted(draw(st.sets(st.integers(1, len(steps)), max_size=5)))
    checkpoints = draw(st.sets(st.integers(0, len(steps) - 1), max_size=3))
    reopen_at = draw(st.sampled_from(cuts)) if cuts else None
    return steps, cuts, checkpoints, reopen_at


@settings(max_examples=200, deadline=None)
@given(add_remove_scripts())
def test_adds_and_removes_in_any_interleaving_give_the_rank_order(script):
    steps, cuts, checkpoints, reopen_at = script
    with tempfile.TemporaryDirectory() as directory:
        engine = EngineHarness(Path(directory) / "tl")
        try:
            present: dict[bytes, list[bytes]] = {}  # member -> the links it was added with
            array: list[bytes] = []
            start = 0
            for stop in [*cuts, len(steps)]:
                with engine.env.begin(write=True) as txn:
                    writer = TimelineWriter(txn, engine.tables)
                    for index in range(start, stop):
                        kind, ref, *after = steps[index]
                        if kind == "add":
                            commands = writer.add(b"t", ref, after[0])
                            present[ref] = after[0]
                        else:
                            commands = writer.remove(b"t", ref, present[ref], present.__getitem__)
                            del present[ref]
                            assert isinstance(commands[0], Delete)
                            assert all(isinstance(command, Move) for command in commands[1:])
                        apply_commands(array, commands)
                        assert array == rank_order(present.items())
                        if index in checkpoints:  # flush mid-transaction, read, go on writing
                            writer.finish()
                            reader = TimelineReader(txn, engine.tables)
                            assert reader.order(b"t") == array
                            assert len(reader.pending_ranks(b"t")) == len(
                                pending_counts(present.items())
                            )
                    writer.finish()
                assert engine.order() == array
                with engine.env.begin() as txn:
                    replayed = engine.reader(txn).commands_since(b"t", 0, limit=10**6)
                assert apply_commands([], replayed) == array
                rows = engine.rows()  # ranks, successor rows and pending counts, raw
                assert dict(rows["pending"]) == pending_counts(present.items())
                assert rows == expected_rows(present.items())
                if stop == reopen_at:
                    engine.reopen()
                    assert engine.order() == array
                start = stop
        finally:
            engine.close()
