"""Synthetic tangles like those of the ScuttleSort paper's evaluation
(docs/PIPELINE.md, "evaluate"), for tests and benchmarks.

The paper's generator: at each step two distinct feeds, picked at random,
each append one event with two links, "one for the hash chain, and one to
the currently longest feed (itself excepted)"; both links are chosen from
the feeds as they stood before the step. Its Figure 8 states that with this
generator every rank holds exactly two events. Which feed is "longest"
decides whether that is true, so the generators here name their reading:

- `longest-by-rank` (the default): the other feed whose tip has the highest
  rank. The only tips at the top rank are those of the two feeds that
  appended in the previous step; when both qualify, the lower feed number
  wins (what a first-maximum search over the feeds gives). Every step's two
  events then sit one rank above the previous step's, so each rank holds
  exactly two events, as Figure 8 says, and the command counts track the
  paper's table (docs/BENCHMARKS.md).
- `longest-by-rank-then-count`, `longest-by-rank-random`: the same, with the
  tie between the previous step's two feeds broken by the most events (then
  at random), or at random. Ranks hold two events as well; measured beside
  the default in docs/BENCHMARKS.md.
- `longest-by-count`: the other feed with the most events (ties: the lowest
  feed number), the reading this module used first. Ranks then hold from 1
  up to nearly as many events as there are feeds (15 with 16 feeds, 63 with
  64, at 32K events) and the command counts fall with width, unlike the
  paper's.
- `active-lurkers`: the paper's to-do scenario ("32 active users, 512
  lurkers"): the first 32 feeds are active, the other 512 lurkers; each of a
  step's two feeds is drawn from the lurkers with probability 1/20 and from
  the active feeds otherwise (so lurkers write about 5 % of the events, ~25
  each in 256K), links as in `longest-by-rank`. The width argument is
  ignored: the scenario fixes its 544 feeds.

Delivery models:

- `in_order`: events in the order they were generated;
- `random_feed`: each round picks a feed at random among those with events
  left and delivers its next one, so feeds stay in order but are interleaved
  arbitrarily and most cross-links point at events not yet delivered.

Event names are `FFFF.SSSSSS` (feed, seq), so they sort like the paper's.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

ACTIVE_FEEDS, LURKERS, LURKER_SHARE = 32, 512, 0.05  # the to-do scenario


@dataclass(frozen=True, slots=True)
class Event:
    feed: int
    name: str
    after: tuple[str, ...]


class _Logs:
    """The feeds being generated: each feed's event names, and the events in order."""

    def __init__(self, feeds: int) -> None:
        self.names: list[list[str]] = [[] for _ in range(feeds)]
        self.generated: list[Event] = []

    def tip(self, feed: int | None) -> str | None:
        if feed is None or not self.names[feed]:
            return None
        return self.names[feed][-1]

    def append(self, links: dict[int, str | None]) -> None:
        """One step: each feed of `links` appends after its tip and its chosen link."""
        for feed, other in links.items():
            own = self.names[feed]
            after = tuple(link for link in (self.tip(feed), other) if link)
            name = f"{feed:04d}.{len(own):06d}"
            own.append(name)
            self.generated.append(Event(feed, name, after))


def _check_feeds(feeds: int) -> None:
    if feeds < 2:
        raise ValueError("the paper's tangles need at least two feeds")


def _lowest(logs: _Logs, candidates: list[int], rng: random.Random) -> int:
    return min(candidates)


def _most_events(logs: _Logs, candidates: list[int], rng: random.Random) -> int:
    most = max(len(logs.names[other]) for other in candidates)
    longest = [other for other in candidates if len(logs.names[other]) == most]
    return longest[0] if len(longest) == 1 else rng.choice(longest)


def _at_random(logs: _Logs, candidates: list[int], rng: random.Random) -> int:
    return rng.choice(candidates)


_Tie = Callable[[_Logs, list[int], random.Random], int]


def _by_rank(
    logs: _Logs, previous: tuple[int, ...], feed: int, rng: random.Random, tie: _Tie
) -> int | None:
    """The previous step's feeds (the top-rank tips) other than `feed`; `tie` picks of two."""
    candidates = [other for other in previous if other != feed]
    if len(candidates) < 2:
        return candidates[0] if candidates else None
    return tie(logs, candidates, rng)


def longest_by_rank(
    events: int, feeds: int, rng: random.Random, tie: _Tie = _lowest
) -> list[Event]:
    """The paper's generator, "longest" read as the tip of highest rank (module docstring)."""
    _check_feeds(feeds)
    return _rank_steps(events, feeds, rng, lambda: tuple(rng.sample(range(feeds), 2)), tie)


def active_lurkers(events: int, feeds: int, rng: random.Random) -> list[Event]:
    """The paper's to-do scenario: 32 active feeds, 512 lurkers (module docstring)."""
    del feeds  # the scenario fixes its width

    def pick(taken: int | None = None) -> int:
        while True:
            if rng.random() < LURKER_SHARE:
                feed = ACTIVE_FEEDS + rng.randrange(LURKERS)
            else:
                feed = rng.randrange(ACTIVE_FEEDS)
            if feed != taken:
                return feed

    def pair() -> tuple[int, int]:
        first = pick()
        return first, pick(first)

    return _rank_steps(events, ACTIVE_FEEDS + LURKERS, rng, pair, _lowest)


def _rank_steps(
    events: int,
    feeds: int,
    rng: random.Random,
    pair: Callable[[], tuple[int, ...]],
    tie: _Tie,
) -> list[Event]:
    logs = _Logs(feeds)
    previous: tuple[int, ...] = ()
    while len(logs.generated) < events:
        step = pair()
        logs.append({feed: logs.tip(_by_rank(logs, previous, feed, rng, tie)) for feed in step})
        previous = step
    return logs.generated[:events]


def longest_by_count(events: int, feeds: int, rng: random.Random) -> list[Event]:
    """The first reading: "longest" as the other feed with the most events."""
    _check_feeds(feeds)
    logs = _Logs(feeds)
    while len(logs.generated) < events:
        pair = rng.sample(range(feeds), 2)
        ranked = sorted(range(feeds), key=lambda feed: (-len(logs.names[feed]), feed))
        links = {}
        for feed in pair:
            longest = ranked[0] if ranked[0] != feed else ranked[1]
            links[feed] = logs.tip(longest)
        logs.append(links)
    return logs.generated[:events]


GENERATORS: dict[str, Callable[[int, int, random.Random], list[Event]]] = {
    "longest-by-rank": longest_by_rank,
    "longest-by-rank-then-count": partial(longest_by_rank, tie=_most_events),
    "longest-by-rank-random": partial(longest_by_rank, tie=_at_random),
    "longest-by-count": longest_by_count,
    "active-lurkers": active_lurkers,
}
DEFAULT_GENERATOR = "longest-by-rank"


def paper_tangle(
    events: int, feeds: int, rng: random.Random, generator: str = DEFAULT_GENERATOR
) -> list[Event]:
    """`events` events over `feeds` feeds (at least 2), in generation order."""
    return GENERATORS[generator](events, feeds, rng)


def random_feed(events: list[Event], rng: random.Random) -> list[Event]:
    """Deliver feed by feed in random interleaving, each feed in its own order."""
    queues: dict[int, list[Event]] = {}
    for event in events:
        queues.setdefault(event.feed, []).append(event)
    for queue in queues.values():
        queue.reverse()
    live = list(queues)
    delivered: list[Event] = []
    while live:
        index = rng.randrange(len(live))
        queue = queues[live[index]]
        delivered.append(queue.pop())
        if not queue:
            live[index] = live[-1]
            live.pop()
    return delivered


def in_order(events: list[Event], rng: random.Random) -> list[Event]:
    return list(events)


DELIVERY = {"random-feed": random_feed, "in-order": in_order}
