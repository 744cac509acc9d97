"""Random DAGs, random arrival orders and batches, a small log retention: after every
transaction the order at the floor with the log after it replayed is the timeline's order,
the floor is an event boundary, and a trim keeps as many whole events as fit the window."""

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tanglenode.storage.engine.command_log import LogRetention
from tanglenode.storage.engine.timeline import apply_commands
from tanglenode.storage.errors import BelowLogFloor
from tests.property.test_timeline_properties import dags_in_arrival_order
from tests.timeline_oracle import EngineHarness, rank_order

NAME = b"t"  # EngineHarness's timeline
EVERYTHING = 10**6


@settings(max_examples=80, deadline=None)
@given(
    dags_in_arrival_order(),
    st.builds(LogRetention, st.integers(1, 6), st.integers(0, 3)),
)
def test_the_snapshot_at_the_floor_and_the_log_after_it_give_the_order(case, retention):
    arrival, cuts, reopen_at = case
    with tempfile.TemporaryDirectory() as directory:
        full = EngineHarness(Path(directory) / "full")  # keeps every command: the history
        kept = EngineHarness(Path(directory) / "kept", retention=retention)
        try:
            ends = [0]  # the version after each event: the only floors allowed
            start = floor = 0
            for stop in [*cuts, len(arrival)]:
                batch = arrival[start:stop]
                events = full.add_batch(batch)
                assert kept.add_batch(batch) == events
                for commands in events:
                    ends.append(ends[-1] + len(commands))
                if stop == reopen_at:
                    kept.reopen()
                floor = _check(full, kept, retention, ends, floor)
                start = stop
            with kept.env.begin() as txn:
                assert kept.reader(txn).order(NAME) == rank_order(arrival)
        finally:
            full.close()
            kept.close()


def _check(full, kept, retention: LogRetention, ends: list[int], before: int) -> int:
    """The invariants after one transaction; the floor now."""
    with full.env.begin() as full_txn, kept.env.begin() as kept_txn:
        history = full.reader(full_txn).commands_since(NAME, 0, EVERYTHING)
        reader = kept.reader(kept_txn)
        version, floor = reader.version(NAME), reader.floor(NAME)
        assert version == ends[-1] == len(history)
        assert floor in ends and floor >= before  # an event boundary, never lowered
        assert version - floor <= retention.keep + retention.slack
        if floor > before:  # trimmed now: to the window, keeping every whole event that fits
            assert version - floor <= retention.keep
            earlier = [end for end in ends if before <= end < floor]
            assert version - max(earlier) > retention.keep
        tail = reader.commands_since(NAME, floor, EVERYTHING)
        assert tail == history[floor:]
        snapshot = apply_commands([], history[:floor])  # what a subscriber's snapshot held
        assert apply_commands(snapshot, tail) == reader.order(NAME)
        if floor:
            with pytest.raises(BelowLogFloor):
                reader.commands_since(NAME, floor - 1)
    return floor
