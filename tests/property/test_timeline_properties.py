"""Random DAGs, random arrival orders: the engine always equals the plain (rank, id) order."""

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tanglenode.storage.engine.timeline import apply_commands
from tests.timeline_oracle import EngineHarness, rank_order


@st.composite
def dags_in_arrival_order(draw):
    """(id, links) events of a random DAG, some links dangling, shuffled; plus batch cuts."""
    count = draw(st.integers(1, 40))
    ids = [f"e{index:02d}".encode() for index in range(count)]
    events = []
    for index, event_id in enumerate(ids):
        earlier = st.sampled_from(ids[:index]) if index else st.nothing()
        links = draw(st.lists(earlier, max_size=3)) if index else []
        if draw(st.booleans()):
            links.append(b"missing-" + event_id)  # never delivered
        events.append((event_id, links))
    arrival = draw(st.permutations(events))
    cuts = sorted(draw(st.sets(st.integers(1, count), max_size=4)))
    reopen_at = draw(st.sampled_from(cuts)) if cuts else None
    return arrival, cuts, reopen_at


@settings(max_examples=80, deadline=None)
@given(dags_in_arrival_order())
def test_every_prefix_of_every_arrival_order_is_the_rank_order(case):
    arrival, cuts, reopen_at = case
    with tempfile.TemporaryDirectory() as directory:
        engine = EngineHarness(Path(directory) / "tl")
        try:
            array: list[bytes] = []
            start = 0
            for stop in [*cuts, len(arrival)]:
                batch = arrival[start:stop]
                for offset, commands in enumerate(engine.add_batch(batch)):
                    apply_commands(array, commands)
                    assert array == rank_order(arrival[: start + offset + 1])
                assert engine.order() == array
                if stop == reopen_at:
                    engine.reopen()
                    assert engine.order() == array
                start = stop
            with engine.env.begin() as txn:
                replayed = engine.reader(txn).commands_since(b"t", 0, limit=10**6)
            assert apply_commands([], replayed) == array
        finally:
            engine.close()
