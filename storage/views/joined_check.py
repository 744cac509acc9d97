"""`tangled check`'s tangle part: the joined views recomputed from the messages alone.

From the stored messages, `recompute` runs the joining recipe on every tangle
(the root, then each member whose `previous` are all in the graph, until
nothing more joins) and derives what storage.views.joined and storage.views.tangles
should hold: each member's state row, the waiting rows, the tips, each
tangle's count of joined members, and the joined timeline's order (where the
store keeps it), sorted by (rank, id) as every timeline is.
`check_tangles` compares them with the store and reports each kind of
disagreement as one line. In memory, proportional to the store: an offline
check.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from tanglenode.protocol.message import Message
from tanglenode.storage.engine.timeline import TimelineTables
from tanglenode.storage.engine.timeline_reader import TimelineReader
from tanglenode.storage.feeds.layout import U32, tangle_key
from tanglenode.storage.views.joined import joined_timeline, state_row, state_rows
from tanglenode.storage.views.tangles import TangleTables

_JOINED_ROW = b"j"
_ID = 32


@dataclass
class Expected:
    """What the tangle tables and joined timelines should hold."""

    states: dict[bytes, bytes] = field(default_factory=dict)  # tangle key + id -> row
    pending: set[bytes] = field(default_factory=set)  # tangle-pending keys
    tips: set[tuple[bytes, bytes]] = field(default_factory=set)  # (tangle key, id)
    orders: dict[bytes, list[tuple[int, bytes]]] = field(default_factory=dict)  # key -> entries


def recompute(messages: list[Message]) -> Expected:
    """The rows the joining recipe gives for this set of stored messages."""
    stored = {message.id for message in messages}
    members: dict[bytes, dict[bytes, tuple[bytes, ...] | None]] = defaultdict(dict)
    for message in messages:
        for name, link in message.tangles.items():
            key = tangle_key(message.tangle_root(name), name)
            members[key][message.id] = None if link.is_root else tuple(link.previous or ())
    expected = Expected()
    for key, tangle in members.items():
        _recompute_tangle(key, tangle, stored, expected)
    return expected


def _recompute_tangle(key: bytes, tangle, stored: set[bytes], expected: Expected) -> None:
    root = key[:32]
    rank: dict[bytes, int] = {}
    if root in tangle:
        rank[root] = 0
    grown = True
    while grown:  # the recipe: add every candidate whose previous are all in the graph
        grown = False
        for member, previous in tangle.items():
            if member not in rank and previous and all(p in rank for p in previous):
                rank[member] = 1 + max(rank[p] for p in previous)
                grown = True
    named = {p for member in rank for p in tangle[member] or ()}
    expected.tips.update((key, member) for member in rank if member not in named)
    expected.orders[key] = sorted((r, member) for member, r in rank.items())
    for member, previous in tangle.items():
        if member in rank:
            expected.states[key + member] = _JOINED_ROW
            continue
        previous = previous or ()
        if root in stored and root not in tangle:
            kind = b"r"
        elif any(p in stored and p not in tangle for p in previous):
            kind = b"o"
        else:
            kind = b"p"
        waiting = [p for p in previous if p not in rank]
        expected.pending.update(p + key + member for p in waiting)
        expected.states[key + member] = state_row(kind, len(waiting), previous)


def check_tangles(
    txn,
    tables: TangleTables,
    timeline_tables: TimelineTables,
    messages,
    problems: list,
    *,
    orders: bool = True,
) -> None:
    """Append one line per kind of disagreement between the store and `recompute`; the
    joined orders' timelines too where the store keeps them (`orders`)."""
    reader = TimelineReader(txn, timeline_tables)
    expected = recompute(messages)
    states = dict(state_rows(txn, tables))  # by tangle key + id, as `recompute` gives them
    pending = {bytes(k) for k in txn.cursor(db=tables.tangle_pending).iternext(values=False)}
    tips = {(bytes(k), bytes(v)) for k, v in txn.cursor(db=tables.tangle_tips)}
    counts = {(bytes(k), U32.unpack(v)[0]) for k, v in txn.cursor(db=tables.tangle_joined)}
    joined = Counter(row[:-_ID] for row, state in expected.states.items() if state == _JOINED_ROW)
    for what, found, wanted in (
        ("tangle-state", set(states.items()), set(expected.states.items())),
        ("tangle-pending", pending, expected.pending),
        ("tangle-tips", tips, expected.tips),
        ("tangle-joined", counts, set(joined.items())),
    ):
        if found != wanted:
            problems.append(
                f"{what} differs from the messages: {len(found - wanted)} extra, "
                f"{len(wanted - found)} missing"
            )
    if not orders:
        return
    wrong = 0
    for key, order in expected.orders.items():
        name = joined_timeline(key)
        found_order = reader.entries(name) if reader.exists(name) else []
        wrong += found_order != order
    cursor = txn.cursor(db=timeline_tables.names)
    if cursor.set_range(b"\x02"):
        for name in cursor.iternext(values=False):
            if name[:1] != b"\x02":
                break
            wrong += bytes(name[1:]) not in expected.orders and bool(reader.entries(bytes(name)))
    if wrong:
        problems.append(f"{wrong} joined views differ from the recipe run on the messages")
