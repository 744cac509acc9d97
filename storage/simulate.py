"""Synthetic tangles like those of the ScuttleSort paper's evaluation
(docs/PIPELINE.md, "evaluate"), for tests and benchmarks.

At each step two distinct feeds, picked at random, each append one event that
links its own previous event and the tip of the longest other feed (as the
feeds stood before the step). Delivery models:

- `in_order`: events in the order they were generated;
- `random_feed`: each round picks a feed at random among those with events
  left and delivers its next one, so feeds stay in order but are interleaved
  arbitrarily and most cross-links point at events not yet delivered.

Event names are `FFFF.SSSSSS` (feed, seq), so they sort like the paper's.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Event:
    feed: int
    name: str
    after: tuple[str, ...]


def paper_tangle(events: int, feeds: int, rng: random.Random) -> list[Event]:
    """`events` events over `feeds` feeds (at least 2), in generation order."""
    if feeds < 2:
        raise ValueError("the paper's tangles need at least two feeds")
    logs: list[list[str]] = [[] for _ in range(feeds)]
    generated: list[Event] = []
    while len(generated) < events:
        pair = rng.sample(range(feeds), 2)
        ranked = sorted(range(feeds), key=lambda feed: (-len(logs[feed]), feed))
        tips = {}
        for feed in pair:
            longest = ranked[0] if ranked[0] != feed else ranked[1]
            tips[feed] = logs[longest][-1] if logs[longest] else None
        for feed in pair:
            after = tuple(
                link for link in (logs[feed][-1] if logs[feed] else None, tips[feed]) if link
            )
            name = f"{feed:04d}.{len(logs[feed]):06d}"
            logs[feed].append(name)
            generated.append(Event(feed, name, after))
    return generated[:events]


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
