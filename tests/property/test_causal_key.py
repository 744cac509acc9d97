"""The causal-time key (storage.engine.causal_key) sorts like the causal-time order's greedy one.

Keys are computed from scratch here, in topological order, with the same
`extend` the engine uses; sorting by them must give `causal_time_order`
whenever no key is cut, and an order that is topological and independent of
arrival otherwise."""

from hypothesis import given, settings
from hypothesis import strategies as st

from tanglenode.storage.engine.causal_key import (
    MAX_CHAIN,
    element,
    extend,
    is_cut,
    root_chain,
    tree_key,
)
from tanglenode.storage.engine.causal_time import causal_time_order


@st.composite
def histories(draw, max_size=30):
    """(id, links, time): random DAGs, times random (equal and decreasing ones too),
    ids with zero bytes and shared prefixes, some links dangling."""
    count = draw(st.integers(1, max_size))
    ids = draw(
        st.lists(
            st.binary(min_size=1, max_size=3).filter(lambda b: b[:1] != b"?"),
            min_size=count,
            max_size=count,
            unique=True,
        )
    )
    times = st.integers(0, 6) | st.integers(0, (1 << 64) - 1)
    events = []
    for index, event_id in enumerate(ids):
        links = draw(st.lists(st.sampled_from(ids[:index]), max_size=3)) if index else []
        if draw(st.integers(0, 4)) == 0:
            links.append(b"?" + event_id)  # never present
        events.append((event_id, links, draw(times)))
    return events


def keys_of(events, limit=MAX_CHAIN, cut=None):
    chains, heights, keys = {}, {}, {}
    for event_id, links, time in events:  # listed in a topological order
        elem = element(time, event_id)
        present = [link for link in links if link in chains]
        chain = max([extend(chains[link], elem, limit) for link in present], default=None)
        chains[event_id] = chain or root_chain(elem)
        heights[event_id] = 1 + max((heights[link] for link in present), default=-1)
        keys[event_id] = tree_key(chains[event_id], heights[event_id], elem)
        if cut is not None and is_cut(chains[event_id]):
            cut.append(event_id)
    return keys


@settings(max_examples=400, deadline=None)
@given(histories())
def test_sorting_by_key_is_the_greedy_order(events):
    keys = keys_of(events, limit=10_000)
    assert sorted(keys, key=keys.__getitem__) == causal_time_order(events)


@settings(max_examples=300, deadline=None)
@given(histories(), st.integers(1, 4))
def test_cut_keys_stay_topological_and_equal_the_greedy_order_when_short(events, limit):
    cut = []
    keys = keys_of(events, limit, cut)
    order = sorted(keys, key=keys.__getitem__)
    position = {event_id: index for index, event_id in enumerate(order)}
    for event_id, links, _time in events:
        for link in links:
            if link in position:
                assert position[link] < position[event_id]
    if not cut:
        assert order == causal_time_order(events)


def test_the_worked_example():  # docs/TIMELINES.md, "The causal-time order"
    minute = 60_000
    example = [
        ("a0", [], 11 * 60 + 30),
        ("a1", ["a0"], 12 * 60 + 15),
        ("b0", ["a1"], 12 * 60 + 55),
        ("a2", ["a1"], 13 * 60 + 10),
        ("a3", ["a2"], 13 * 60),
        ("c0", ["a0", "a2"], 12 * 60 + 25),
        ("d1", ["d0"], 13 * 60 + 37),
        ("d2", ["d1"], 13 * 60 + 38),
        ("d3", ["d0"], 13 * 60 + 39),
        ("a4", ["a3", "d2", "d3"], 14 * 60 + 10),
        ("b1", ["a4", "c0"], 14 * 60 + 5),
    ]
    events = [(i.encode(), [x.encode() for x in links], t * minute) for i, links, t in example]
    keys = keys_of(events)
    order = [e.decode() for e in sorted(keys, key=keys.__getitem__)]
    assert order == ["a0", "a1", "b0", "a2", "c0", "a3", "d1", "d2", "d3", "a4", "b1"]
