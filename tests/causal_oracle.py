"""From-scratch oracles for the causal-time order (storage.engine.causal_key,
storage.engine.causal_time)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tanglenode.storage.engine.causal_key import (
    MAX_CHAIN,
    element,
    extend,
    is_cut,
    root_chain,
    tree_key,
)
from tanglenode.storage.engine.causal_time import causal_time_order

Event = tuple[bytes, Sequence[bytes], int]  # id, links, time


def causal_keys(events: Iterable[Event], limit: int = MAX_CHAIN) -> tuple[dict, bool]:
    """Tree keys computed from scratch over the present events, and whether any was cut."""
    events = list(events)
    by_id = {event_id: (links, time) for event_id, links, time in events}
    chains: dict[bytes, bytes] = {}
    heights: dict[bytes, int] = {}
    keys: dict[bytes, bytes] = {}
    cut = False
    for event_id in causal_time_order(events):  # a topological order of the present events
        links, time = by_id[event_id]
        elem = element(time, event_id)
        present = [link for link in links if link in chains]
        offered = [extend(chains[link], elem, limit) for link in present]
        chains[event_id] = max(offered) if offered else root_chain(elem)
        heights[event_id] = 1 + max((heights[link] for link in present), default=-1)
        keys[event_id] = tree_key(chains[event_id], heights[event_id], elem)
        cut = cut or is_cut(chains[event_id])
    return keys, cut


def causal_oracle(events: Iterable[Event], limit: int = MAX_CHAIN) -> list[bytes]:
    """The order the engine must hold: the causal-time order whenever no key is cut (asserted)."""
    events = list(events)
    keys, cut = causal_keys(events, limit)
    order = sorted(keys, key=keys.__getitem__)
    if not cut:
        assert order == causal_time_order(events)
    return order
