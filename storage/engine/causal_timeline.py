"""The causal-time timelines (docs/TIMELINES.md), kept incrementally on disk.

Theory of operation
-------------------
Every timeline N (the spacetime, each tangle) has a twin `\\x03 + N` that
holds the same members in the causal-time order: causality first, then the
smallest (claimed time, sort id). Each member has a key that depends only
on its present ancestors (storage.engine.causal_key), so the order is the members
sorted by key, kept in an order tree (storage.engine.ordertree) under the twin's
own timeline number, with the same meta row and command log as a rank-order
timeline: every read of timelines (orders, placements, command logs,
subscriptions) works on the twin unchanged.

Adding member n with links L, time t, in the caller's write transaction,
after the rank engine added it to N (the twin reads N's successor rows,
`tl-succ`, and keeps none of its own):

1. key(n) = max over the present links l of `extend(key(l), T(n))` (T(n)
   alone without present links); height(n) = 1 + max height(l), or 0.
2. Forward wave: the members that linked to n before it came (pending
   references, placed as if the link were absent) and their descendants can
   only rise, key and height both. They are visited in ascending order of
   old height, a topological order of what the wave can reach, so each is
   visited once with its final values: new = max(old, what each risen link
   gives). The wave goes on only through members that rose. A wave that
   would raise a member of L means a cycle: `CycleError`, nothing written.
3. `ins pos id` for n, then `mov from to` for each risen member whose
   position changes, highest new key first, each numbered against the array
   the commands before it left. One event of the log, same transaction.

Removing member r (a feed found invalid) is the mirror: a lowering wave from
r's successors recomputes each key and height from the member's present
links other than r (the caller gives `links_of`), in ascending order of old
height, going on only through members that fell; then `del pos` and the
moves, lowest new key first. Afterwards the twin is what it would be had r
never come; the successors' pending references to r stay in N's `tl-succ`.

Tables (`TimelineTables`): `ct-nodes` number + ref number -> height, time,
and the sort id and chain only where they are not the ref's and the own
element (storage.engine.causal_key.encode_row); `ct-time` number + time (u64
BE) + sort id -> ref number, the time index the window queries read
(storage.engine.causal_window). Ref numbers are the rank engine's
(storage.engine.ref_numbers), given when it added the member: the twin
only looks them up. It takes refs and works on numbers, as `tl-succ` gives
them, so a wave never turns a number back into a ref but to read a row
that leaves the sort id out (it is the ref). Rows are cached per
transaction and written once, in `finish()`, which also trims each twin's
command log to the rank engine's retention (storage.engine.command_log).

Cost: an add costs its links, its wave (each risen member and its successor
list) and two tree paths per move; with honest clocks and links present on
arrival there is no wave, and the key is the message's own element. Nothing
is proportional to the timeline's length.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from tanglenode.protocol.message import Message
from tanglenode.storage.engine.causal_key import (
    MAX_CHAIN,
    MAX_TIME,
    decode_row,
    element,
    encode_row,
    extend,
    holds_sort_id,
    root_chain,
    tree_key,
)
from tanglenode.storage.engine.command_log import KEEP_ALL, LogRetention, append_event, trim_log
from tanglenode.storage.engine.engine_core import encode_log
from tanglenode.storage.engine.keys import U32
from tanglenode.storage.engine.ref_numbers import RefNumbers
from tanglenode.storage.engine.timeline import (
    Command,
    Delete,
    Insert,
    Move,
    TimelineTables,
    TimelineWriter,
    create_meta,
    lookup_meta,
    order_tree,
)
from tanglenode.storage.errors import CycleError, DuplicateEvent, TimelineError, UnknownEvent

if TYPE_CHECKING:
    from tanglenode.storage.engine.timeline import _Meta
    from tanglenode.storage.engine.txn import Cursor, Txn

__all__ = ["CausalWriter", "add_twins", "causal_name", "remove_twins"]


_UNKNOWN: Any = object()  # not looked up yet in this transaction (Any: a lookup keeps its type)


def causal_name(base: bytes) -> bytes:
    """The causal-time twin of timeline `base` (storage.views.timelines.view_timeline)."""
    return b"\x03" + base


class _Member:
    __slots__ = ("chain", "elem", "height", "number", "ref")

    def __init__(
        self, number: bytes, ref: bytes | None, height: int, elem: bytes, chain: bytes
    ) -> None:
        self.number = number  # its ref number: the key of its rows
        self.ref = ref  # None when not looked up: its row keeps a sort id that is not the ref
        self.height = height
        self.elem = elem
        self.chain = chain

    def key(self) -> bytes:
        return tree_key(self.chain, self.height, self.elem)


class _Twin:
    """One causal-time timeline inside one transaction."""

    def __init__(
        self,
        txn: Txn,
        tables: TimelineTables,
        meta: _Meta,
        base_prefix: bytes,
        cursor: Cursor,
        numbers: RefNumbers,
    ) -> None:
        self.txn = txn
        self.tables = tables
        self.numbers = numbers
        self.meta = meta
        self.prefix = U32.pack(meta.number)
        self.base_prefix = base_prefix
        self.tree = order_tree(txn, tables, meta)
        self.members: dict[bytes, _Member | None] = {}  # by ref number
        self.changed: dict[bytes, _Member] = {}  # rows to write in flush(), by ref number
        self.limit = MAX_CHAIN
        self.cursor = cursor  # on tl-succ, shared by the writer's twins

    def member(self, number: bytes) -> _Member | None:
        """The member with ref number `number`, None if it is not present."""
        found = self.members.get(number, False)
        if found is not False:
            return found  # type: ignore[return-value]
        raw = self.txn.get(self.prefix + number, db=self.tables.causal_nodes)
        if raw is None:
            found = None
        else:
            ref = None if holds_sort_id(raw) else self.numbers.ref(number)
            found = _Member(number, ref, *decode_row(raw, ref))
        self.members[number] = found
        return found

    def successors(self, number: bytes) -> list[bytes]:
        """The ref numbers of the members that link to `number`, from the base timeline's
        `tl-succ` rows."""
        cursor = self.cursor
        if not cursor.set_key(self.base_prefix + number):
            return []
        return list(cursor.iternext_dup())

    def store(self, member: _Member) -> None:
        self.changed[member.number] = member

    def append_log(self, commands: list[Command], retention: LogRetention) -> None:
        meta = self.meta
        row = encode_log(commands) if retention.logged else b""
        append_event(self.txn, self.tables.log, self.prefix, meta.version, row, retention)
        meta.version += len(commands)

    def flush(self, retention: LogRetention) -> None:
        """Write the cached rows, the log trimmed to `retention`, and the meta row."""
        put, prefix, db, meta = self.txn.put, self.prefix, self.tables.causal_nodes, self.meta
        for number, member in self.changed.items():
            row = encode_row(member.height, member.elem, member.chain, member.ref)
            put(prefix + number, row, db=db)
        self.changed.clear()
        self.tree.flush()
        meta.floor = trim_log(
            self.txn, self.tables.log, prefix, meta.version, meta.floor, retention
        )
        put(prefix, meta.encode(), db=self.tables.meta)


class CausalWriter:
    """Keeps the causal-time twins inside one write transaction; `finish()` before commit.

    Made by `TimelineWriter.companion(CausalWriter)`, which finishes it with
    the rank engine. If an `add` or `remove` raises, it left no trace.
    """

    def __init__(
        self,
        txn: Txn,
        tables: TimelineTables,
        limit: int = MAX_CHAIN,
        *,
        retention: LogRetention = KEEP_ALL,
        numbers: RefNumbers | None = None,
    ) -> None:
        self._txn = txn
        self._tables = tables
        self._limit = limit  # elements a key keeps; a store always uses MAX_CHAIN
        self._retention = retention  # the command logs' (storage.engine.command_log)
        # the rank engine's (`TimelineWriter.companion` hands them over), else our own
        self._numbers = tables.ref_numbers(txn) if numbers is None else numbers
        self._open: dict[bytes, _Twin] = {}
        # One cursor for every twin: LMDB adjusts each open cursor of a table at every
        # write to it, and the rank engine writes tl-succ rows for every link.
        self._succ = txn.cursor(db=tables.succ)

    def _twin(self, base: bytes, create: bool) -> _Twin | None:
        twin = self._open.get(base)
        if twin is not None:
            return twin
        base_number = self._txn.get(base, db=self._tables.names)
        if base_number is None:
            raise TimelineError(f"no timeline {base!r}: the rank engine adds first")
        name = causal_name(base)
        meta = lookup_meta(self._txn, self._tables, name)
        if meta is None:
            if not create:
                return None
            meta = create_meta(self._txn, self._tables, name)
        twin = _Twin(self._txn, self._tables, meta, bytes(base_number), self._succ, self._numbers)
        self._open[base] = twin
        twin.limit = self._limit
        return twin

    def add(
        self,
        base: bytes,
        ref: bytes,
        links: Sequence[bytes],
        time: int,
        sort_id: bytes | None = None,
    ) -> list[Command]:
        """Add member `ref` (claimed `time`, sorting by `sort_id`, default `ref`) to the twin
        of `base`, after the rank engine added it to `base` with the same links."""
        twin = self._twin(base, create=True)
        assert twin is not None
        find = self._numbers.find
        number = find(ref)
        if number is None:
            raise TimelineError(f"{ref!r} is not in {base!r}: the rank engine adds first")
        if twin.member(number) is not None:
            raise DuplicateEvent("already in the timeline")
        if not 0 <= time <= MAX_TIME:
            raise TimelineError("a time must fit in 64 bits")
        sort_id = ref if sort_id is None else sort_id
        elem = element(time, sort_id)
        # key(n) = max of extend(key(l), T(n)) over the present links, each at least
        # the root chain: a link whose key is below T(n) (honest clocks) offers only that.
        members, lookup, limit = twin.members, twin.member, twin.limit
        height, chain = -1, root_chain(elem)
        link_numbers = [number for number in map(find, links) if number is not None]
        for link in link_numbers:  # a link without a number is absent
            found = members.get(link, _UNKNOWN)
            if found is _UNKNOWN:
                found = lookup(link)
            if found is None:
                continue
            if found.height > height:
                height = found.height
            if found.chain > elem:
                offered = extend(found.chain, elem, limit)
                if offered > chain:
                    chain = offered
        new = _Member(number, ref, height + 1, elem, chain)
        successors = twin.successors(number)
        try:  # reads only: may raise, changing nothing
            risen = _rise(twin, new, set(link_numbers), successors) if successors else []
        except CycleError as error:
            error.loop = [self._numbers.ref(each) for each in error.loop]
            raise

        members[number] = new
        twin.store(new)
        twin.txn.put(twin.prefix + elem[1:9] + sort_id, number, db=self._tables.causal_times)
        tree = twin.tree
        commands: list[Command] = [Insert(tree.insert(new.key()), sort_id)]
        for member, old_key in sorted(risen, key=lambda item: item[0].key(), reverse=True):
            twin.store(member)
            new_key = member.key()
            if new_key != old_key:
                src = tree.delete(old_key)
                dst = tree.insert(new_key)
                if src != dst:
                    commands.append(Move(src, dst))
        twin.append_log(commands, self._retention)
        return commands

    def remove(
        self, base: bytes, ref: bytes, links_of: Callable[[bytes], Sequence[bytes]]
    ) -> list[Command]:
        """Take member `ref` out of the twin of `base`; `links_of(r)` gives the links any
        other member was added with. Afterwards the twin is what it would be had `ref`
        never been added. Raises `UnknownEvent` if it is not a member."""
        twin = self._twin(base, create=False)
        number = self._numbers.find(ref)
        found = None if twin is None or number is None else twin.member(number)
        if twin is None or found is None:
            raise UnknownEvent(f"{ref!r} is not in the causal-time timeline of {base!r}")
        fallen = _fall(twin, number, links_of)  # type: ignore[arg-type]  # reads only

        txn, tables, tree = self._txn, self._tables, twin.tree
        txn.delete(twin.prefix + number, db=tables.causal_nodes)  # type: ignore[operator]
        twin.changed.pop(number, None)  # type: ignore[arg-type]
        txn.delete(twin.prefix + found.elem[1:9] + _sort_id(found.elem), db=tables.causal_times)
        twin.members[number] = None  # type: ignore[index]
        commands: list[Command] = [Delete(tree.delete(found.key()))]
        for member, old_key in sorted(fallen, key=lambda item: item[0].key()):
            twin.store(member)
            src = tree.delete(old_key)
            dst = tree.insert(member.key())
            if src != dst:
                commands.append(Move(src, dst))
        twin.append_log(commands, self._retention)
        return commands

    def finish(self) -> None:
        for twin in self._open.values():
            twin.flush(self._retention)
        self._open.clear()


def _sort_id(elem: bytes) -> bytes:
    return elem[9:-2].replace(b"\x00\xff", b"\x00")


def _rise(
    twin: _Twin, new: _Member, links: set[bytes], successors: list[bytes]
) -> list[tuple[_Member, bytes]]:
    """The forward wave from `new` (whose successors are `successors`): each risen member,
    updated, with its old tree key. Refs here are ref numbers, `links` too.

    Members are updated in place only once every one is known (the caller
    writes them); a wave reaching a link of `new` raises `CycleError` first.
    """
    offers: dict[bytes, list[Any]] = {}  # ref number -> [height, chain] offered so far
    heap: list[tuple[int, bytes]] = []

    def offer(height: int, chain: bytes, ref: bytes) -> None:
        member = twin.member(ref)
        if member is None:
            return  # only present members link, but be safe against stale rows
        offered = extend(chain, member.elem, twin.limit)
        best = offers.get(ref)
        if best is None:
            offers[ref] = [max(member.height, height + 1), max(member.chain, offered)]
            heapq.heappush(heap, (member.height, ref))
        else:
            best[0] = max(best[0], height + 1)
            best[1] = max(best[1], offered)

    for successor in successors:
        offer(new.height, new.chain, successor)
    updates: list[tuple[_Member, int, bytes]] = []
    while heap:
        _old, ref = heapq.heappop(heap)
        member = twin.member(ref)
        height, chain = offers[ref]
        if height == member.height and chain == member.chain:  # type: ignore[union-attr]
            continue
        if ref in links:
            raise CycleError("it would come before itself", loop=[new.number, ref])
        updates.append((member, height, chain))  # type: ignore[arg-type]
        for successor in twin.successors(ref):
            offer(height, chain, successor)
    risen = []
    for member, height, chain in updates:
        risen.append((member, member.key()))
        member.height, member.chain = height, chain
    return risen


def _fall(
    twin: _Twin, gone: bytes, links_of: Callable[[bytes], Sequence[bytes]]
) -> list[tuple[_Member, bytes]]:
    """The lowering wave once ref number `gone` is gone: each fallen member, updated, with its
    old key. `links_of` takes and gives refs, the rest is numbers."""
    find, ref_of = twin.numbers.find, twin.numbers.ref
    new_values: dict[bytes, tuple[int, bytes]] = {}
    queued: set[bytes] = set()
    heap: list[tuple[int, bytes]] = []

    def enqueue_successors(of: bytes) -> None:
        for successor in twin.successors(of):
            member = twin.member(successor)
            if member is not None and successor not in queued:
                queued.add(successor)
                heapq.heappush(heap, (member.height, successor))

    enqueue_successors(gone)
    while heap:
        _old, successor = heapq.heappop(heap)
        member = twin.member(successor)
        assert member is not None  # queued: a member
        height, chain = -1, None
        for link in dict.fromkeys(map(find, links_of(ref_of(successor)))):
            if link is None or link == gone:  # no number: absent
                continue
            known = new_values.get(link)
            if known is None:
                found = twin.member(link)
                if found is None:
                    continue
                known = (found.height, found.chain)
            height = max(height, known[0])
            offered = extend(known[1], member.elem, twin.limit)
            if chain is None or offered > chain:
                chain = offered
        values = (height + 1, chain or root_chain(member.elem))
        old = (member.height, member.chain)
        if values == old:
            continue
        if values[0] > old[0] or values[1] > old[1]:
            raise TimelineError(f"links_of({ref_of(successor)!r}) does not match its stored key")
        new_values[successor] = values
        enqueue_successors(successor)
    fallen = []
    for successor, (height, chain) in new_values.items():
        member = twin.member(successor)
        assert member is not None  # new values: a member's
        fallen.append((member, member.key()))
        member.height, member.chain = height, chain
    return fallen


def add_twins(
    writer: TimelineWriter,
    message: Message,
    spacetime: tuple[bytes, bytes, Sequence[bytes]],
    tangles: dict[str, bytes],
) -> None:
    """Add an accepted message to the twins of the spacetime (base, ref, links) and of each
    of its tangles (name -> base; links: its `previous`), after the rank engine added it to
    each base."""
    twins = writer.companion(CausalWriter)
    base, ref, links = spacetime
    twins.add(base, ref, links, message.timestamp, message.id)
    for name, tangle in tangles.items():
        twins.add(tangle, message.id, message.tangles[name].previous or (), message.timestamp)


def remove_twins(
    writer: TimelineWriter,
    spacetime: tuple[bytes, bytes, Callable[[bytes], Sequence[bytes]]],
    tangles: Iterable[tuple[bytes, bytes, Callable[[bytes], Sequence[bytes]]]],
) -> None:
    """Take a message out of the twins of its tangles and of the spacetime, each given as
    (base, ref, links_of) (the mirror of `add_twins`)."""
    twins = writer.companion(CausalWriter)
    for base, ref, links_of in (*tangles, spacetime):
        twins.remove(base, ref, links_of)
