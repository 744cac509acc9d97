"""The `scope` table's rows: why each feed is carried, which are blocked, and what the
bounds left out.

storage/scope.py computes the scope and keeps it here (its theory of
operation says what the rows mean); the layers below the composition read
it through the two predicates: `carried_in` (the causal processor counts an
entry naming a feed not carried as met) and `blocked_in` (ingest refuses a
blocked feed's messages).

    scope     feed (32 bytes) -> msgpack [why, hop, via]
              "left-out:" + via (41 bytes) -> msgpack [hop, count, unread]
    meta "scope-hops" -> "all" or the number of hops (absent: every feed carried)

The two kinds of row are told apart by their keys' length; the predicates
ask for 32-byte keys only. The table is the node's own (no peer reads it),
so its rows are no part of the wire or message format.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgpack

SCOPE_HOPS = b"scope-hops"

OURS, FOLLOWED, HOP, GROUP, BLOCKED = "ours", "followed", "hop", "group", "blocked"


@dataclass(frozen=True, slots=True)
class Why:
    """Why a feed is in the scope (or, `blocked`, kept out of it)."""

    why: str
    hop: int = 0  # how many follows away (0: ours or a group member)
    via: bytes | None = None  # the feed that follows it, or the group

    def encode(self) -> bytes:
        return msgpack.packb([self.why, self.hop, self.via])

    @classmethod
    def decode(cls, raw: bytes) -> Why:
        why, hop, via = msgpack.unpackb(raw)
        return cls(why, hop, via)


LEFT_OUT = b"left-out:"  # key prefix of a row saying what the bounds left out of one `via`
CAP, BOUND = "cap", "bound"  # why: the cap was reached at its share; it names too many


@dataclass(frozen=True, slots=True)
class LeftOut:
    """What the scope's bounds left out of the feeds one introducer offered (`via`, the row's
    key: a feed whose follows they are, or a group whose members they are)."""

    hop: int  # the hop they would have been carried at (0: a group's members)
    count: int  # feeds it offered and that were read but not carried: the cap (CAP)
    unread: bool  # it names more feeds than are read of one feed: the rest unread (BOUND)

    @property
    def reasons(self) -> tuple[str, ...]:
        return ((CAP,) if self.count else ()) + ((BOUND,) if self.unread else ())

    def encode(self) -> bytes:
        return msgpack.packb([self.hop, self.count, self.unread])

    @classmethod
    def decode(cls, raw: bytes) -> LeftOut:
        hop, count, unread = msgpack.unpackb(raw)
        return cls(hop, count, unread)


def left_out_key(via: bytes) -> bytes:
    return LEFT_OUT + via


def carried_in(txn: Any, tables: Any):
    """Whether the store's node carries a feed, read lazily in `txn` (one `get` per feed
    asked, cached); None when it carries every feed it has not blocked and blocks none."""
    raw = txn.get(SCOPE_HOPS, db=tables.meta)
    if raw is None:
        return None
    every = bytes(raw) == b"all"
    known: dict[bytes, bool] = {}

    def carried(feed: bytes) -> bool:
        found = known.get(feed)
        if found is None:
            row = txn.get(feed, db=tables.scope)
            found = every if row is None else Why.decode(bytes(row)).why != BLOCKED
            known[feed] = found
        return found

    return carried


def blocked_in(txn: Any, tables: Any) -> Callable[[bytes], bool]:
    """Whether the store's node blocks a feed, read lazily in `txn` (cached)."""
    known: dict[bytes, bool] = {}

    def blocked(feed: bytes) -> bool:
        found = known.get(feed)
        if found is None:
            row = txn.get(feed, db=tables.scope)
            found = known[feed] = row is not None and Why.decode(bytes(row)).why == BLOCKED
        return found

    return blocked
