"""The timeline engine: incremental, convergent linearization of a DAG in LMDB.

Theory of operation
-------------------
A timeline holds the messages of one DAG (a tangle, the spacetime of all
feeds, or the input of `tangled linearize`) in the order of docs/TIMELINES.md ("The order"):
rank(m) = 0 if none of m's predecessors is present, else 1 + the highest
rank among them; the timeline is sorted by (rank, sort id). This is the
order ScuttleSort converges to, reached the same way: when a
message arrives, only the messages whose rank it raises move.

Each message has a *ref*, the name its successors use for it, and a *sort
id*, the bytes that break rank ties (the message id). They differ only in
the spacetime, where a timeframe entry names a message by (feed, seq).

Adding message n with predecessors P, in one write transaction:

1. rank(n) = 1 + max rank of the present members of P, or 0.
2. The forward wave (docs/TIMELINES.md, "The engine"): every stored successor s of n (a
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
   (the version after a command is its number), in the same transaction
   (storage.engine.command_log, which also trims each log to its retention
   when the writer finishes).

Removing member r (added with links L), in one write transaction, leaves
exactly the state a fresh engine would hold had r never been added. It is
rare (a feed proven forked is invalidated from some seq on, and its
messages from there on leave every timeline) and written for clarity:

1. Checks, before anything is written: r is a member (else `UnknownEvent`),
   and L agrees with the stored rows (a tl-succ row l -> r for each l, r's
   rank and pending count). The caller supplies L and `links_of`, the links
   of any other member: the engine keeps no predecessor index, so that
   `add` does not pay for one.
2. The lowering wave, the mirror of the forward wave: ranks can only fall.
   Members are visited in ascending order of old rank, starting from r's
   successors; each one's rank is recomputed as 1 + the highest rank of its
   present links other than r (or 0), and the wave goes on only through
   members whose rank fell.
3. r's rows under its links are deleted, and its tl-pending and tl-nodes
   rows. The rows of r's successors under r stay: they are pending
   references to a missing message again, so each successor's pending
   count goes up by one. Adding r again undoes all of this.
4. r's key leaves the order tree: `del pos`. Then each lowered member,
   lowest new key first, leaves its old key and takes its new one:
   `mov from to`, left out when the position does not change. Each command
   is numbered against the array the previous ones left. The commands are
   one event of the log, like an add's.

A removal costs r's links, its wave (each visited member's links and
successors) and two tree paths per lowered member. It is the one change
that can retract positions a finality watermark (docs/TIMELINES.md) has
reported final: finality holds unless a feed is later invalidated.

State per timeline (tables in `TimelineTables`; "ref" in a key or value is
the ref's number, storage.engine.ref_numbers, u32):

    tl-names  timeline name -> timeline number (u32)
    tl-meta   number -> msgpack {name, version, size, root, next_node[, floor]}
              (floor: the log holds only the commands after it; raised by a
              rebuild and by the log's retention, storage.engine.command_log)
    tl-nodes  number + ref -> rank (u32) + sort id (empty when it is the ref's)
    tl-succ   number + ref -> successor ref (dupsort, fixed size); the rows of
              a ref not in tl-nodes are the pending references to a missing
              message (or to a removed one: removal keeps them)
    tl-tree   number + node number -> order-tree node (storage.engine.ordertree)
    tl-log    number + first version (u64) -> msgpack list of one event's commands
    tl-pending number + ref -> u32 count of its links to refs not present yet

and, store-wide, `tl-refs` (ref -> number) and `tl-ref-names` (number ->
ref). Callers pass refs and get refs back; a read of a ref that has no
number finds no member and writes nothing.

No step reads or writes anything in proportion to the length of the
timeline: an event costs its predecessors, its wave (the messages it
raises, each with its successor list) and one walk of the order tree that
visits each touched node once.
A `TimelineWriter` caches the rows it touches for its transaction only and
writes them in `finish()`; memory is bounded by what one batch touches.

This module checks events, keeps the tables and does the rare removal; the
work an add costs per raised message (rows, wave, placing, the log row) is
in `storage.engine.engine_core` and the order tree in `storage.engine.ordertree`. Those two
are the engine's hot modules: plain Python that `make install` also compiles
with Cython (`storage.engine.native`), the compiled build running when it is
current. `engine_build()` says which runs; `use_engine_build` switches.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import lmdb
import msgpack

from tanglenode.storage.engine import native
from tanglenode.storage.engine.command_log import (
    KEEP_ALL,
    LogRetention,
    append_event,
    drop_log,
    trim_log,
)
from tanglenode.storage.engine.engine_commands import (
    Command,
    Delete,
    Insert,
    Move,
    apply_commands,
)
from tanglenode.storage.engine.keys import U32
from tanglenode.storage.engine.ordertree import TreeState
from tanglenode.storage.engine.ref_numbers import RefHome, RefHomes, RefNumbers
from tanglenode.storage.errors import (
    CycleError,
    DuplicateEvent,
    StoreDamaged,
    TimelineError,
    UnknownEvent,
)

__all__ = [
    "MAX_REF_BYTES",
    "Command",
    "CycleError",
    "Delete",
    "DuplicateEvent",
    "Insert",
    "Move",
    "TimelineError",
    "TimelineTables",
    "TimelineWriter",
    "UnknownEvent",
    "apply_commands",
    "engine_build",
    "order_key",
    "split_order_key",
    "use_engine_build",
]

MAX_REF_BYTES = 256

# The hot modules (storage.engine.native): compiled when built and current, else plain.
if TYPE_CHECKING:
    from tanglenode.storage.engine.engine_core import Member, Rows
    from tanglenode.storage.engine.ordertree import OrderTree
    from tanglenode.storage.engine.txn import Db, Txn

# The build the engine runs (`use_engine_build`): modules, so what they give is Any to mypy;
# the names that hold it below say its type (the plain modules', which the compiled share).
_core = native.load("engine_core")
_trees = native.load("ordertree")


def engine_build() -> str:
    """'native' when the engine's hot modules run compiled, else 'plain'."""
    return "native" if hasattr(_core, "SOURCE_SHA256") else "plain"


def use_engine_build(kind: str) -> None:
    """Run the engine with the 'native' or the 'plain' hot modules from now on.

    For tests and benchmarks that compare the builds; `native` raises
    ImportError when the compiled modules are missing or stale.
    """
    global _core, _trees
    if kind == "plain":
        _core, _trees = native.plain("engine_core"), native.plain("ordertree")
    elif kind == "native":
        core, trees = native.compiled("engine_core"), native.compiled("ordertree")
        if core is None or trees is None:
            raise ImportError("the compiled engine is not built or is stale: run `make install`")
        _core, _trees = core, trees
    else:
        raise ValueError(f"unknown engine build {kind!r}")


def _as_bytes(value: bytes) -> bytes:
    """Refs as bytes (the compiled engine keeps bytes; a bytearray or memoryview is copied)."""
    return value if type(value) is bytes else bytes(memoryview(value))


def order_key(rank: int, sort_id: bytes) -> bytes:
    return U32.pack(rank) + sort_id


def split_order_key(key: bytes) -> tuple[int, bytes]:
    return U32.unpack(key[:4])[0], bytes(key[4:])


@dataclass(frozen=True, slots=True)
class TimelineTables:
    names: Db
    meta: Db
    nodes: Db
    succ: Db
    tree: Db
    log: Db
    pending: Db
    causal_nodes: Db  # storage.engine.causal_timeline: members of causal-time timelines
    causal_times: Db  # storage.engine.causal_timeline: the time index of those timelines
    refs: Db  # storage.engine.ref_numbers: ref -> number
    ref_names: Db  # storage.engine.ref_numbers: number -> ref
    homes: RefHomes | None = None  # where the store keeps some refs' numbers (ref_numbers)

    COUNT = 11  # named databases these take

    @classmethod
    def open(cls, env: lmdb.Environment, homes: RefHomes | None = None) -> TimelineTables:
        with env.begin(write=True) as txn:
            return cls(
                names=env.open_db(b"tl-names", txn=txn),
                meta=env.open_db(b"tl-meta", txn=txn),
                nodes=env.open_db(b"tl-nodes", txn=txn),
                # every successor is a ref number of 4 bytes: packed, 4 bytes a row
                succ=env.open_db(b"tl-succ", txn=txn, dupsort=True, dupfixed=True),
                tree=env.open_db(b"tl-tree", txn=txn),
                log=env.open_db(b"tl-log", txn=txn),
                pending=env.open_db(b"tl-pending", txn=txn),
                causal_nodes=env.open_db(b"ct-nodes", txn=txn),
                causal_times=env.open_db(b"ct-time", txn=txn),
                refs=env.open_db(b"tl-refs", txn=txn),
                ref_names=env.open_db(b"tl-ref-names", txn=txn),
                homes=homes,
            )

    def ref_home(self, txn: Txn) -> RefHome | None:
        """Where `txn` finds the numbers the store keeps outside `tl-refs`, if any."""
        return None if self.homes is None else self.homes.home(txn)

    def ref_numbers(self, txn: Txn) -> RefNumbers:
        """The ref numbers as transaction `txn` sees them (storage.engine.ref_numbers)."""
        return RefNumbers(txn, self.refs, self.ref_names, self.ref_home(txn))


@dataclass(slots=True)
class _Meta:
    number: int
    name: bytes
    version: int
    tree: TreeState
    floor: int = 0  # the log holds the commands after this version only (command_log)

    def encode(self) -> bytes:
        fields = {
            "name": self.name,
            "version": self.version,
            "size": self.tree.size,
            "root": self.tree.root,
            "next_node": self.tree.next_node,
        }
        if self.floor:
            fields["floor"] = self.floor
        return msgpack.packb(fields)

    @classmethod
    def decode(cls, number: int, raw: bytes) -> _Meta:
        fields = msgpack.unpackb(raw)
        state = TreeState(fields["root"], fields["next_node"], fields["size"])
        return cls(number, fields["name"], fields["version"], state, fields.get("floor", 0))


def lookup_meta(txn: Txn, tables: TimelineTables, name: bytes) -> _Meta | None:
    """The meta row of timeline `name` (its number, version, tree), None if absent."""
    number = txn.get(name, db=tables.names)
    if number is None:
        return None
    raw = txn.get(number, db=tables.meta)
    if raw is None:
        raise StoreDamaged(f"timeline {name!r} has a number but no meta row")
    return _Meta.decode(U32.unpack(number)[0], raw)


def restart_log(txn: Txn, tables: TimelineTables, name: bytes, version: int) -> None:
    """Drop timeline `name`'s command log and number what follows from `version`, the log's
    floor: a subscriber at any version below it starts again from a snapshot. After a
    rebuild (storage/reindex.py) the log told how an empty timeline grew, which no
    subscriber that saw the old one can apply."""
    meta = lookup_meta(txn, tables, name)
    if meta is None:
        return
    prefix = U32.pack(meta.number)
    drop_log(txn, tables.log, prefix)
    meta.version = meta.floor = version
    txn.put(prefix, meta.encode(), db=tables.meta)


def create_meta(txn: Txn, tables: TimelineTables, name: bytes) -> _Meta:
    """Register a new, empty timeline `name` under the next free number."""
    cursor = txn.cursor(db=tables.meta)
    number = U32.unpack(cursor.key())[0] + 1 if cursor.last() else 1
    txn.put(name, U32.pack(number), db=tables.names)
    meta = _Meta(number, name, 0, TreeState())
    txn.put(U32.pack(number), meta.encode(), db=tables.meta)
    return meta


def order_tree(txn: Txn, tables: TimelineTables, meta: _Meta) -> OrderTree:
    """The order tree of a timeline (the build `use_engine_build` chose)."""
    tree: OrderTree = _trees.OrderTree(txn, tables.tree, meta.number, meta.tree)
    return tree


def is_causal_time(name: bytes) -> bool:
    """Whether `name` is a causal-time timeline (storage.views.timelines.view_timeline)."""
    return name[:1] == b"\x03"


class _Timeline:
    """One timeline inside one transaction: its rows (storage.engine.engine_core) and order tree.

    The rows and the tree work on ref numbers; the methods below take and
    give refs, translated by `numbers` (never assigning: reads write nothing).
    """

    def __init__(self, txn: Txn, tables: TimelineTables, meta: _Meta, numbers: RefNumbers) -> None:
        self.txn = txn
        self.tables = tables
        self.meta = meta
        self.numbers = numbers
        self.prefix = U32.pack(meta.number)
        self.tree: OrderTree = _trees.OrderTree(txn, tables.tree, meta.number, meta.tree)
        self.rows: Rows = _core.Rows(
            txn, tables.nodes, tables.succ, tables.pending, tables.ref_names, self.prefix
        )

    def member_row(self, ref: bytes) -> Member | None:
        """The engine's `Member` for a present member `ref`, else None."""
        number = self.numbers.find(ref)
        return None if number is None else self.rows.member(number)

    def member(self, ref: bytes) -> tuple[int, bytes] | None:
        """(rank, sort id) of a present member, else None."""
        found = self.member_row(ref)
        if found is None:
            return None
        return found.rank, self.rows.keyed(found)[4:]

    def rank(self, ref: bytes) -> int | None:
        found = self.member_row(ref)
        return None if found is None else found.rank

    def successors(self, ref: bytes) -> list[bytes]:
        """The refs of the members that link to `ref` (present or not)."""
        number = self.numbers.find(ref)
        if number is None:
            return []
        return [self.numbers.ref(each) for each in self.rows.successor_refs(number)]

    def links_to(self, link: bytes, ref: bytes) -> bool:
        """Whether tl-succ holds the row link -> ref (ref was added with `link`)."""
        link_number, number = self.numbers.find(link), self.numbers.find(ref)
        if link_number is None or number is None:
            return False
        return self.txn.cursor(db=self.tables.succ).set_key_dup(self.prefix + link_number, number)

    def append_log(self, commands: list[Command], retention: LogRetention) -> None:
        """One event's commands to the command log, numbered on from the version."""
        meta = self.meta
        row = _core.encode_log(commands) if retention.logged else b""
        append_event(self.txn, self.tables.log, self.prefix, meta.version, row, retention)
        meta.version += len(commands)

    def flush(self, retention: LogRetention = KEEP_ALL) -> None:
        """Write the cached rows, the log trimmed to `retention`, and the meta row."""
        txn, tables, prefix, meta = self.txn, self.tables, self.prefix, self.meta
        self.rows.flush()
        self.tree.flush()
        meta.floor = trim_log(txn, tables.log, prefix, meta.version, meta.floor, retention)
        txn.put(prefix, meta.encode(), db=tables.meta)


class TimelineWriter:
    """Adds events to timelines inside one write transaction; call `finish()` before commit.

    If an `add` raises, that event left no trace; earlier events of the
    transaction stand. If the transaction is aborted, drop the writer.
    `finish()` trims each command log it appended to to `retention`
    (storage.engine.command_log; by default every command is kept).
    """

    def __init__(
        self, txn: Txn, tables: TimelineTables, retention: LogRetention = KEEP_ALL
    ) -> None:
        self._txn = txn
        self._tables = tables
        self.retention = retention
        self._numbers = tables.ref_numbers(txn)  # shared with the companions
        self._open: dict[bytes, _Timeline] = {}
        self._companions: dict[Any, Any] = {}
        # One tl-succ cursor for every timeline: LMDB adjusts each open cursor of a
        # table at every write to it, and an add writes a tl-succ row per link.
        self._succ = txn.cursor(db=tables.succ)

    def _timeline(self, name: bytes) -> _Timeline:
        timeline = self._open.get(name) or self._existing(name)
        return timeline or self._opened(name, create_meta(self._txn, self._tables, name))

    def _existing(self, name: bytes) -> _Timeline | None:
        timeline = self._open.get(name)
        if timeline is None:
            meta = lookup_meta(self._txn, self._tables, name)
            return None if meta is None else self._opened(name, meta)
        return timeline

    def _opened(self, name: bytes, meta: _Meta) -> _Timeline:
        timeline = self._open[name] = _Timeline(self._txn, self._tables, meta, self._numbers)
        timeline.rows.cursor = self._succ
        return timeline

    def companion(self, kind: Callable[..., Any]) -> Any:
        """The writer of kind `kind` (e.g. storage.engine.causal_timeline's) for this transaction,
        made on first use as `kind(txn, tables, retention=..., numbers=...)`, with this
        writer's retention and sharing its ref numbers; `finish()` finishes it too."""
        found = self._companions.get(kind)
        if found is None:
            found = self._companions[kind] = kind(
                self._txn, self._tables, retention=self.retention, numbers=self._numbers
            )
        return found

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
        The ref and its links get their numbers here (storage.engine.ref_numbers);
        an event refused as a cycle leaves its links numbered, and nothing else.
        """
        ref = _as_bytes(ref)
        sort_id = ref if sort_id is None else _as_bytes(sort_id)
        if not ref or len(ref) > MAX_REF_BYTES or len(sort_id) > MAX_REF_BYTES:
            raise TimelineError(f"a ref or sort id must be 1 to {MAX_REF_BYTES} bytes")
        timeline = self._timeline(name)
        if timeline.member_row(ref) is not None:
            raise DuplicateEvent("already in the timeline")
        links = list(dict.fromkeys(map(_as_bytes, after)))
        if ref in links:
            raise CycleError("it links to itself")
        for link in links:
            if not link or len(link) > MAX_REF_BYTES:
                raise TimelineError(f"a link must be 1 to {MAX_REF_BYTES} bytes")
        numbers = self._numbers.assign_all([ref, *links])
        stored = b"" if sort_id == ref else sort_id  # a tangle's row leaves its id out
        try:
            commands: list[Command] = _core.add_event(
                timeline.rows, timeline.tree, numbers[0], numbers[1:], sort_id, stored
            )
        except CycleError as error:
            error.loop = [self._numbers.ref(number) for number in error.loop]
            raise
        timeline.append_log(commands, self.retention)
        return commands

    def remove(
        self,
        name: bytes,
        ref: bytes,
        links: Sequence[bytes],
        links_of: Callable[[bytes], Sequence[bytes]],
    ) -> list[Command]:
        """Take member `ref`, added with `links`, out of timeline `name`.

        `links_of(r)` must give the links any other present member `r` was
        added with. Afterwards the timeline is what it would be had `ref`
        never been added; members that linked to it hold pending references
        to it again, and adding it later puts everything back. Returns the
        commands: `del` of `ref`, then a `mov` per lowered member whose
        position changes. Raises `UnknownEvent` if `ref` is not a member, and
        `TimelineError` if `links` or `links_of` do not match what is stored
        (as far as can be seen without reading the whole timeline); either
        way nothing changes.
        """
        timeline = self._existing(name)
        found = None if timeline is None else timeline.member(ref)
        if timeline is None or found is None:
            raise UnknownEvent(f"{ref!r} is not in timeline {name!r}")
        rank, sort_id = found
        links = list(dict.fromkeys(links))
        present = [link_rank for link in links if (link_rank := timeline.rank(link)) is not None]
        number = self._numbers.find(ref)
        assert number is not None  # a member has one
        if (
            any(not timeline.links_to(link, ref) for link in links)
            or rank != (1 + max(present) if present else 0)
            or len(links) - len(present) != timeline.rows.pending(number)
        ):
            raise TimelineError(f"{ref!r} was not added with these links")
        lowered = _lower(timeline, ref, links_of)  # reads only: may raise, changing nothing

        txn, tables, prefix, rows = self._txn, self._tables, timeline.prefix, timeline.rows
        find = self._numbers.find
        for link in links:
            txn.delete(prefix + find(link), number, db=tables.succ)  # type: ignore[operator]
        rows.set_pending(number, 0)
        for holder in rows.successor_refs(number):  # each now waits for ref again
            rows.set_pending(holder, rows.pending(holder) + 1)
        rows.forget(number)
        tree = timeline.tree
        commands: list[Command] = [Delete(tree.delete(order_key(rank, sort_id)))]
        # One member at a time, lowest new key first, each numbered against
        # the array the commands before it left: the tree *is* that array.
        for moved_ref, (old_rank, new_rank, moved_id) in sorted(
            lowered.items(), key=lambda item: (item[1][1], item[1][2])
        ):
            moved = timeline.member_row(moved_ref)  # lowered: a member
            rows.set_rank(moved, new_rank)  # type: ignore[arg-type]
            src = tree.delete(order_key(old_rank, moved_id))
            dst = tree.insert(order_key(new_rank, moved_id))
            if src != dst:
                commands.append(Move(src, dst))
        timeline.append_log(commands, self.retention)
        return commands

    def finish(self) -> None:
        for timeline in self._open.values():
            timeline.flush(self.retention)
        self._open.clear()
        for companion in self._companions.values():
            companion.finish()


def _lower(
    timeline: _Timeline, ref: bytes, links_of: Callable[[bytes], Sequence[bytes]]
) -> dict[bytes, tuple[int, int, bytes]]:
    """The members whose rank falls once `ref` is gone: ref -> (old, new rank, sort id).

    The mirror of `_wave`: candidates are visited in ascending order of old
    rank (a topological order, so every link's new rank is known when a
    member is visited); a member's rank is recomputed from its present links
    without `ref`, and the wave goes on only through members whose rank fell.
    """
    lowered: dict[bytes, tuple[int, int, bytes]] = {}
    queued: set[bytes] = set()
    heap: list[tuple[int, bytes]] = []

    def enqueue_successors(of: bytes) -> None:
        for successor in timeline.successors(of):
            if successor not in queued:
                queued.add(successor)
                heapq.heappush(heap, (timeline.rank(successor), successor))  # type: ignore[misc]  # a member's

    enqueue_successors(ref)
    while heap:
        old_rank, member = heapq.heappop(heap)
        link_ranks = []
        for link in links_of(member):
            if link == ref:
                continue
            entry = lowered.get(link)
            link_rank = entry[1] if entry is not None else timeline.rank(link)
            if link_rank is not None:
                link_ranks.append(link_rank)
        new_rank = 1 + max(link_ranks) if link_ranks else 0
        if new_rank > old_rank:
            raise TimelineError(f"links_of({member!r}) does not match its stored rank")
        if new_rank < old_rank:
            lowered[member] = (old_rank, new_rank, timeline.member(member)[1])  # type: ignore[index]
            enqueue_successors(member)
    return lowered
