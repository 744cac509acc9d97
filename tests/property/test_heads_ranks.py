"""Hypothesis: naming only the heads leaves every final rank and order unchanged
(docs/PROCESSING.md, "What a timeframe names: the heads").

One history of who processed what, written twice: once with each message's
timeframe the author's whole processed frontier (format 1's rule, the
oracle), once with only the heads of what the author processed (the
processed messages no processed message names, own feed left out). With
every message present, the spacetime's ranks, its (rank, id) order and
causal-time order are the same for both, message for message.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tanglenode.storage.engine.causal_time import causal_time_order
from tests.timeline_oracle import rank_order, ranks

Event = tuple[int, int]  # (author, seq): a message of the history, its label in both worlds


@st.composite
def histories(draw):
    """Steps of (author, [events it processes first]), then writes: a causal history in
    which each author processes, in causal order, what others wrote, then writes."""
    authors = draw(st.integers(2, 6))
    written: list[Event] = []
    processed: list[list[Event]] = [[] for _ in range(authors)]  # in processing order
    steps: list[tuple[Event, list[Event]]] = []
    deps: dict[Event, set[Event]] = {}  # an event's full closure (what its author processed)
    for _ in range(draw(st.integers(1, 40))):
        author = draw(st.integers(0, authors - 1))
        mine = set(processed[author])
        newly: list[Event] = []
        for event in written:  # in writing order, so causal order holds
            if event not in mine and deps[event] <= mine and draw(st.booleans()):
                mine.add(event)
                newly.append(event)
        processed[author].extend(newly)
        seq = 1 + sum(1 for a, _s in written if a == author)
        event = (author, seq)
        deps[event] = set(mine)
        written.append(event)
        processed[author].append(event)
        steps.append((event, list(processed[author][:-1])))
    return steps


def label(event: Event) -> bytes:
    return bytes([event[0]]) + event[1].to_bytes(4, "big")


def full_links(event: Event, seen: list[Event]) -> list[Event]:
    """Format 1: prev, and each other feed's highest processed message."""
    author, seq = event
    frontier: dict[int, int] = {}
    for a, s in seen:
        frontier[a] = max(frontier.get(a, 0), s)
    links = [(a, s) for a, s in frontier.items() if a != author]
    return links + ([(author, seq - 1)] if seq > 1 else [])


def head_links(event: Event, seen: list[Event], links_of: dict[Event, list[Event]]) -> list[Event]:
    """Format 2: prev, and the heads of what was processed (not named by anything processed)."""
    author, seq = event
    named = {link for other in seen for link in links_of[other]}
    heads = [e for e in seen if e not in named and e[0] != author]
    return heads + ([(author, seq - 1)] if seq > 1 else [])


@settings(max_examples=300, deadline=None)
@given(histories())
def test_heads_give_the_ranks_and_orders_of_the_whole_frontier(steps):
    full: dict[Event, list[Event]] = {}
    heads: dict[Event, list[Event]] = {}
    for event, seen in steps:
        full[event] = full_links(event, seen)
        heads[event] = head_links(event, seen, heads)
        assert set(heads[event]) <= {*full_links(event, seen), *seen}
    for world in (full, heads):
        assert all(link in world for links in world.values() for link in links)
    events_full = [(label(e), [label(x) for x in links]) for e, links in full.items()]
    events_heads = [(label(e), [label(x) for x in links]) for e, links in heads.items()]
    assert ranks(events_heads) == ranks(events_full)
    assert rank_order(events_heads) == rank_order(events_full)
    time = {label(event): (index * 7919) % 101 for index, (event, _s) in enumerate(steps)}
    assert causal_time_order((e, links, time[e]) for e, links in events_heads) == causal_time_order(
        (e, links, time[e]) for e, links in events_full
    )
    # and the heads are never more than the frontier: what a message names only shrinks
    assert all(len(heads[e]) <= len(full[e]) for e in full)
