"""The `scope` table's rows: why each feed is carried, and which are blocked.

storage/scope.py computes the scope and keeps it here (its theory of
operation says what the rows mean); the layers below the composition read
it through the two predicates: `carried_in` (the causal processor counts an
entry naming a feed not carried as met) and `blocked_in` (ingest refuses a
blocked feed's messages).

    scope     feed -> msgpack [why, hop, via]
    meta "scope-hops" -> "all" or the number of hops (absent: every feed carried)
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
