"""The time window over a stored causal-time timeline, from the time index.

Theory of operation
-------------------
The window [from, to] (claimed times, ms, both ends included) is answered
from `ct-time` (number + time + sort id -> ref number), never by reading the
timeline: the index gives the members whose claimed time is inside, in
time order, with the ref numbers (storage.engine.ref_numbers) their rows
are keyed by, so no ref is looked up. Two modes (docs/TIMELINES.md, "The time window"):

- *implied* (the default): the slice of the stored causal-time order from
  the first to the last position held by a member whose time is inside.
  A message whose claimed time lies outside but that causality places
  between two inside messages (an ancestor of one and a descendant of
  another, or sorted between them) appears: causality resolves what lies
  between, then the ends are trimmed. The slice is a stretch of the stored
  order, so its positions are the timeline's own and the commands of the
  log apply to it. Cost: the inside members' positions (one tree path
  each) and the slice.
- *strict*: only the members whose time is inside, in the causal-time
  order of that set alone: links leaving the set dangle (ignored).
  The edges inside come from the base timeline's successor rows. Cost: the
  inside members and their successor lists, and a heap.

A window holding more than `MAX_WINDOW` members is refused (`WindowTooLarge`):
narrow it. Both answers are paged by (start, limit) within the window.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

from tanglenode.storage.engine.causal_key import MAX_TIME, decode_tree_key, row_tree_key
from tanglenode.storage.engine.keys import U32, U64, timeline_label
from tanglenode.storage.engine.timeline import TimelineTables, lookup_meta, order_tree
from tanglenode.storage.errors import StoreDamaged, TimelineError, UnknownTimeline

if TYPE_CHECKING:
    from tanglenode.storage.engine.txn import Txn

WINDOW_MODES = ("implied", "strict")
MAX_WINDOW = 100_000


class WindowTooLarge(TimelineError):
    """More members have a time inside the window than one answer may sort."""


def window(
    txn: Txn,
    tables: TimelineTables,
    name: bytes,
    from_time: int,
    to_time: int,
    mode: str = "implied",
    start: int = 0,
    limit: int | None = None,
) -> tuple[int | None, list[tuple[int, bytes]]]:
    """(position of the first entry or None for strict, [(time, sort id)...]) of the window
    over causal-time timeline `name`, entries start..start+limit-1 of it."""
    if mode not in WINDOW_MODES:
        raise ValueError(f"window: {'|'.join(WINDOW_MODES)}")
    if not 0 <= from_time <= to_time <= MAX_TIME:
        raise ValueError("a window needs 0 <= from <= to < 2**64")
    meta = lookup_meta(txn, tables, name)
    if meta is None:
        raise UnknownTimeline(f"no timeline {timeline_label(name)}")
    prefix = U32.pack(meta.number)
    inside = _inside(txn, tables, prefix, from_time, to_time)
    stop = None if limit is None else start + limit
    if mode == "strict":
        base_number = txn.get(name[1:], db=tables.names)
        if base_number is None:
            raise StoreDamaged(f"causal-time timeline {timeline_label(name)} has no base timeline")
        return None, _strict(txn, tables, base_number, inside)[start:stop]
    if not inside:
        return None, []
    tree = order_tree(txn, tables, meta)
    # a row leaves the sort id out only when it is the ref itself: the sort id stands in
    positions = [
        tree.position(row_tree_key(txn.get(prefix + number, db=tables.causal_nodes), sort_id))  # type: ignore[arg-type]  # a member's row
        for _time, sort_id, number in inside
    ]
    first, last = min(positions), max(positions)
    begin = first + start
    end = last + 1 if stop is None else min(last + 1, first + stop)
    if begin >= end:
        return begin, []
    return begin, [decode_tree_key(key) for key in tree.slice(begin, end)]


def _inside(
    txn: Txn, tables: TimelineTables, prefix: bytes, from_time: int, to_time: int
) -> list[tuple[int, bytes, bytes]]:
    """(time, sort id, ref number) of the members whose time is in [from, to], in time order."""
    cursor = txn.cursor(db=tables.causal_times)
    found: list[tuple[int, bytes, bytes]] = []
    if not cursor.set_range(prefix + U64.pack(from_time)):
        return found
    for key, number in cursor:
        if key[:4] != prefix:
            break
        time = U64.unpack(key[4:12])[0]
        if time > to_time:
            break
        if len(found) >= MAX_WINDOW:
            raise WindowTooLarge(f"more than {MAX_WINDOW} messages in the window: narrow it")
        found.append((time, bytes(key[12:]), bytes(number)))
    return found


def _strict(
    txn: Txn, tables: TimelineTables, base_prefix: bytes, inside: list[tuple[int, bytes, bytes]]
) -> list[tuple[int, bytes]]:
    """The causal-time order of `inside` alone (Kahn, smallest (time, sort id) first); refs
    are ref numbers, as `tl-succ` holds them."""
    by_ref = {ref: (time, sort_id) for time, sort_id, ref in inside}
    waiting = dict.fromkeys(by_ref, 0)
    followers: dict[bytes, list[bytes]] = {}
    cursor = txn.cursor(db=tables.succ)
    for ref in by_ref:
        if cursor.set_key(base_prefix + ref):
            inner = [bytes(s) for s in cursor.iternext_dup() if bytes(s) in by_ref]
            followers[ref] = inner
            for successor in inner:
                waiting[successor] += 1
    ready = [(*by_ref[ref], ref) for ref, count in waiting.items() if count == 0]
    heapq.heapify(ready)
    order: list[tuple[int, bytes]] = []
    while ready:
        time, sort_id, ref = heapq.heappop(ready)
        order.append((time, sort_id))
        for successor in followers.get(ref, ()):
            waiting[successor] -= 1
            if waiting[successor] == 0:
                heapq.heappush(ready, (*by_ref[successor], successor))
    return order
