"""The replication scope: which feeds this node carries, and why.

Theory of operation
-------------------
A node carries its own feed, the feeds it follows within `hops` (1: those
it follows; 2: and those they follow, read from the contact messages on
the followed feeds, storage/views/contacts.py; and so on), the members of
every private group it is in (handed in by the caller, which holds the
keys: node/scope_keeper.py), and nothing else. A feed it blocks is never
carried, whoever follows it. `hops = None` ("all") carries every feed but
the blocked ones: today's open replication, for the tests and the demo.

`compute_scope` reads the graph breadth first, each hop's feeds in key
order, so two nodes with the same messages, the same `hops` and the same
groups compute the same scope; at most `MAX_SCOPE_FEEDS` feeds are
carried (the nearest first), so a followed feed that follows a million
others costs a bounded read.

The scope the node last chose is kept in the store, in the transaction
that chose it (`Writes.set_scope`, storage/writes.py), so the causal
processor, the gossip sessions, `tangled scope` and a stopped node's CLI
read one answer:

    scope     feed -> msgpack [why, hop, via]   why: "ours", "followed", "hop",
                                                "group", "blocked"; via: the
                                                followed feed or the group
    meta "scope-hops" -> "all" or the number of hops

A store whose node never chose a scope (no `scope-hops` row) carries every
feed. The causal processor counts a timeframe entry naming a feed the node
does not carry as met (docs/PROCESSING.md, "Scope"): a node must never
stall waiting for what it chose not to carry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tanglenode.protocol.contacts import Stance
from tanglenode.storage.feeds.invalidation import invalid_feeds
from tanglenode.storage.feeds.scope_table import (
    BLOCKED,
    FOLLOWED,
    GROUP,
    HOP,
    OURS,
    SCOPE_HOPS,
    Why,
    carried_in,
)
from tanglenode.storage.views.contacts import stances_of

MAX_SCOPE_FEEDS = 20_000  # feeds carried at most (as many as a peer's clock may name)
__all__ = ["BLOCKED", "FOLLOWED", "GROUP", "HOP", "OURS", "Scope", "Why", "carried_in"]


@dataclass(frozen=True, slots=True)
class Scope:
    """The feeds a node carries: `feeds` (each with why), unless `hops` is None (every
    feed); never a `blocked` one."""

    hops: int | None
    feeds: Mapping[bytes, Why] = field(default_factory=dict)
    blocked: frozenset[bytes] = frozenset()

    def carries(self, feed: bytes) -> bool:
        if feed in self.blocked:
            return False
        return self.hops is None or feed in self.feeds

    def rows(self) -> dict[bytes, bytes]:
        """The `scope` table's rows for this scope."""
        rows = {feed: why.encode() for feed, why in self.feeds.items()}
        rows.update({feed: Why(BLOCKED).encode() for feed in self.blocked})
        return rows


EVERY_FEED = Scope(None)  # a store whose node never chose: carries every feed


def compute_scope(
    txn: Any,
    tables: Any,
    me: bytes,
    hops: int | None,
    groups: Mapping[bytes, bytes] | None = None,
) -> Scope:
    """The scope of node `me` with `hops` (None: all) and `groups` (member feed -> the group
    it is in with us), from the contact messages the store holds (see the module docstring).
    With `hops` None the follows are still read, one hop deep, to say why a feed is in."""
    boundaries = invalid_feeds(txn, tables)

    def stances(feed: bytes) -> dict[bytes, Stance]:
        return stances_of(txn, tables.contacts, feed, boundaries.get(feed))

    mine = stances(me)
    # A node never blocks itself, whatever its feed says (it would purge its own feed).
    blocked = frozenset(c for c, stance in mine.items() if stance.blocking and c != me)
    feeds: dict[bytes, Why] = {me: Why(OURS)}
    frontier = [me]
    depth = 1 if hops is None else hops
    for hop in range(1, depth + 1):
        reached = []
        for feed in frontier:
            followed = mine if feed == me else stances(feed)
            for contact in sorted(followed):
                if len(feeds) >= MAX_SCOPE_FEEDS:
                    break
                if followed[contact].follows and contact not in feeds and contact not in blocked:
                    feeds[contact] = Why(
                        FOLLOWED if hop == 1 else HOP, hop, None if hop == 1 else feed
                    )
                    reached.append(contact)
        frontier = reached
    for member, group in sorted((groups or {}).items()):
        if member not in feeds and member not in blocked and len(feeds) < MAX_SCOPE_FEEDS:
            feeds[member] = Why(GROUP, 0, group)
    return Scope(hops, feeds, blocked)


def read_scope(txn: Any, tables: Any) -> Scope:
    """The scope the store's node last chose (`EVERY_FEED` if it never chose one)."""
    raw = txn.get(SCOPE_HOPS, db=tables.meta)
    if raw is None:
        return EVERY_FEED
    hops = None if bytes(raw) == b"all" else int(raw)
    feeds: dict[bytes, Why] = {}
    blocked = set()
    for key, value in txn.cursor(db=tables.scope):
        why = Why.decode(bytes(value))
        if why.why == BLOCKED:
            blocked.add(bytes(key))
        else:
            feeds[bytes(key)] = why
    return Scope(hops, feeds, frozenset(blocked))


def write_scope(txn: Any, tables: Any, scope: Scope) -> bool:
    """Keep `scope` as the node's choice; False (and nothing written) if it is kept already."""
    hops = b"all" if scope.hops is None else str(scope.hops).encode()
    rows = scope.rows()
    stored = {bytes(key): bytes(value) for key, value in txn.cursor(db=tables.scope)}
    if txn.get(SCOPE_HOPS, db=tables.meta) == hops and stored == rows:
        return False
    for key in stored.keys() - rows.keys():
        txn.delete(key, db=tables.scope)
    for key, value in rows.items():
        if stored.get(key) != value:
            txn.put(key, value, db=tables.scope)
    txn.put(SCOPE_HOPS, hops, db=tables.meta)
    return True
