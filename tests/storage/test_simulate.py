"""The paper's tangle generators (storage/tools/simulate.py): Figure 8's two events per rank."""

import random
from collections import Counter

import pytest

from tanglenode.storage.tools.simulate import (
    ACTIVE_FEEDS,
    DEFAULT_GENERATOR,
    GENERATORS,
    LURKERS,
    paper_tangle,
    random_feed,
)
from tests.timeline_oracle import ranks

RANK_READINGS = ("longest-by-rank", "longest-by-rank-then-count", "longest-by-rank-random")


def events_per_rank(events) -> Counter:
    """How many events each longest-path rank holds, computed by the tests' own oracle."""
    rank = ranks((event.name.encode(), [link.encode() for link in event.after]) for event in events)
    return Counter(rank.values())


@pytest.mark.parametrize("generator", RANK_READINGS)
@pytest.mark.parametrize("feeds", [2, 3, 4, 16, 64])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_rank_holds_exactly_two_events(generator, feeds, seed):
    events = paper_tangle(2000, feeds, random.Random(seed), generator)
    assert len(events) == 2000
    per_rank = events_per_rank(events)
    assert set(per_rank.values()) == {2}
    assert sorted(per_rank) == list(range(1000))  # one rank per step, none skipped


def test_the_default_is_the_rank_reading_and_breaks_ties_by_the_lower_feed():
    assert DEFAULT_GENERATOR == "longest-by-rank"
    events = paper_tangle(4000, 8, random.Random(7))
    step_feeds = [(events[i].feed, events[i + 1].feed) for i in range(0, len(events), 2)]
    names = {event.name: event for event in events}
    for step in range(1, len(step_feeds)):
        previous = step_feeds[step - 1]
        for event in events[2 * step : 2 * step + 2]:
            others = [feed for feed in previous if feed != event.feed]
            cross = [names[link].feed for link in event.after if names[link].feed != event.feed]
            assert cross == [min(others)]


def test_the_first_reading_is_kept_and_gives_ranks_of_other_sizes():
    assert "longest-by-count" in GENERATORS
    events = paper_tangle(2000, 16, random.Random(1), "longest-by-count")
    per_rank = events_per_rank(events)
    assert max(per_rank.values()) > 2  # what the issue found: not Figure 8's tangle
    assert events_per_rank(paper_tangle(2000, 16, random.Random(1))) != per_rank


def test_the_todo_scenario_has_few_lurker_events_and_two_events_per_rank():
    events = paper_tangle(20_000, 0, random.Random(3), "active-lurkers")
    feeds = Counter(event.feed for event in events)
    lurking = sum(count for feed, count in feeds.items() if feed >= ACTIVE_FEEDS)
    assert max(feeds) < ACTIVE_FEEDS + LURKERS and len(feeds) > ACTIVE_FEEDS + LURKERS // 2
    assert 0.03 < lurking / len(events) < 0.07  # about 1/20 of the events
    assert set(events_per_rank(events).values()) == {2}


def test_generation_is_reproducible_and_random_feed_keeps_each_feed_in_order():
    first = paper_tangle(3000, 8, random.Random(11))
    assert first == paper_tangle(3000, 8, random.Random(11))
    delivered = random_feed(first, random.Random(2))
    assert sorted(delivered, key=lambda e: e.name) == sorted(first, key=lambda e: e.name)
    seen: dict[int, int] = {}
    for event in delivered:
        seq = int(event.name.split(".")[1])
        assert seq == seen.get(event.feed, -1) + 1
        seen[event.feed] = seq


def test_fewer_than_two_feeds_is_refused():
    with pytest.raises(ValueError):
        paper_tangle(10, 1, random.Random(1))
