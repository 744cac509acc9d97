"""Queries on the timeline engine's tables within one (read or write) transaction.

`TimelineReader` answers what a timeline holds (its order, a member's
placement, its version and floor, its command log) and `membership` tests
presence by one lookup, both from the rows `storage.engine.timeline`'s
writer keeps. A read never numbers a ref (storage.engine.ref_numbers): a ref
without a number is in no timeline.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tanglenode.storage.engine.causal_key import decode_row, decode_tree_key, element_time, tree_key
from tanglenode.storage.engine.command_log import read_log
from tanglenode.storage.engine.engine_commands import Command
from tanglenode.storage.engine.keys import U32, timeline_label
from tanglenode.storage.engine.timeline import (
    TimelineTables,
    _Timeline,
    is_causal_time,
    lookup_meta,
    order_key,
    split_order_key,
)
from tanglenode.storage.errors import UnknownTimeline

if TYPE_CHECKING:
    from tanglenode.storage.engine.txn import Txn


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a member stands: its position and rank (and in causal-time order, its time)."""

    position: int
    rank: int
    time: int | None = None


def membership(txn: Txn, tables: TimelineTables, name: bytes) -> Callable[[bytes], bool]:
    """`holds(ref)`: whether `ref` is a present member of timeline `name`, by one lookup
    each (after a `TimelineWriter.finish()` in the same transaction, its adds included)."""
    meta = lookup_meta(txn, tables, name)
    if meta is None:
        return lambda ref: False
    prefix, nodes, find = U32.pack(meta.number), tables.nodes, tables.ref_numbers(txn).find

    def holds(ref: bytes) -> bool:
        number = find(ref)
        return number is not None and txn.get(prefix + number, None, nodes) is not None

    return holds


class TimelineReader:
    """Queries on timelines within one (read or write) transaction."""

    def __init__(self, txn: Txn, tables: TimelineTables) -> None:
        self._txn = txn
        self._tables = tables
        self._numbers = tables.ref_numbers(txn)  # finds only: a read never numbers a ref

    def exists(self, name: bytes) -> bool:
        return self._txn.get(name, db=self._tables.names) is not None

    def _open(self, name: bytes) -> _Timeline:
        meta = lookup_meta(self._txn, self._tables, name)
        if meta is None:
            raise UnknownTimeline(f"no timeline {timeline_label(name)}")
        return _Timeline(self._txn, self._tables, meta, self._numbers)

    def version(self, name: bytes) -> int:
        return self._open(name).meta.version

    def floor(self, name: bytes) -> int:
        """The version the command log starts after (0 until its retention trimmed it or a
        rebuild restarted it)."""
        return self._open(name).meta.floor

    def size(self, name: bytes) -> int:
        """How many entries the timeline holds."""
        return self._open(name).meta.tree.size

    def order(self, name: bytes, start: int = 0, stop: int | None = None) -> list[bytes]:
        """Sort ids at positions start..stop-1."""
        return [sort_id for _rank, sort_id in self.entries(name, start, stop)]

    def entries(
        self, name: bytes, start: int = 0, stop: int | None = None
    ) -> list[tuple[int, bytes]]:
        """(rank, sort id) at positions start..stop-1."""
        timeline = self._open(name)
        stop = timeline.meta.tree.size if stop is None else stop
        decode = decode_tree_key if is_causal_time(name) else split_order_key
        return [decode(key) for key in timeline.tree.slice(start, stop)]

    def placement(self, name: bytes, ref: bytes) -> Placement | None:
        timeline = self._open(name)
        if is_causal_time(name):
            number = self._numbers.find(ref)
            raw = None
            if number is not None:
                raw = self._txn.get(timeline.prefix + number, db=self._tables.causal_nodes)
            if raw is None:
                return None
            height, elem, chain = decode_row(raw, ref)
            key = tree_key(chain, height, elem)
            return Placement(timeline.tree.position(key), height, element_time(elem))
        found = timeline.member(ref)
        if found is None:
            return None
        rank, sort_id = found
        return Placement(timeline.tree.position(order_key(rank, sort_id)), rank)

    def pending_ranks(self, name: bytes) -> list[int]:
        """The ranks of the members that link to something not present yet."""
        return [rank for _ref, rank in self.pending_members(name)]

    def pending_members(self, name: bytes) -> list[tuple[bytes, int]]:
        """(ref, rank) of the members that link to something not present yet."""
        timeline = self._open(name)
        cursor = self._txn.cursor(db=self._tables.pending)
        found: list[tuple[bytes, int]] = []
        if not cursor.set_range(timeline.prefix):
            return found
        for key in cursor.iternext(values=False):
            if key[:4] != timeline.prefix:
                break
            number = bytes(key[4:])
            member = timeline.rows.member(number)  # a pending row's is a member
            found.append((self._numbers.ref(number), member.rank))  # type: ignore[union-attr]
        return found

    def successors(self, name: bytes, ref: bytes) -> list[bytes]:
        """The refs of the members that link to `ref` (present or not)."""
        return self._open(name).successors(ref)

    def member_rank(self, name: bytes, ref: bytes) -> int | None:
        return self._open(name).rank(ref)

    def rank_boundary(self, name: bytes, rank: int) -> int:
        """How many members rank below `rank`."""
        return self._open(name).tree.position(order_key(rank, b""))

    def commands_since(self, name: bytes, version: int, limit: int = 10_000) -> list[Command]:
        """Up to `limit` commands numbered above `version`, in order; `BelowLogFloor` when
        `version` is below the log's floor (the commands after it are gone)."""
        timeline = self._open(name)
        meta = timeline.meta
        return read_log(self._txn, self._tables.log, timeline.prefix, version, meta.floor, limit)
