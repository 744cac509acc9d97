"""The causal-time order: causality first, then the smallest (claimed time, id).

Kahn's algorithm with a priority queue: an event becomes ready once every
one of its links that is present has been placed; among the ready events the
one with the smallest (time, id) goes next. Links to absent events are
ignored, so an event whose links are all missing is ready at once.
Times and ids compare as given (strings compare by code point, which is the
order of their UTF-8 bytes).
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Iterable, Sequence
from typing import Any


def causal_time_order(
    events: Iterable[tuple[Hashable, Sequence[Hashable], Any]],
) -> list[Hashable]:
    """Order `(id, links, time)` events; ids must be unique and the links acyclic."""
    links_of: dict[Hashable, list[Hashable]] = {}
    time_of: dict[Hashable, Any] = {}
    for event_id, links, time in events:
        links_of[event_id] = list(dict.fromkeys(links))
        time_of[event_id] = time
    waiting: dict[Hashable, int] = {}
    followers: dict[Hashable, list[Hashable]] = {}
    ready: list[tuple[Any, Hashable]] = []
    for event_id, links in links_of.items():
        present = [link for link in links if link in links_of]
        waiting[event_id] = len(present)
        for link in present:
            followers.setdefault(link, []).append(event_id)
        if not present:
            heapq.heappush(ready, (time_of[event_id], event_id))
    order: list[Hashable] = []
    while ready:
        _time, event_id = heapq.heappop(ready)
        order.append(event_id)
        for follower in followers.get(event_id, ()):
            waiting[follower] -= 1
            if waiting[follower] == 0:
                heapq.heappush(ready, (time_of[follower], follower))
    if len(order) != len(links_of):
        raise ValueError("the links form a cycle")
    return order
