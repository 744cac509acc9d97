"""The incremental causal-time engine (storage.engine.causal_timeline) against from-scratch oracles:
random histories, random timestamps (equal and falling ones), random arrival orders,
batches, reopening, dangling links and removals."""

import tempfile
from pathlib import Path

import lmdb
from hypothesis import given, settings
from hypothesis import strategies as st

from tanglenode.storage.engine.causal_time import causal_time_order
from tanglenode.storage.engine.causal_timeline import CausalWriter, causal_name
from tanglenode.storage.engine.timeline import (
    Delete,
    Insert,
    Move,
    TimelineTables,
    TimelineWriter,
    apply_commands,
)
from tanglenode.storage.engine.timeline_reader import TimelineReader
from tests.causal_oracle import causal_oracle

BASE = b"t"
NAME = causal_name(BASE)


@st.composite
def scripts(draw):
    """Steps ("add", id) / ("remove", id) over a random DAG with random times, links to
    events that arrive later or never; transaction cuts; a reopen; a key limit."""
    count = draw(st.integers(1, 22))
    ids = draw(
        st.lists(
            st.binary(min_size=1, max_size=3), min_size=count, max_size=count, unique=True
        ).filter(lambda xs: all(x[:1] != b"?" for x in xs))
    )
    times = st.integers(0, 5) | st.integers(0, (1 << 64) - 1)
    falling = draw(st.booleans())  # a hostile run: time falls along the DAG
    events = {}
    for index, event_id in enumerate(ids):
        links = draw(st.lists(st.sampled_from(ids[:index]), max_size=3)) if index else []
        if draw(st.integers(0, 3)) == 0:
            links.append(b"?" + event_id)  # never delivered
        time = 1000 - index if falling else draw(times)
        events[event_id] = (list(dict.fromkeys(links)), time)
    present: list[bytes] = []
    steps = []
    for _ in range(draw(st.integers(1, 3 * count))):
        absent = [event_id for event_id in ids if event_id not in present]
        if present and (not absent or draw(st.integers(0, 3)) == 0):
            ref = draw(st.sampled_from(present))
            present.remove(ref)
            steps.append(("remove", ref))
        else:
            ref = draw(st.sampled_from(absent))  # any arrival order
            present.append(ref)
            steps.append(("add", ref))
    cuts = sorted(draw(st.sets(st.integers(1, len(steps)), max_size=5)))
    reopen_at = draw(st.sampled_from(cuts)) if cuts else None
    limit = draw(st.sampled_from([2, 3, 16]))
    return events, steps, cuts, reopen_at, limit


def _open(path):
    env = lmdb.open(str(path), map_size=2**30, max_dbs=TimelineTables.COUNT + 1)
    return env, TimelineTables.open(env)


@settings(max_examples=250, deadline=None)
@given(scripts())
def test_every_step_equals_the_oracle_and_the_log_replays(script):
    events, steps, cuts, reopen_at, limit = script
    with tempfile.TemporaryDirectory() as directory:
        env, tables = _open(Path(directory) / "tl")
        try:
            present: dict[bytes, tuple[list[bytes], int]] = {}
            array: list[bytes] = []
            start = 0
            for stop in [*cuts, len(steps)]:
                with env.begin(write=True) as txn:
                    writer = TimelineWriter(txn, tables)
                    twins = CausalWriter(txn, tables, limit)
                    for kind, ref in steps[start:stop]:
                        links, time = events[ref]
                        if kind == "add":
                            writer.add(BASE, ref, links)
                            commands = twins.add(BASE, ref, links, time)
                            present[ref] = (links, time)
                            assert isinstance(commands[0], Insert)
                        else:
                            writer.remove(BASE, ref, links, lambda r: present[r][0])
                            del present[ref]
                            commands = twins.remove(BASE, ref, lambda r: present[r][0])
                            assert isinstance(commands[0], Delete)
                        assert all(isinstance(c, Move) for c in commands[1:])
                        apply_commands(array, commands)
                        expected = causal_oracle(
                            [(r, links, time) for r, (links, time) in present.items()], limit
                        )
                        assert array == expected
                    writer.finish()
                    twins.finish()
                with env.begin() as txn:
                    reader = TimelineReader(txn, tables)
                    assert reader.order(NAME) == array
                    assert [t for t, _id in reader.entries(NAME)] == [present[r][1] for r in array]
                    assert apply_commands([], reader.commands_since(NAME, 0, 10**6)) == array
                    for position, ref in enumerate(array):
                        placement = reader.placement(NAME, ref)
                        assert (placement.position, placement.time) == (position, present[ref][1])
                if stop == reopen_at:
                    env.close()
                    env, tables = _open(Path(directory) / "tl")
                start = stop
        finally:
            env.close()


def test_the_worked_example_in_every_arrival_order_of_a_few():  # docs/TIMELINES.md
    minute = 60_000
    example = [
        ("a0", [], "11:30"), ("a1", ["a0"], "12:15"), ("b0", ["a1"], "12:55"),
        ("a2", ["a1"], "13:10"), ("a3", ["a2"], "13:00"), ("c0", ["a0", "a2"], "12:25"),
        ("d1", ["d0"], "13:37"), ("d2", ["d1"], "13:38"), ("d3", ["d0"], "13:39"),
        ("a4", ["a3", "d2", "d3"], "14:10"), ("b1", ["a4", "c0"], "14:05"),
    ]  # fmt: skip
    events = [
        (i.encode(), [x.encode() for x in links], minute * (60 * int(t[:2]) + int(t[3:])))
        for i, links, t in example
    ]
    expected = [
        e.encode() for e in ["a0", "a1", "b0", "a2", "c0", "a3", "d1", "d2", "d3", "a4", "b1"]
    ]
    assert causal_time_order(events) == expected
    # an arrival order with a0 late, the listed one, and the reverse
    late_a0 = ["a1", "b0", "a2", "a0", "a3", "c0", "a4", "b1", "d1", "d2", "d3"]
    by_id = {event[0]: event for event in events}
    for arrival in ([by_id[i.encode()] for i in late_a0], events, list(reversed(events))):
        with tempfile.TemporaryDirectory() as directory:
            env, tables = _open(Path(directory) / "tl")
            try:
                with env.begin(write=True) as txn:
                    writer = TimelineWriter(txn, tables)
                    twins = writer.companion(CausalWriter)
                    for event_id, links, time in arrival:
                        writer.add(BASE, event_id, links)
                        twins.add(BASE, event_id, links, time)
                    writer.finish()
                with env.begin() as txn:
                    assert TimelineReader(txn, tables).order(NAME) == expected
            finally:
                env.close()
