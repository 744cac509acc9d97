"""The joined view of tangles (the joining recipe), kept inside the write transaction.

Theory of operation
-------------------
A tangle (name, R) grows from its root: R is *joined* once stored, if it
roots tangle `name` (`root` and `previous` both None); any other member
joins once every id in its `previous` is a joined member of the same
tangle. A member that cannot join ever, whatever arrives later, is
*invalid* for the tangle, with a reason:

    root-not-a-root          R is stored but does not root tangle `name`
    previous-outside-tangle  an id in `previous` is stored but is not a member
                             of (name, R)  (the first reason wins over this one)

Every other member is *pending*: some id in its `previous` is missing, or a
member not joined (yet, or ever: a member waiting on an invalid one stays
pending, waiting for it). Each state is a function of the set of stored
messages alone, so every node holding the same messages agrees, whatever
order they came in.

Rows (the tables of storage.views.tangles):

    tangle-state    tangle no. (u32 BE) + member no. (u32 BE) -> b"j"     joined
                                              kind + count (u32) + previous ids
                                              (kind p: pending, r / o: invalid for
                                              the reason above; count: how many of
                                              its previous are not joined members)
    tangle-pending  previous id + tangle key + member id -> ""
                    one row per id in a not-joined member's `previous` that
                    is not a joined member of its tangle: "who waits on whom"
    tangle-joined   tangle key -> u32: how many members are joined (no row at 0)

A `tangle-state` key is numbers the timelines already hold, 8 bytes: the
tangle no. is the number of the tangle's timeline (`tl-names`: `\\x01` +
tangle key -> u32, given once when its first member is added), the member
no. is the member id's ref number (storage.engine.ref_numbers: given in
order of first use, store-wide, never reused). Every member is in its
tangle's timeline, added there (storage.views.timelines, the view called
before this one) before it is decided here, so both numbers exist by then,
and a member id with no ref number, or a tangle with no timeline, has no
row. Ref numbers grow with arrival, so each tangle's rows are appended at
the end of its own range: a batch writes to a leaf or two at each tangle's
end, where ids as keys put every row on a random leaf of its own. Reads by
id ask the ref number first (`tl-refs`, one get; within a write
transaction the timeline writer's numbers, which its add just looked up);
the tangles rooted at an id are found in `tl-names` (`\\x01` + root id)
and their rows read a tangle at a time. The numbers depend on the order
things arrived, so `check` and `content` compare rows as (tangle key +
member id, row), translated back (`state_rows`). A rebuild (`tangled
reindex`) numbers the timelines afresh and keeps the ref numbers, and always
rebuilds this view with them (they share the timeline tables).

Within a write transaction the rows go through `StateRows`, a companion of
the transaction's timeline writer: each row is read from LMDB once and kept
(a member's `previous` are its tangle's tips, mostly joined in the same
batch or the one before), and each write goes to LMDB at once and to the
cache: the transaction stays the one unit of crash safety, and a nested
transaction has a writer, and so a cache, of its own.

A message that arrives
1. as an id others named: its rows in `tangle-pending` (one seek on its id)
   mark each waiter of a tangle it is not a member of invalid;
2. as the root id of tangles it does not root: their members (one seek on
   `\\x01` + its id in `tl-names`, then each such tangle's rows) become
   invalid;
3. as a member: its state is decided from its root's and its previous'
   rows, one read each. Joining counts it, adds it to the joined order's
   timeline (`\\x02` + tangle key, storage.views.timelines.view_timeline)
   with its `previous` as links where the store keeps that optional view
   (`joined-order`, storage/view_choice.py), makes it a tip and its
   previous no longer tips
   (storage.views.tangles), and takes its waiters' rows: a waiter whose count
   falls to zero joins in turn (a loop over a stack, not recursion).

A message joins only after all its previous joined, so its add to the
joined timeline is one `ins` and never moves anyone; the joined timeline's
order is the tangle timeline's order restricted to joined members (their
ranks are equal). Each member joins once, and each waiting row is written
once and deleted once: the cost per message is its previous and its
waiters, never the tangle.

A message leaving (its feed cut back, storage.feeds.invalidation) undoes all of
this: a joined one takes its joined descendants out of the joined view
(descendants first, so each removal is one `del`), and they become pending
again; members made invalid by it are decided again. The rows end as if the
message had never arrived.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from tanglenode.protocol.message import Message, TangleLink
from tanglenode.storage.engine.timeline import TimelineWriter
from tanglenode.storage.engine.timeline_reader import TimelineReader
from tanglenode.storage.errors import StoreDamaged
from tanglenode.storage.feeds.layout import EMPTY, U32, tangle_key
from tanglenode.storage.views.tangles import TangleTables, tip_joined, untip_left
from tanglenode.storage.views.timelines import tangle_timeline, view_timeline

JOINED, PENDING, INVALID = "joined", "pending", "invalid"
ROOT_NOT_A_ROOT = "root-not-a-root"
PREVIOUS_OUTSIDE = "previous-outside-tangle"
MAX_WAITING_SHOWN = 16

_JOINED_ROW = b"j"
_PENDING, _ROOT_BAD, _OUTSIDE = b"p", b"r", b"o"
_REASONS = {_ROOT_BAD: ROOT_NOT_A_ROOT, _OUTSIDE: PREVIOUS_OUTSIDE}
_ID = 32
_UNREAD: Any = object()  # what StateRows' cache gives for a row it has not read


@dataclass(frozen=True, slots=True)
class MemberState:
    """A member's state in its tangle; `waiting` (pending) or `reason` (invalid)."""

    state: str
    waiting: tuple[bytes, ...] = ()
    reason: str | None = None

    def fields(self) -> dict[str, Any]:
        """As a placement reply has it: `state`, and `waiting` (pending) or `reason` (invalid)."""
        if self.state == PENDING:
            return {"state": self.state, "waiting": list(self.waiting)}
        if self.reason is not None:
            return {"state": self.state, "reason": self.reason}
        return {"state": self.state}


def joined_timeline(key: bytes) -> bytes:
    """The joined view's timeline of the tangle with this key."""
    return view_timeline(b"\x01" + key, "joined")


def tangle_key_of(timeline: bytes) -> bytes | None:
    """The tangle key of a tangle timeline name (any view or order), else None."""
    if timeline[:1] in (b"\x01", b"\x02"):
        return timeline[1:]
    if timeline[:2] == b"\x03\x01":
        return timeline[2:]
    return None


# -- rows ------------------------------------------------------------------------------------


def state_row(kind: bytes, count: int, previous: Sequence[bytes]) -> bytes:
    """A not-joined member's `tangle-state` value: kind, count (u32 BE), its previous ids."""
    return kind + count.to_bytes(4, "big") + b"".join(previous)


_row = state_row


def _split(row: bytes) -> tuple[bytes, int, list[bytes]]:
    """(kind, count, previous) of a not-joined member's row."""
    ids = row[5:]
    return (
        row[:1],
        int.from_bytes(row[1:5], "big"),
        [ids[i : i + _ID] for i in range(0, len(ids), _ID)],
    )


def _tangle_number(txn, tables: TangleTables, key: bytes) -> bytes | None:
    """The number of the timeline of the tangle with this key, None if it has none."""
    raw = txn.get(b"\x01" + key, db=tables.timelines.names)
    return None if raw is None else bytes(raw)


def _tangle_rows(txn, db, number: bytes) -> list[tuple[bytes, bytes]]:
    """(member no., row) of each `tangle-state` row of the tangle numbered `number`."""
    found = []
    cursor = txn.cursor(db=db)
    if cursor.set_range(number):
        for row_key, row in cursor:
            if row_key[:4] != number:
                break
            found.append((bytes(row_key[4:]), bytes(row)))
    return found


class StateRows:
    """`tangle-state` inside one write transaction, by (tangle key, member id).

    A companion of the transaction's timeline writer (`TimelineWriter.companion`,
    made as `partial(StateRows, tables)`): it shares the writer's ref numbers and
    lives as long as the writer's transaction. Each row is read from LMDB once and
    kept; each write goes to LMDB at once and is kept (no write waits for `finish`).
    """

    def __init__(
        self, tables: TangleTables, txn, _timeline_tables=None, *, retention=None, numbers=None
    ) -> None:
        self.txn, self.tables = txn, tables
        self._db = tables.tangle_state
        self.numbers = numbers if numbers is not None else tables.timelines.ref_numbers(txn)
        self._tangles: dict[bytes, bytes] = {}  # tangle key -> its timeline's number
        self._rows: dict[bytes, bytes | None] = {}  # tangle key + member -> row (None: none)

    def tangle(self, key: bytes) -> bytes | None:
        """The number of the tangle's timeline (None while it has none: not cached)."""
        number = self._tangles.get(key)
        if number is None:
            number = _tangle_number(self.txn, self.tables, key)
            if number is not None:
                self._tangles[key] = number
        return number

    def get(self, key: bytes, member: bytes) -> bytes | None:
        """`member`'s row in the tangle with this key, None if it has none."""
        both = key + member
        row = self._rows.get(both, _UNREAD)
        if row is not _UNREAD:
            return row
        row = None
        tangle = self.tangle(key)
        number = None if tangle is None else self.numbers.find(member)
        if number is not None:
            raw = self.txn.get(tangle + number, db=self._db)  # type: ignore[operator]
            row = None if raw is None else bytes(raw)
        self._rows[both] = row
        return row

    def put(self, key: bytes, member: bytes, row: bytes) -> None:
        tangle = self._tangles.get(key) or self.tangle(key)
        if tangle is None:
            raise StoreDamaged(f"a member of tangle {key.hex()} before its timeline")
        self.txn.put(tangle + self.numbers.assign(member), row, db=self._db)
        self._rows[key + member] = row

    def delete(self, key: bytes, member: bytes) -> None:
        tangle = self.tangle(key)
        number = None if tangle is None else self.numbers.find(member)
        if number is not None:
            self.txn.delete(tangle + number, db=self._db)  # type: ignore[operator]
        self._rows[key + member] = None

    def rooted_at(self, root: bytes, skip: set[bytes]) -> list[tuple[bytes, bytes]]:
        """(tangle key, member) of each member of a tangle rooted at `root`, bar the tangles
        in `skip`: the tangles from `tl-names`, then each one's rows."""
        found: list[tuple[bytes, bytes]] = []
        prefix = b"\x01" + root
        names = self.txn.cursor(db=self.tables.timelines.names)
        if not names.set_range(prefix):
            return found
        tangles = []
        for name, number in names:
            if name[: len(prefix)] != prefix:
                break
            tangles.append((bytes(name[1:]), bytes(number)))
        ref = self.numbers.ref
        for key, number in tangles:
            if key in skip:
                continue
            self._tangles[key] = number
            for member_number, row in _tangle_rows(self.txn, self._db, number):
                member = ref(member_number)
                self._rows[key + member] = row
                found.append((key, member))
        return found

    def finish(self) -> None:
        """The writer's transaction is done with: drop what is kept."""
        self._rows.clear()
        self._tangles.clear()


class _StateReader:
    """`tangle-state` rows of one tangle for a read (nothing kept beyond the call)."""

    def __init__(self, txn, tables: TangleTables, key: bytes) -> None:
        self.txn, self._db = txn, tables.tangle_state
        self.tangle = _tangle_number(txn, tables, key)
        self.numbers = tables.timelines.ref_numbers(txn)

    def get(self, member: bytes) -> bytes | None:
        if self.tangle is None:
            return None
        number = self.numbers.find(member)
        if number is None:
            return None
        raw = self.txn.get(self.tangle + number, db=self._db)
        return None if raw is None else bytes(raw)


def _present(txn, tables: TangleTables, msg_id: bytes) -> bool:
    return tables.ids.holds(txn, msg_id)


def member_state(txn, tables: TangleTables, key: bytes, member: bytes) -> MemberState | None:
    """The state of `member` in the tangle with this key, None if it is not a stored member."""
    rows = _StateReader(txn, tables, key)
    raw = rows.get(member)
    if raw is None:
        return None
    if raw == _JOINED_ROW:
        return MemberState(JOINED)
    kind, _count, previous = _split(raw)
    if kind != _PENDING:
        return MemberState(INVALID, reason=_REASONS[kind])
    waiting = [p for p in previous if rows.get(p) != _JOINED_ROW]
    return MemberState(PENDING, tuple(waiting[:MAX_WAITING_SHOWN]))


def state_names(txn, tables: TangleTables, key: bytes, members: Iterable[bytes]) -> list[str]:
    """The state of each member (its ref number and its row read, one get each)."""
    rows = _StateReader(txn, tables, key)
    names = []
    for member in members:
        raw = rows.get(member)
        if raw == _JOINED_ROW:
            names.append(JOINED)
        else:
            names.append(PENDING if raw is None or raw[:1] == _PENDING else INVALID)
    return names


def tangle_members(txn, tables: TangleTables, key: bytes, limit: int) -> list[bytes]:
    """The member ids of the first `limit` rows of the tangle with this key, in the order
    their ids were first numbered (about the order they, or a reply naming them, arrived)."""
    tangle = _tangle_number(txn, tables, key)
    if tangle is None:
        return []
    found = []
    names = tables.timelines.ref_names
    cursor = txn.cursor(db=tables.tangle_state)
    if cursor.set_range(tangle):
        for looked, row_key in enumerate(cursor.iternext(values=False)):
            if looked >= limit or row_key[:4] != tangle:
                break
            member = txn.get(bytes(row_key[4:]), db=names)
            if member is not None:
                found.append(bytes(member))
    return found


def state_rows(txn, tables: TangleTables) -> Iterator[tuple[bytes, bytes]]:
    """Every `tangle-state` row as (tangle key + member id, row): what the rows say whatever
    numbers this store gave. A key whose numbers name no tangle timeline or no ref comes as
    b"?" + the key itself."""
    keys: dict[bytes, bytes] = {}
    cursor = txn.cursor(db=tables.timelines.names)
    if cursor.set_range(b"\x01"):
        for name, number in cursor:
            if name[:1] != b"\x01":
                break
            keys[bytes(number)] = bytes(name[1:])
    names = tables.timelines.ref_names
    for raw_key, row in txn.cursor(db=tables.tangle_state):
        raw_key = bytes(raw_key)
        key = keys.get(raw_key[:4])
        member = txn.get(raw_key[4:], db=names) if len(raw_key) == 8 else None
        if key is None or member is None:
            yield b"?" + raw_key, bytes(row)
        else:
            yield key + bytes(member), bytes(row)


# -- arrival ---------------------------------------------------------------------------------


class _Joiner:
    """The row work of one arrival or departure, inside the caller's transaction."""

    def __init__(self, rows: StateRows, order: TimelineWriter | None) -> None:
        self.rows, self.order = rows, order
        self.txn, self.tables = rows.txn, rows.tables

    def count_joined(self, key: bytes, change: int) -> None:
        """Add `change` to tangle `key`'s count of joined members (its row goes at zero)."""
        raw = self.txn.get(key, db=self.tables.tangle_joined)
        count = (0 if raw is None else U32.unpack(raw)[0]) + change
        if count:
            self.txn.put(key, U32.pack(count), db=self.tables.tangle_joined)
        else:
            self.txn.delete(key, db=self.tables.tangle_joined)

    def waiters(self, prefix: bytes) -> list[tuple[bytes, bytes]]:
        """(tangle key, member) of the `tangle-pending` rows under `prefix` (an id, or id + key)."""
        found = []
        cursor = self.txn.cursor(db=self.tables.tangle_pending)
        if cursor.set_range(prefix):
            for row in cursor.iternext(values=False):
                if row[: len(prefix)] != prefix:
                    break
                found.append((bytes(row[_ID:-_ID]), bytes(row[-_ID:])))
        return found

    def members_rooted_at(self, root: bytes, skip: set[bytes]) -> list[tuple[bytes, bytes]]:
        """(tangle key, member) of each member of a tangle rooted at `root`, bar those in `skip`."""
        return self.rows.rooted_at(root, skip)

    def decide(self, key: bytes, previous: Sequence[bytes]) -> tuple[bytes, list[bytes]]:
        """The kind a non-root member with these previous takes, and its not-joined previous."""
        txn, tables, state = self.txn, self.tables, self.rows.get
        kind = _PENDING
        root = key[:_ID]
        if state(key, root) is None and _present(txn, tables, root):
            kind = _ROOT_BAD
        waiting = []
        for p in previous:
            raw = state(key, p)
            if raw == _JOINED_ROW:
                continue
            waiting.append(p)
            if raw is None and kind == _PENDING and _present(txn, tables, p):
                kind = _OUTSIDE
        return kind, waiting

    def place(self, key: bytes, member: bytes, link: TangleLink, waiters: list[bytes]) -> None:
        """A member just stored (`waiters`: the members of this tangle that named it before
        it came): write its state, and join it if it can."""
        if link.is_root:
            self.join(key, member, (), waiters)
            return
        previous = link.previous or ()
        kind, waiting = self.decide(key, previous)
        for p in waiting:
            self.txn.put(p + key + member, EMPTY, db=self.tables.tangle_pending)
        if kind == _PENDING and not waiting:
            self.join(key, member, previous, waiters)
        else:
            self.rows.put(key, member, _row(kind, len(waiting), previous))

    def join(
        self,
        key: bytes,
        member: bytes,
        previous: Sequence[bytes],
        waiters: list[bytes] | None = None,
    ) -> None:
        """`member` joins; then each waiter whose last not-joined previous it was, and so on.

        `waiters`: `member`'s waiters in this tangle, if the caller read them already.
        """
        txn, tables, rows, order = self.txn, self.tables, self.rows, self.order
        timeline = joined_timeline(key) if order is not None else b""
        stack = [(member, previous)]
        joined = 0
        while stack:
            joining, links = stack.pop()
            rows.put(key, joining, _JOINED_ROW)
            joined += 1
            if order is not None:
                order.add(timeline, joining, links)
            tip_joined(txn, tables, key, joining, links)
            if joining == member and waiters is not None:
                found = waiters
            else:
                found = [waiter for _key, waiter in self.waiters(joining + key)]
            for waiter in found:
                txn.delete(joining + key + waiter, db=tables.tangle_pending)
                kind, count, waiter_previous = _split(rows.get(key, waiter))  # type: ignore[arg-type]
                if kind == _PENDING and count == 1:
                    stack.append((waiter, waiter_previous))
                else:
                    rows.put(key, waiter, _row(kind, count - 1, waiter_previous))
        self.count_joined(key, joined)

    def redecide(self, key: bytes, member: bytes) -> None:
        """A not-joined member whose root or previous changed presence: its kind again."""
        raw = self.rows.get(key, member)
        if raw is None or raw == _JOINED_ROW:
            return
        _kind, count, previous = _split(raw)
        kind, _waiting = self.decide(key, previous)
        if kind == _PENDING and count == 0:
            self.join(key, member, previous)
        else:
            self.rows.put(key, member, _row(kind, count, previous))


def join_message(rows: StateRows, order: TimelineWriter | None, message: Message) -> None:
    """Decide what `message`'s arrival changes (call after it is stored, indexed and in its
    tangles' timelines), with the transaction's `rows`; `order` writes the joined order's
    timelines, where the store keeps them."""
    joiner = _Joiner(rows, order)
    links = {tangle_key(message.tangle_root(n), n): link for n, link in message.tangles.items()}
    named_by: dict[bytes, list[bytes]] = {key: [] for key in links}
    for key, waiter in joiner.waiters(message.id):
        if key in named_by:
            named_by[key].append(waiter)
        else:  # named by a member of a tangle it is not in
            raw = rows.get(key, waiter)
            if raw is not None and raw[:1] == _PENDING:
                rows.put(key, waiter, _OUTSIDE + raw[1:])
    for key, member in joiner.members_rooted_at(message.id, set(links)):
        raw = rows.get(key, member)
        rows.put(key, member, _ROOT_BAD + raw[1:])  # type: ignore[index]
    for key, link in links.items():
        joiner.place(key, message.id, link, named_by[key])


# -- departure -------------------------------------------------------------------------------


def leave_message(
    rows: StateRows,
    order: TimelineWriter | None,
    reader: TimelineReader,
    message: Message,
    previous_of,
) -> None:
    """Undo `message`'s arrival; call once it is out of `message-ids` and its timelines.

    `previous_of(name, id)` gives a stored member's `previous` in tangle `name`.
    """
    joiner = _Joiner(rows, order)
    txn, tables = rows.txn, rows.tables
    links = {
        tangle_key(message.tangle_root(n), n): (n, link) for n, link in message.tangles.items()
    }
    for key, (name, link) in links.items():
        raw = rows.get(key, message.id)
        if raw == _JOINED_ROW:
            _unjoin(joiner, reader, key, name, message, lambda ref, n=name: previous_of(n, ref))
        else:
            for p in link.previous or ():
                txn.delete(p + key + message.id, db=tables.tangle_pending)
            rows.delete(key, message.id)
    for key, waiter in joiner.waiters(message.id):
        if key not in links:
            joiner.redecide(key, waiter)
    for key, member in joiner.members_rooted_at(message.id, set(links)):
        joiner.redecide(key, member)


def _unjoin(joiner: _Joiner, reader: TimelineReader, key: bytes, name: str, message, previous_of):
    """`message` (joined) leaves: it and its joined descendants leave the joined view."""
    txn, tables, rows = joiner.txn, joiner.tables, joiner.rows
    full = tangle_timeline(key[:_ID], name)
    gone = message.id
    previous = {gone: tuple(message.tangles[name].previous or ())}
    order: list[bytes] = []  # depth-first postorder over successors: descendants first
    seen = {gone}
    stack: list[tuple[bytes, list[bytes]]] = [
        (gone, _joined_successors(rows, reader, full, key, gone))
    ]
    while stack:
        node, todo = stack[-1]
        if todo:
            child = todo.pop()
            if child not in seen:
                seen.add(child)
                previous[child] = tuple(previous_of(child))
                stack.append((child, _joined_successors(rows, reader, full, key, child)))
            continue
        stack.pop()
        order.append(node)
    timeline = joined_timeline(key)
    if joiner.order is not None:
        for member in order:  # no joined successor is left when a member goes: one `del` each
            joiner.order.remove(timeline, member, previous[member], lambda ref: previous[ref])
    joiner.count_joined(key, -len(order))
    for member in order:  # not joined any more; still members, but the one that left
        if member == gone:
            rows.delete(key, member)
        else:
            rows.put(key, member, _row(_PENDING, 0, previous[member]))
    untip_left(
        txn,
        tables,
        key,
        order,
        previous,
        lambda p: (
            rows.get(key, p) == _JOINED_ROW and not _joined_successors(rows, reader, full, key, p)
        ),
    )
    for member in order:
        if member == gone:
            continue
        kind, waiting = joiner.decide(key, previous[member])
        for p in waiting:
            txn.put(p + key + member, EMPTY, db=tables.tangle_pending)
        rows.put(key, member, _row(kind, len(waiting), previous[member]))
    for member in order:  # members that stayed out of the view and named one that left
        for successor in reader.successors(full, member):
            if successor not in seen:
                raw = rows.get(key, successor)
                if raw is None or raw == _JOINED_ROW:
                    continue
                kind, count, successor_previous = _split(raw)
                txn.put(member + key + successor, EMPTY, db=tables.tangle_pending)
                rows.put(key, successor, _row(kind, count + 1, successor_previous))


def _joined_successors(
    rows: StateRows, reader: TimelineReader, full: bytes, key: bytes, member: bytes
) -> list[bytes]:
    return [s for s in reader.successors(full, member) if rows.get(key, s) == _JOINED_ROW]
