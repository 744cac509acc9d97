"""The timeline engine: incremental, convergent linearization of a DAG in LMDB.

Theory of operation
-------------------
A timeline holds the messages of one DAG (a tangle, the spacetime of all
feeds, or the input of `tangled linearize`) in the order of DESIGN §4:
rank(m) = 0 if none of m's predecessors is present, else 1 + the highest
rank among them; the timeline is sorted by (rank, sort id). This is the
order ScuttleSort converges to (seed 000), reached the same way: when a
message arrives, only the messages whose rank it raises move.

Each message has a *ref*, the name its successors use for it, and a *sort
id*, the bytes that break rank ties (the message id). They differ only in
the spacetime, where a timeframe entry names a message by (feed, seq).

Adding message n with predecessors P, in one write transaction:

1. rank(n) = 1 + max rank of the present members of P, or 0.
2. The forward wave (seed 000 §2.2): every stored successor s of n (a
   message that referenced n before it arrived, placed provisionally) must
   now rank above n. Raised messages are visited in ascending order of their
   old rank, a topological order of everything the wave can reach (an edge
   u -> s always has rank(u) < rank(s)), so each one is visited once and its
   new rank is final when it is visited. If the wave would raise a member
   of P, n would precede itself: a cycle, reported before anything is
   written. Only refs of present messages ever appear as successors.
3. n's key (rank, sort id) is inserted in the order tree: `ins pos id`.
   Each raised message, highest new key first, is deleted at its old key and
   inserted at its new one: `mov from to`, left out when the position does
   not change. Only raised messages move, so each moves at most once.
4. The commands are appended to the timeline's command log, numbered from 1
   (the version after a command is its number), in the same transaction.

State per timeline (tables in `TimelineTables`):

    tl-names  timeline name -> timeline number (u32)
    tl-meta   number -> msgpack {name, version, size, root, next_node}
    tl-nodes  number + ref -> rank (u32) + sort id (empty when equal to ref)
    tl-succ   number + ref -> successor ref (dupsort); the rows of a ref not
              in tl-nodes are the pending references to a missing message
    tl-tree   number + node number -> order-tree node (storage.ordertree)
    tl-log    number + first version (u64) -> msgpack list of one event's commands
    tl-pending number + ref -> u32 count of its links to refs not present yet

No step reads or writes anything in proportion to the length of the
timeline: an event costs its predecessors, its wave (the messages it
raises, each with its successor list) and one walk of the order tree that
visits each touched node once.
A `TimelineWriter` caches the rows it touches for its transaction only and
writes them in `finish()`; memory is bounded by what one batch touches.
"""

from __future__ import annotations

import heapq
import struct
from bisect import bisect_left, insort
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import lmdb
import msgpack

from storage.errors import CycleError, DuplicateEvent, TimelineError, UnknownTimeline
from storage.ordertree import OrderTree, TreeState

MAX_REF_BYTES = 256
_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")
_INS, _MOV = 0, 1


@dataclass(frozen=True, slots=True)
class Insert:
    """`ins pos id`: insert `id` so that it ends up at index `pos`."""

    pos: int
    id: bytes


@dataclass(frozen=True, slots=True)
class Move:
    """`mov src dst`: take the element at `src` out, then insert it at `dst`."""

    src: int
    dst: int


Command = Insert | Move


def apply_commands(array: list[Any], commands: Iterable[Command]) -> list[Any]:
    """Replay commands on a list (in place), as a subscriber would."""
    for command in commands:
        if isinstance(command, Insert):
            array.insert(command.pos, command.id)
        else:
            array.insert(command.dst, array.pop(command.src))
    return array


def order_key(rank: int, sort_id: bytes) -> bytes:
    return _U32.pack(rank) + sort_id


def split_order_key(key: bytes) -> tuple[int, bytes]:
    return _U32.unpack(key[:4])[0], bytes(key[4:])


def _encode_commands(commands: Sequence[Command]) -> bytes:
    return msgpack.packb(
        [
            (_INS, command.pos, command.id)
            if isinstance(command, Insert)
            else (_MOV, command.src, command.dst)
            for command in commands
        ]
    )


def _decode_commands(raw: bytes) -> list[Command]:
    return [
        Insert(first, second) if kind == _INS else Move(first, second)
        for kind, first, second in msgpack.unpackb(raw)
    ]


@dataclass(frozen=True, slots=True)
class TimelineTables:
    names: Any
    meta: Any
    nodes: Any
    succ: Any
    tree: Any
    log: Any
    pending: Any

    COUNT = 7  # named databases these take

    @classmethod
    def open(cls, env: lmdb.Environment) -> TimelineTables:
        with env.begin(write=True) as txn:
            return cls(
                names=env.open_db(b"tl-names", txn=txn),
                meta=env.open_db(b"tl-meta", txn=txn),
                nodes=env.open_db(b"tl-nodes", txn=txn),
                succ=env.open_db(b"tl-succ", txn=txn, dupsort=True),
                tree=env.open_db(b"tl-tree", txn=txn),
                log=env.open_db(b"tl-log", txn=txn),
                pending=env.open_db(b"tl-pending", txn=txn),
            )


@dataclass(slots=True)
class _Meta:
    number: int
    name: bytes
    version: int
    tree: TreeState

    def encode(self) -> bytes:
        return msgpack.packb(
            {
                "name": self.name,
                "version": self.version,
                "size": self.tree.size,
                "root": self.tree.root,
                "next_node": self.tree.next_node,
            }
        )

    @classmethod
    def decode(cls, number: int, raw: bytes) -> _Meta:
        fields = msgpack.unpackb(raw)
        state = TreeState(fields["root"], fields["next_node"], fields["size"])
        return cls(number, fields["name"], fields["version"], state)


def _lookup_meta(txn, tables: TimelineTables, name: bytes) -> _Meta | None:
    number = txn.get(name, db=tables.names)
    if number is None:
        return None
    return _Meta.decode(_U32.unpack(number)[0], txn.get(number, db=tables.meta))


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a member stands: its position and rank."""

    position: int
    rank: int


class _Timeline:
    """One timeline inside one transaction: cached member rows and its order tree."""

    def __init__(self, txn, tables: TimelineTables, meta: _Meta) -> None:
        self.txn = txn
        self.tables = tables
        self.meta = meta
        self.prefix = _U32.pack(meta.number)
        self.tree = OrderTree(txn, tables.tree, meta.number, meta.tree)
        self.members: dict[bytes, tuple[int, bytes] | None] = {}
        self.dirty: set[bytes] = set()
        self.log: list[tuple[int, list[Command]]] = []  # (first version, an event's commands)
        self._succ_cursor = None

    def member(self, ref: bytes) -> tuple[int, bytes] | None:
        """(rank, sort id) of a present member, else None."""
        if ref in self.members:
            return self.members[ref]
        raw = self.txn.get(self.prefix + ref, db=self.tables.nodes)
        found = None if raw is None else (_U32.unpack(raw[:4])[0], bytes(raw[4:]) or ref)
        self.members[ref] = found
        return found

    def set_member(self, ref: bytes, rank: int, sort_id: bytes) -> None:
        self.members[ref] = (rank, sort_id)
        self.dirty.add(ref)

    def successors(self, ref: bytes) -> list[bytes]:
        cursor = self._succ_cursor
        if cursor is None:
            cursor = self._succ_cursor = self.txn.cursor(db=self.tables.succ)
        if not cursor.set_key(self.prefix + ref):
            return []
        return list(cursor.iternext_dup(keys=False))

    def flush(self) -> None:
        txn, tables, prefix = self.txn, self.tables, self.prefix
        for ref in self.dirty:
            rank, sort_id = self.members[ref]  # type: ignore[misc]  # dirty refs are present
            stored_id = b"" if sort_id == ref else sort_id
            txn.put(prefix + ref, _U32.pack(rank) + stored_id, db=tables.nodes)
        self.dirty.clear()
        for first, commands in self.log:
            txn.put(prefix + _U64.pack(first), _encode_commands(commands), db=tables.log)
        self.log.clear()
        self.tree.flush()
        txn.put(prefix, self.meta.encode(), db=tables.meta)


class TimelineWriter:
    """Adds events to timelines inside one write transaction; call `finish()` before commit.

    If an `add` raises, that event left no trace; earlier events of the
    transaction stand. If the transaction is aborted, drop the writer.
    """

    def __init__(self, txn, tables: TimelineTables) -> None:
        self._txn = txn
        self._tables = tables
        self._open: dict[bytes, _Timeline] = {}

    def _timeline(self, name: bytes) -> _Timeline:
        timeline = self._open.get(name)
        if timeline is None:
            meta = _lookup_meta(self._txn, self._tables, name)
            if meta is None:
                meta = self._create(name)
            timeline = self._open[name] = _Timeline(self._txn, self._tables, meta)
        return timeline

    def _create(self, name: bytes) -> _Meta:
        cursor = self._txn.cursor(db=self._tables.meta)
        number = _U32.unpack(cursor.key())[0] + 1 if cursor.last() else 1
        self._txn.put(name, _U32.pack(number), db=self._tables.names)
        meta = _Meta(number, name, 0, TreeState())
        self._txn.put(_U32.pack(number), meta.encode(), db=self._tables.meta)
        return meta

    def add(
        self,
        name: bytes,
        ref: bytes,
        after: Sequence[bytes] = (),
        *,
        sort_id: bytes | None = None,
    ) -> list[Command]:
        """Add event `ref` (sorting by `sort_id`, default `ref`) that follows `after`.

        Returns the commands that turn the previous order into the new one.
        """
        sort_id = ref if sort_id is None else sort_id
        if not ref or len(ref) > MAX_REF_BYTES or len(sort_id) > MAX_REF_BYTES:
            raise TimelineError(f"a ref or sort id must be 1 to {MAX_REF_BYTES} bytes")
        timeline = self._timeline(name)
        if timeline.member(ref) is not None:
            raise DuplicateEvent("already in the timeline")
        links = list(dict.fromkeys(after))
        if ref in links:
            raise CycleError("it links to itself")
        if any(not link or len(link) > MAX_REF_BYTES for link in links):
            raise TimelineError(f"a link must be 1 to {MAX_REF_BYTES} bytes")
        present = {link: found for link in links if (found := timeline.member(link))}
        rank = 1 + max(found[0] for found in present.values()) if present else 0
        raised = _wave(timeline, ref, rank, present.keys())

        for link in links:
            self._txn.put(timeline.prefix + link, ref, db=self._tables.succ, dupdata=True)
        self._note_pending(timeline, ref, len(links) - len(present))
        timeline.set_member(ref, rank, sort_id)
        for moved_ref, (_old_rank, new_rank, moved_id) in raised.items():
            timeline.set_member(moved_ref, new_rank, moved_id)
        commands = _place(timeline.tree, order_key(rank, sort_id), sort_id, raised.values())
        timeline.log.append((timeline.meta.version + 1, commands))
        timeline.meta.version += len(commands)
        return commands

    def finish(self) -> None:
        for timeline in self._open.values():
            timeline.flush()
        self._open.clear()

    def _note_pending(self, timeline: _Timeline, ref: bytes, missing: int) -> None:
        """Keep the pending counts: `ref` lacks `missing` links; whoever waited on it, one less."""
        txn, db = self._txn, self._tables.pending
        if missing:
            txn.put(timeline.prefix + ref, _U32.pack(missing), db=db)
        for holder in timeline.successors(ref):  # all of them waited: ref was not present
            key = timeline.prefix + holder
            left = _U32.unpack(txn.get(key, db=db))[0] - 1
            if left:
                txn.put(key, _U32.pack(left), db=db)
            else:
                txn.delete(key, db=db)


def _place(
    tree: OrderTree,
    new_key: bytes,
    new_id: bytes,
    raised: Iterable[tuple[int, int, bytes]],
) -> list[Command]:
    """Insert `new_key` and move each raised (old rank, new rank, sort id) in one tree walk.

    The commands are `ins` first, then one `mov` per raised message, highest
    new key first, each numbered against the array as the commands before
    it left it. Every position follows from the keys' positions in the tree
    before the change, `tree.apply` gives them all at once: with the moves
    done so far being those of greater new keys (so all above the current
    one), a message at old key o moving to new key n goes

        from  before(o) + [new < o] - #{moved old keys < o}
        to    before(n) + [new < n] - #{moved old keys < n, o included}
    """
    pack = _U32.pack
    moves = sorted(
        [(pack(old) + sort_id, pack(new) + sort_id) for old, new, sort_id in raised],
        key=itemgetter(1),
        reverse=True,
    )
    changes = {new_key: 1}
    for old_key, moved_key in moves:
        changes[old_key] = -1
        changes[moved_key] = 1
    keys = sorted(changes)
    before = dict(zip(keys, tree.apply(keys, [changes[key] for key in keys]), strict=True))
    commands: list[Command] = [Insert(before[new_key], new_id)]
    moved_olds: list[bytes] = []
    for old_key, moved_key in moves:
        src = before[old_key] + (new_key < old_key) - bisect_left(moved_olds, old_key)
        insort(moved_olds, old_key)
        dst = before[moved_key] + (new_key < moved_key) - bisect_left(moved_olds, moved_key)
        if src != dst:
            commands.append(Move(src, dst))
    return commands


def _wave(
    timeline: _Timeline, ref: bytes, rank: int, predecessors: Iterable[bytes]
) -> dict[bytes, tuple[int, int, bytes]]:
    """Raise the successors of `ref` (at `rank`) transitively: ref -> (old, new rank, sort id)."""
    forbidden = set(predecessors)
    raised: dict[bytes, tuple[int, int, bytes]] = {}
    heap: list[tuple[int, bytes]] = []
    member, successors = timeline.member, timeline.successors
    current, current_rank = ref, rank
    while True:
        candidate = current_rank + 1
        for successor in successors(current):
            entry = raised.get(successor)
            if entry is not None:
                if candidate > entry[1]:
                    raised[successor] = (entry[0], candidate, entry[2])
                continue
            old_rank, sort_id = member(successor)  # type: ignore[misc]  # successors are present
            if candidate <= old_rank:
                continue
            if successor in forbidden:
                raise CycleError("it would come before itself")
            raised[successor] = (old_rank, candidate, sort_id)
            heapq.heappush(heap, (old_rank, successor))
        if not heap:
            return raised
        current = heapq.heappop(heap)[1]
        current_rank = raised[current][1]


class TimelineReader:
    """Queries on timelines within one (read or write) transaction."""

    def __init__(self, txn, tables: TimelineTables) -> None:
        self._txn = txn
        self._tables = tables

    def exists(self, name: bytes) -> bool:
        return self._txn.get(name, db=self._tables.names) is not None

    def _open(self, name: bytes) -> _Timeline:
        meta = _lookup_meta(self._txn, self._tables, name)
        if meta is None:
            raise UnknownTimeline(f"no timeline {name!r}")
        return _Timeline(self._txn, self._tables, meta)

    def version(self, name: bytes) -> int:
        return self._open(name).meta.version

    def order(self, name: bytes, start: int = 0, stop: int | None = None) -> list[bytes]:
        """Sort ids at positions start..stop-1."""
        return [sort_id for _rank, sort_id in self.entries(name, start, stop)]

    def entries(
        self, name: bytes, start: int = 0, stop: int | None = None
    ) -> list[tuple[int, bytes]]:
        """(rank, sort id) at positions start..stop-1."""
        timeline = self._open(name)
        stop = timeline.meta.tree.size if stop is None else stop
        return [split_order_key(key) for key in timeline.tree.slice(start, stop)]

    def placement(self, name: bytes, ref: bytes) -> Placement | None:
        timeline = self._open(name)
        found = timeline.member(ref)
        if found is None:
            return None
        rank, sort_id = found
        return Placement(timeline.tree.position(order_key(rank, sort_id)), rank)

    def pending_ranks(self, name: bytes) -> list[int]:
        """The ranks of the members that link to something not present yet."""
        timeline = self._open(name)
        cursor = self._txn.cursor(db=self._tables.pending)
        ranks: list[int] = []
        if not cursor.set_range(timeline.prefix):
            return ranks
        for key in cursor.iternext(values=False):
            if key[:4] != timeline.prefix:
                break
            ranks.append(timeline.member(bytes(key[4:]))[0])  # type: ignore[index]
        return ranks

    def member_rank(self, name: bytes, ref: bytes) -> int | None:
        found = self._open(name).member(ref)
        return None if found is None else found[0]

    def rank_boundary(self, name: bytes, rank: int) -> int:
        """How many members rank below `rank`."""
        return self._open(name).tree.position(order_key(rank, b""))

    def commands_since(self, name: bytes, version: int, limit: int = 10_000) -> list[Command]:
        """Up to `limit` commands numbered above `version`, in order."""
        timeline = self._open(name)
        cursor = self._txn.cursor(db=self._tables.log)
        wanted = timeline.prefix + _U64.pack(version + 1)
        # The row holding command version + 1 is the last one keyed at or below it.
        found = cursor.set_range(wanted)
        if (not found or cursor.key() != wanted) and not (
            cursor.prev() if found else cursor.last()
        ):
            return []
        commands: list[Command] = []
        for key, raw in cursor:
            if key[:4] != timeline.prefix or len(commands) >= limit:
                break
            first = _U64.unpack(key[4:])[0]
            skip = max(0, version + 1 - first)
            commands.extend(_decode_commands(raw)[skip:])
        return commands[:limit]
