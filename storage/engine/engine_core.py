"""The timeline engine's hot path: one transaction's member rows, the forward wave, the placing.

Theory of operation
-------------------
`storage.engine.timeline` checks an event and keeps the tables; this module does
the work an event costs in proportion to the messages it raises
(docs/TIMELINES.md, "The engine"), with as little per message as it can:

- `Rows` holds one timeline's members as one write transaction sees them:
  a `Member` per ref read (rank, sort id, its order key, and, once asked
  for, its successors as `Member`s). Each row is read from LMDB once per
  transaction; ranks changed by waves are written back once, in `flush`.
  tl-succ rows are written at once (readers in the same transaction see
  them), and any successor list already loaded follows, in LMDB's order.
- Refs here are ref numbers (storage.engine.ref_numbers: 4 bytes, which
  sort as the numbers do); `storage.engine.timeline` translates. A member's
  row leaves its sort id out when the sort id is the ref itself (a tangle's
  message id), so such a member's sort id is read from `tl-ref-names` only
  when its order key is needed (`Rows.keyed`): when a wave raises it, not
  when it is merely a link or a successor the wave passes over.
- `wave` raises the successors of a new member transitively, visiting them
  in ascending order of old rank (so each is visited once, with its final
  rank); the marks it needs live on the `Member`s, numbered by wave, so
  nothing is cleared between events. Nothing is changed until the wave is
  known not to close a cycle.
- `place` puts the new key and every raised member's old and new keys
  through one walk of the order tree and computes every command from the
  positions the keys had before the change (the formulas are at `place`).

Written in Cython's pure-Python mode: this file runs as it is, and
`engine_core.pxd` gives the types when `make install` compiles it to
`engine_core_native` (`storage.engine.native`). Both builds give the same commands.
"""

from __future__ import annotations

from array import array
from struct import Struct
from typing import TYPE_CHECKING

from msgpack import packb as _packb

from tanglenode.storage.engine.engine_commands import Delete, Insert, Move
from tanglenode.storage.errors import CycleError

if TYPE_CHECKING:
    from tanglenode.storage.engine.engine_commands import Command
    from tanglenode.storage.engine.ordertree import OrderTree
    from tanglenode.storage.engine.txn import Cursor, Db, Txn

_U32 = Struct(">I")
_pack = _U32.pack
_unpack_from = _U32.unpack_from
_UNREAD = object()  # `Rows.members` miss marker (None means: read, not a member)
_new_command = tuple.__new__  # commands are named tuples: Move(src, dst) without __new__'s frame
_NO_HEAP = array("q")  # the wave's heap before its first raise (never written)
_ONE_INSERT = array("b", [1])  # the deltas of an event that raises nothing (never written)


class Member:
    """A present member: its rank, sort id and order key, and its marks in the current wave.

    Only bytes and numbers, so that the compiled build's `Member`s are not
    tracked by the cyclic garbage collector; successor lists live in `Rows`.
    `sort_id` and `key` are None until `Rows.keyed` reads the sort id (a
    row leaves it out when it is the ref's own: `stored` is then empty).
    """

    __slots__ = ("dirty", "key", "mark", "new_rank", "rank", "ref", "sort_id", "stored", "via")

    def __init__(self, ref: bytes, rank: int, sort_id: bytes | None, stored: bytes) -> None:
        self.ref = ref  # its ref number
        self.rank = rank
        self.sort_id = sort_id
        self.stored = stored  # what its row holds after the rank: the sort id, or b""
        self.key = None if sort_id is None else _pack(rank) + sort_id
        self.dirty = False
        self.mark = 0  # wave number: raised in it (+), a predecessor of its new member (-)
        self.new_rank = 0
        self.via = b""  # the ref of the member whose wave raised this one first (cycle reports)


class Rows:
    """One timeline's member, successor and pending rows inside one transaction."""

    def __init__(
        self, txn: Txn, nodes_db: Db, succ_db: Db, pending_db: Db, names_db: Db, prefix: bytes
    ) -> None:
        self.txn = txn
        self.nodes_db = nodes_db
        self.succ_db = succ_db
        self.pending_db = pending_db
        self.names_db = names_db  # tl-ref-names: number -> ref (a sort id left out of a row)
        self.prefix = prefix
        self.members: dict[bytes, Member | None] = {}  # ref -> Member, None: not a member
        self.succ: dict[bytes, tuple[Member, ...]] = {}  # ref -> its successors, once loaded
        self.dirty: list[Member] = []  # Members whose tl-nodes row must be written
        self.cursor: Cursor | None = None
        self.waves = 0

    def member(self, ref: bytes) -> Member | None:
        """The member `ref`, or None if it is not present."""
        found = self.members.get(ref, _UNREAD)
        if found is not _UNREAD:
            return found  # type: ignore[return-value]  # a Member or None: _UNREAD is not
        raw = self.txn.get(self.prefix + ref, None, self.nodes_db)  # positional: no kwargs
        if raw is None:
            self.members[ref] = None
            return None
        stored = raw[4:]
        member = Member(ref, _unpack_from(raw)[0], stored if stored else None, stored)
        self.members[ref] = member
        return member

    def keyed(self, member: Member) -> bytes:
        """`member`'s order key, reading its sort id (its ref's) if its row left it out."""
        if member.sort_id is None:
            sort_id = self.txn.get(member.ref, None, self.names_db)
            if sort_id is None:
                raise LookupError("a member's ref number names no ref (tl-ref-names)")
            member.sort_id = sort_id
            member.key = _pack(member.rank) + sort_id
        return member.key  # type: ignore[return-value]  # None only while sort_id is

    def successor_refs(self, ref: bytes) -> list[bytes]:
        """The refs tl-succ holds under `ref` (members that link to it), in LMDB's order."""
        cursor = self.cursor
        if cursor is None:
            cursor = self.cursor = self.txn.cursor(self.succ_db)
        if not cursor.set_key(self.prefix + ref):
            return []
        return list(cursor.iternext_dup(False, True))

    def successors(self, ref: bytes) -> tuple[Member, ...]:
        """The members that link to `ref`, loaded once per transaction.

        A tuple of objects the garbage collector does not track, so that the
        collector stops tracking it: collections stay cheap however many
        lists a transaction loads.
        """
        succ = self.succ.get(ref)
        if succ is not None:
            return succ
        cursor = self.cursor
        if cursor is None:
            cursor = self.cursor = self.txn.cursor(self.succ_db)
        if cursor.set_key(self.prefix + ref):
            refs = cursor.iternext_dup(False, True)
            succ = tuple([self.member(each) for each in refs])  # type: ignore[misc]  # members
        else:
            succ = ()
        self.succ[ref] = succ
        return succ

    def add_link(self, link: bytes, new: Member) -> None:
        """Write the tl-succ row link -> new; a loaded successor list of `link` follows."""
        self.txn.put(self.prefix + link, new.ref, True, True, False, self.succ_db)
        succ = self.succ.get(link)
        if succ is None:
            return
        ref = new.ref
        at = 0
        end = len(succ)
        while at < end and succ[at].ref < ref:
            at += 1
        self.succ[link] = (*succ[:at], new, *succ[at:])

    def admit(self, member: Member) -> None:
        self.members[member.ref] = member
        if not member.dirty:
            member.dirty = True
            self.dirty.append(member)

    def set_rank(self, member: Member, rank: int) -> None:
        member.rank = rank
        if member.sort_id is not None:
            member.key = _pack(rank) + member.sort_id
        if not member.dirty:
            member.dirty = True
            self.dirty.append(member)

    def forget(self, ref: bytes) -> None:
        """A member leaves (removal): its row goes now, and every cached successor list."""
        self.txn.delete(self.prefix + ref, db=self.nodes_db)
        found = self.members.get(ref)
        if found is not None:
            found.dirty = False
        self.members[ref] = None
        self.dirty = [member for member in self.dirty if member.ref != ref]
        self.succ = {}

    def pending(self, ref: bytes) -> int:
        raw = self.txn.get(self.prefix + ref, None, self.pending_db)
        return 0 if raw is None else _unpack_from(raw)[0]

    def set_pending(self, ref: bytes, count: int) -> None:
        if count:
            self.txn.put(self.prefix + ref, _pack(count), True, True, False, self.pending_db)
        else:
            self.txn.delete(self.prefix + ref, b"", self.pending_db)

    def flush(self) -> None:
        """Write the tl-nodes rows of the members whose rank or presence changed."""
        txn, db, prefix = self.txn, self.nodes_db, self.prefix
        for member in self.dirty:
            # rank + sort id; the sort id is left out when it is the ref's
            txn.put(prefix + member.ref, _pack(member.rank) + member.stored, True, True, False, db)
            member.dirty = False
        self.dirty = []


def add_event(
    rows: Rows, tree: OrderTree, ref: bytes, links: list[bytes], sort_id: bytes, stored: bytes
) -> list[Command]:
    """Add `ref` (links deduplicated and checked by the caller); its commands.

    `stored` is what its row keeps after the rank: `sort_id`, or b"" when the
    sort id is what the ref number stands for. Raises `CycleError` before
    anything is written.
    """
    present = []
    rank = 0
    for link in links:
        found = rows.member(link)
        if found is not None:
            present.append(found)
            if found.rank >= rank:
                rank = found.rank + 1
    new = Member(ref, rank, sort_id, stored)
    holders = rows.successor_refs(ref)  # members that waited for ref
    rows.succ[ref] = tuple([rows.member(holder) for holder in holders])  # type: ignore[misc]
    raised = wave(rows, new, present)

    for link in links:
        rows.add_link(link, new)
    missing = len(links) - len(present)
    if missing:
        rows.set_pending(ref, missing)
    for holder in holders:  # each waited for ref: one pending reference less
        rows.set_pending(holder, rows.pending(holder) - 1)
    rows.admit(new)
    return place(rows, tree, new, raised)


def wave(rows: Rows, new: Member, predecessors: list[Member]) -> list[Member]:
    """The members `new` raises, transitively, each with its final rank in `new_rank`.

    Visits raised members in ascending order of old rank (ties in the order
    they were reached) and returns them in that order, so that their old
    keys come nearly sorted (`place` sorts them cheaply); raises
    `CycleError` if a predecessor of `new` would rise (then `new` would
    precede itself). The heap (`_push`, `_pop`, over an int64 array) holds
    numbers: old rank times 2**32 plus the member's index among the raised.
    """
    rows.waves += 1
    number = rows.waves
    for member in predecessors:
        member.mark = -number
    raised: list[Member] = []  # in the order they were reached: the heap's numbers index it
    visited: list[Member] = []  # in the order they were visited: ascending old rank
    storage = _NO_HEAP  # allocated at the first raise: most events raise nothing
    heap = storage
    size = 0
    current = new
    candidate = new.rank + 1
    while True:
        for successor in rows.successors(current.ref):
            if successor.mark == number:
                if candidate > successor.new_rank:
                    successor.new_rank = candidate
                continue
            if candidate <= successor.rank:
                continue
            if successor.mark == -number:
                raise _cycle(rows, new, successor, current)
            successor.mark = number
            successor.new_rank = candidate
            successor.via = current.ref
            if size == len(storage):  # twice the room (a new array: no view holds the old)
                storage = storage + storage if size else array("q", bytes(8 * 16))
                heap = storage
            _push(heap, size, (successor.rank << 32) + len(raised))
            size += 1
            raised.append(successor)
        if not size:
            return visited
        current = raised[_pop(heap, size) & 0xFFFFFFFF]
        size -= 1
        visited.append(current)
        candidate = current.new_rank + 1


def _push(heap: array[int], size: int, value: int) -> None:
    """Add `value` to the min-heap `heap[:size]` (which has room for it)."""
    at = size
    while at > 0:
        parent = (at - 1) >> 1
        if heap[parent] <= value:
            break
        heap[at] = heap[parent]
        at = parent
    heap[at] = value


def _pop(heap: array[int], size: int) -> int:
    """Take the least value out of the min-heap `heap[:size]` (size > 0)."""
    least = heap[0]
    size -= 1
    last = heap[size]
    at = 0
    while True:
        child = 2 * at + 1
        if child >= size:
            break
        if child + 1 < size and heap[child + 1] < heap[child]:
            child += 1
        if heap[child] >= last:
            break
        heap[at] = heap[child]
        at = child
    heap[at] = last
    return least


def _cycle(rows: Rows, new: Member, successor: Member, current: Member) -> CycleError:
    loop = [new.ref, successor.ref]
    ref = current.ref
    while ref != new.ref:
        loop.append(ref)
        ref = rows.members[ref].via  # type: ignore[union-attr]  # the wave's are members
    return CycleError("it would come before itself", loop=loop)


def place(rows: Rows, tree: OrderTree, new: Member, raised: list[Member]) -> list[Command]:
    """Insert `new`'s key and move each raised member to its new key, in one tree walk.

    The commands are `ins` first, then one `mov` per raised member whose
    position changes, highest new key first, each numbered against the
    array the commands before it left. Every position follows from the
    positions the keys had before the change, which `tree.apply` returns:
    with the moves done so far being those of greater new keys, a member
    whose old key o had position p(o), going to new key n with insertion
    point p(n), goes

        from  p(o) + [new key < o] - #{moved old keys < o}
        to    p(n) + [new key < n] - #{moved old keys < n, o included}

    The counts come from a Fenwick tree over the old keys in key order
    (`_count_below`, `_mark`), so a wave of k members costs O(k log k).
    """
    count = len(raised)
    new_key: bytes = new.key  # type: ignore[assignment]  # made with its sort id: keyed
    if not count:  # most events: one insert
        ranks = array("q", bytes(8))
        tree.apply_into([new_key], _ONE_INSERT, ranks)
        return [_new_command(Insert, (ranks[0], new.sort_id))]
    # Slot 0: the new key; 1 + i: raised[i]'s old key; 1 + count + i: its new key. The
    # raised come in ascending old rank, so the sort mostly merges runs.
    keys = [new_key]
    for index in range(count):
        member = raised[index]
        keys.append(rows.keyed(member))
    for index in range(count):
        member = raised[index]
        keys.append(_pack(member.new_rank) + member.sort_id)  # type: ignore[operator]  # keyed
    total = 2 * count + 1
    order = sorted(range(total), key=keys.__getitem__)
    ordered = [keys[slot] for slot in order]
    deltas = array("b", bytes(total))
    olds = array("q", bytes(8 * total))  # per slot: how many old keys sort below it
    seen = 0
    for index in range(total):
        slot = order[index]
        olds[slot] = seen
        if 0 < slot <= count:
            deltas[index] = -1
            seen += 1
        else:
            deltas[index] = 1
    ranks = array("q", bytes(8 * total))
    tree.apply_into(ordered, deltas, ranks)
    before = array("q", bytes(8 * total))
    for index in range(total):
        slot = order[index]
        before[slot] = ranks[index]

    new_at = before[0]
    commands: list[Command] = [_new_command(Insert, (new_at, new.sort_id))]
    marks = array("q", bytes(8 * (count + 1)))  # Fenwick tree over old keys' indices: moved
    for index in range(total - 1, -1, -1):  # highest new key first
        slot = order[index]
        if slot <= count:
            continue
        old_at = before[slot - count]
        old_index = olds[slot - count]
        src = old_at - _count_below(marks, old_index)
        if new_at <= old_at:
            src += 1
        _mark(marks, old_index, count)
        dst = before[slot] - _count_below(marks, olds[slot])
        if new_key < keys[slot]:
            dst += 1
        if src != dst:
            commands.append(_new_command(Move, (src, dst)))
    for index in range(count):
        member = raised[index]
        member.rank = member.new_rank
        member.key = keys[1 + count + index]
        if not member.dirty:
            member.dirty = True
            rows.dirty.append(member)
    return commands


def _count_below(marks: array[int], index: int) -> int:
    """How many marked indices are below `index` (Fenwick prefix sum)."""
    total = 0
    while index > 0:
        total += marks[index]
        index &= index - 1
    return total


def _mark(marks: array[int], index: int, size: int) -> None:
    index += 1
    while index <= size:
        marks[index] += 1
        index += index & -index


def encode_log(commands: list[Command]) -> bytes:
    """One event's commands as its command-log row (storage.engine.engine_commands' format):
    msgpack of `[[1, src, dst], [0, pos, id], [2, pos], ...]`."""
    rows: list[tuple[int, ...] | tuple[int, int, bytes]] = []
    for command in commands:
        if type(command) is Move:
            rows.append((1, command[0], command[1]))
        elif type(command) is Insert:
            rows.append((0, command[0], command[1]))
        elif type(command) is Delete:
            rows.append((2, command[0]))
        else:
            raise TypeError(f"not a timeline command: {command!r}")
    return _packb(rows)
