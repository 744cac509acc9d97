"""The replication scope: which feeds this node carries, and why.

Theory of operation
-------------------
A node carries its own feed, the feeds it follows within `hops` (1: those
it follows; 2: and those they follow, read from the contact messages on
the followed feeds, storage/views/contacts.py; and so on), the members of
every private group it is in (handed in by the caller, which holds the
keys, through storage/groups/listing.py: the node's
`StoreService.refresh_scope`, which `StoreService.keep_scope` runs
whenever a contact or group message is stored, node/service/store_service.py; and our
own follow, block and the others at once, node/ipc/scope.py), and nothing
else. A feed it blocks is never carried, whoever follows it. `hops = None`
("all") carries every feed but the blocked ones: today's open replication,
for the tests and the demo.

At most `MAX_SCOPE_FEEDS` feeds are carried (as many as a peer's clock may
name, protocol/gossip.py), and no feed we did not choose can take that
room from the others. `compute_scope` fills it in this order, each step
only with what the earlier left:

1. our own feed;
2. hop 1, the feeds we follow, in key order: our own choice, so never
   bounded but by the cap (past it the rest are left out, by key order);
3. our groups' members, in turns across the groups (below);
4. each further hop, in turns across its *introducers*: the feeds reached
   at the hop before, in key order, each offering the feeds it follows
   that are not carried yet, in key order.

*In turns* is a round robin: each introducer in order offers its next feed
not carried (nor blocked) yet, and the round goes on until the cap is
reached or none has any left. Each therefore gets an equal share of the
room, and a share one leaves unused goes to the others: a followed feed
that follows 20,500 others gets the room the rest do not need, never
theirs, and steps 1 to 3 are done before any of it, so it can never push
out our own choices or our groups' members. Of each introducer at most
`MAX_FOLLOWS_READ` contacts are read (its first, in key order, whatever it
says of them): a feed that names more is one introducer like any other,
its feeds past the bound unread.

What was left out is part of the scope (`Scope.left_out`): for each
introducer (our feed for hop 1, a group for its members) that lost
feeds, how many it offered that the cap left out (reason `cap`) and
whether it names more than are read (reason `bound`). `tangled scope`
and the IPC `scope` op show it.

Everything is read in one transaction in key order, so two nodes with the
same messages, the same `hops` and the same groups compute the same scope.
The cost is bounded per introducer: each of its contacts is read at most
once and at most `MAX_FOLLOWS_READ` of them, lazily in turns (a cursor per
introducer), then the rest up to the bound to count what was left out.

The scope the node last chose is kept in the store, in the transaction
that chose it (`Writes.set_scope`, storage/writes.py), so the causal
processor, the gossip sessions, `tangled scope` and a stopped node's CLI
read one answer (storage/feeds/scope_table.py):

    scope     feed -> msgpack [why, hop, via]   why: "ours", "followed", "hop",
                                                "group", "blocked"; via: the
                                                followed feed or the group
              "left-out:" + via -> msgpack [hop, count, unread]
    meta "scope-hops" -> "all" or the number of hops

A store whose node never chose a scope (no `scope-hops` row) carries every
feed. The causal processor counts a timeframe entry naming a feed the node
does not carry as met (docs/PROCESSING.md, "Scope"): a node must never
stall waiting for what it chose not to carry.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from tanglenode.protocol.contacts import Stance
from tanglenode.protocol.identity import KEY_BYTES
from tanglenode.storage.feeds.invalidation import invalid_feeds
from tanglenode.storage.feeds.scope_table import (
    BLOCKED,
    BOUND,
    CAP,
    FOLLOWED,
    GROUP,
    HOP,
    LEFT_OUT,
    OURS,
    SCOPE_HOPS,
    LeftOut,
    Why,
    carried_in,
    left_out_key,
)
from tanglenode.storage.views.contacts import contact_stances, stances_of

MAX_SCOPE_FEEDS = 20_000  # feeds carried at most (as many as a peer's clock may name)
MAX_FOLLOWS_READ = 5_000  # contacts read of one introducer at most (its first, key order)
__all__ = [
    "BLOCKED",
    "BOUND",
    "CAP",
    "FOLLOWED",
    "GROUP",
    "HOP",
    "OURS",
    "LeftOut",
    "Scope",
    "ScopeLimits",
    "Why",
    "carried_in",
]


@dataclass(frozen=True, slots=True)
class ScopeLimits:
    """The scope's two bounds (tests choose smaller ones to build less)."""

    feeds: int = MAX_SCOPE_FEEDS  # carried at most, ours included
    follows_read: int = MAX_FOLLOWS_READ  # contacts read of one introducer at most


LIMITS = ScopeLimits()  # the node's


@dataclass(frozen=True, slots=True)
class Scope:
    """The feeds a node carries: `feeds` (each with why), unless `hops` is None (every
    feed); never a `blocked` one. `left_out`: introducer (a feed, or a group) -> what the
    bounds left out of the feeds it offered."""

    hops: int | None
    feeds: Mapping[bytes, Why] = field(default_factory=dict)
    blocked: frozenset[bytes] = frozenset()
    left_out: Mapping[bytes, LeftOut] = field(default_factory=dict)

    def carries(self, feed: bytes) -> bool:
        if feed in self.blocked:
            return False
        return self.hops is None or feed in self.feeds

    def rows(self) -> dict[bytes, bytes]:
        """The `scope` table's rows for this scope."""
        rows = {feed: why.encode() for feed, why in self.feeds.items()}
        rows.update({feed: Why(BLOCKED).encode() for feed in self.blocked})
        rows.update({left_out_key(via): left.encode() for via, left in self.left_out.items()})
        return rows


EVERY_FEED = Scope(None)  # a store whose node never chose: carries every feed


class _Offer:
    """The feeds one introducer (`via`) offers the scope at `hop`, in key order, read as
    they are asked for: those a feed follows (of its first `bound` contacts; `unread` once
    it names more), or a group's members."""

    def __init__(self, via: bytes, hop: int, feeds: Iterable[bytes]) -> None:
        self.via = via
        self.hop = hop
        self.unread = False
        self._feeds = iter(feeds)

    @classmethod
    def follows(
        cls,
        via: bytes,
        hop: int,
        stances: Iterable[tuple[bytes, Stance]],
        bound: int | None,
    ) -> _Offer:
        offer = cls(via, hop, ())
        offer._feeds = offer._followed(stances, bound)
        return offer

    def _followed(
        self, stances: Iterable[tuple[bytes, Stance]], bound: int | None
    ) -> Iterator[bytes]:
        for read, (contact, stance) in enumerate(stances):
            if bound is not None and read == bound:
                self.unread = True
                return
            if stance.follows:
                yield contact

    def next_new(self, taken: Callable[[bytes], bool]) -> bytes | None:
        """Its next feed not `taken` yet (None: it has no more)."""
        return next((feed for feed in self._feeds if not taken(feed)), None)

    def left_out(self, taken: Callable[[bytes], bool]) -> LeftOut | None:
        """What the bounds left out of its feeds, once the scope is filled: the rest it
        offers not `taken` (read now, up to the bound), and whether it names more."""
        count = sum(1 for feed in self._feeds if not taken(feed))
        return LeftOut(self.hop, count, self.unread) if count or self.unread else None


class _Filling:
    """The scope as `compute_scope` fills it, up to `cap` feeds, never a `blocked` one."""

    def __init__(self, cap: int, blocked: frozenset[bytes]) -> None:
        self.cap = cap
        self.blocked = blocked
        self.feeds: dict[bytes, Why] = {}
        self.left_out: dict[bytes, LeftOut] = {}

    def taken(self, feed: bytes) -> bool:
        """Carried already, or blocked: no introducer offers it again."""
        return feed in self.feeds or feed in self.blocked

    def in_turns(self, offers: list[_Offer], why: Callable[[_Offer], Why]) -> list[bytes]:
        """Fill the room left from `offers` in a round robin (the module docstring): each in
        order gives its next feed not taken, until the cap is reached or none has any left;
        then note what each had left. The feeds added, in the order added."""
        added = []
        turns = deque(offers)
        while turns and len(self.feeds) < self.cap:
            offer = turns.popleft()
            feed = offer.next_new(self.taken)
            if feed is not None:
                self.feeds[feed] = why(offer)
                added.append(feed)
                turns.append(offer)
        for offer in offers:
            left = offer.left_out(self.taken)
            if left is not None:
                self.left_out[offer.via] = left
        return added


def compute_scope(
    txn: Any,
    tables: Any,
    contacts: Any,
    me: bytes,
    hops: int | None,
    groups: Mapping[bytes, bytes] | None = None,
    limits: ScopeLimits = LIMITS,
) -> Scope:
    """The scope of node `me` with `hops` (None: all) and `groups` (member feed -> the group
    it is in with us), from the contact messages the store holds (see the module docstring).
    With `hops` None the follows are still read, one hop deep, to say why a feed is in (and
    nothing is left out: every feed is carried)."""
    boundaries = invalid_feeds(txn, tables)

    def follows_of(feed: bytes, hop: int) -> _Offer:
        stances = contact_stances(txn, contacts, feed, boundaries.get(feed))
        return _Offer.follows(feed, hop, stances, limits.follows_read)

    mine = stances_of(txn, contacts, me, boundaries.get(me))
    # A node never blocks itself, whatever its feed says (it would purge its own feed).
    blocked = frozenset(c for c, stance in mine.items() if stance.blocking and c != me)
    filling = _Filling(limits.feeds, blocked)
    filling.feeds[me] = Why(OURS)
    depth = 1 if hops is None else hops
    reached: list[bytes] = []
    if depth >= 1:  # hop 1: our own choice, bounded only by the cap
        ours = _Offer.follows(me, 1, sorted(mine.items()), None)
        reached = filling.in_turns([ours], lambda _offer: Why(FOLLOWED, 1))
    by_group: dict[bytes, list[bytes]] = {}
    for member, group in sorted((groups or {}).items()):
        by_group.setdefault(group, []).append(member)
    members = [_Offer(group, 0, by_group[group]) for group in sorted(by_group)]
    filling.in_turns(members, lambda offer: Why(GROUP, 0, offer.via))
    for hop in range(2, depth + 1):
        introducers = [follows_of(feed, hop) for feed in sorted(reached)]
        reached = filling.in_turns(introducers, lambda offer: Why(HOP, offer.hop, offer.via))
    left_out = {} if hops is None else filling.left_out
    return Scope(hops, filling.feeds, blocked, left_out)


def read_scope(txn: Any, tables: Any) -> Scope:
    """The scope the store's node last chose (`EVERY_FEED` if it never chose one)."""
    raw = txn.get(SCOPE_HOPS, db=tables.meta)
    if raw is None:
        return EVERY_FEED
    hops = None if bytes(raw) == b"all" else int(raw)
    feeds: dict[bytes, Why] = {}
    blocked = set()
    left_out: dict[bytes, LeftOut] = {}
    for key, value in txn.cursor(db=tables.scope):
        if len(key) != KEY_BYTES:  # not a feed's row: what the bounds left out of a `via`
            left_out[bytes(key[len(LEFT_OUT) :])] = LeftOut.decode(bytes(value))
            continue
        why = Why.decode(bytes(value))
        if why.why == BLOCKED:
            blocked.add(bytes(key))
        else:
            feeds[bytes(key)] = why
    return Scope(hops, feeds, frozenset(blocked), left_out)


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
