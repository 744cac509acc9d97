"""The causal-time window (storage.engine.causal_window) against oracles, both modes."""

import tempfile
from pathlib import Path

import lmdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tanglenode.storage.engine.causal_time import causal_time_order
from tanglenode.storage.engine.causal_timeline import CausalWriter, causal_name
from tanglenode.storage.engine.causal_window import window
from tanglenode.storage.engine.timeline import TimelineTables, TimelineWriter
from tests.causal_oracle import causal_oracle

BASE = b"t"


@st.composite
def windows(draw):
    count = draw(st.integers(1, 25))
    ids = [bytes([index]) for index in range(count)]
    events = []
    for index, event_id in enumerate(ids):
        links = draw(st.lists(st.sampled_from(ids[:index]), max_size=3)) if index else []
        events.append((event_id, list(dict.fromkeys(links)), draw(st.integers(0, 30))))
    arrival = draw(st.permutations(events))
    low = draw(st.integers(0, 30))
    high = draw(st.integers(low, 31))
    start = draw(st.integers(0, 3))
    limit = draw(st.none() | st.integers(1, 10))
    return arrival, low, high, start, limit


@settings(max_examples=200, deadline=None)
@given(windows())
def test_both_modes_equal_their_oracles(case):
    arrival, low, high, start, limit = case
    with tempfile.TemporaryDirectory() as directory:
        env = lmdb.open(str(Path(directory) / "tl"), max_dbs=TimelineTables.COUNT + 1)
        try:
            tables = TimelineTables.open(env)
            with env.begin(write=True) as txn:
                writer = TimelineWriter(txn, tables)
                for event_id, links, time in arrival:
                    writer.add(BASE, event_id, links)
                    writer.companion(CausalWriter).add(BASE, event_id, links, time)
                writer.finish()
            time_of = {event_id: time for event_id, _links, time in arrival}
            inside = [event for event in arrival if low <= event[2] <= high]
            stop = None if limit is None else start + limit
            with env.begin() as txn:
                name = causal_name(BASE)
                first, strict = window(txn, tables, name, low, high, "strict", start, limit)
                assert first is None
                expected = causal_time_order(inside)[start:stop]
                assert strict == [(time_of[e], e) for e in expected]
                first, implied = window(txn, tables, name, low, high, "implied", start, limit)
            order = causal_oracle(arrival)
            positions = [order.index(event[0]) for event in inside]
            if not positions:
                assert implied == []
                return
            whole = order[min(positions) : max(positions) + 1]
            assert first == min(positions) + start
            assert implied == [(time_of[e], e) for e in whole[start:stop]]
        finally:
            env.close()


def test_a_bad_window_is_refused(tmp_path):
    env = lmdb.open(str(tmp_path / "tl"), max_dbs=TimelineTables.COUNT + 1)
    tables = TimelineTables.open(env)
    with env.begin() as txn, pytest.raises(ValueError):
        window(txn, tables, causal_name(BASE), 5, 4)
    env.close()
