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

Rows (storage.feeds.layout):

    tangle-state    tangle key + member id -> b"j"                      joined
                                              kind + count (u32) + previous ids
                                              (kind p: pending, r / o: invalid for
                                              the reason above; count: how many of
                                              its previous are not joined members)
    tangle-pending  previous id + tangle key + member id -> ""
                    one row per id in a not-joined member's `previous` that
                    is not a joined member of its tangle: "who waits on whom"
    tangle-joined   tangle key -> u32: how many members are joined (no row at 0)

A message that arrives
1. as an id others named: its rows in `tangle-pending` (one seek on its id)
   mark each waiter of a tangle it is not a member of invalid;
2. as the root id of tangles it does not root: their members (one seek on
   its id in `tangle-state`) become invalid;
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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tanglenode.protocol.message import Message, TangleLink
from tanglenode.storage.engine.timeline import TimelineWriter
from tanglenode.storage.engine.timeline_reader import TimelineReader
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


def _state(txn, tables: TangleTables, key: bytes, member: bytes) -> bytes | None:
    raw = txn.get(key + member, db=tables.tangle_state)
    return None if raw is None else bytes(raw)


def _present(txn, tables: TangleTables, msg_id: bytes) -> bool:
    return txn.get(msg_id, db=tables.message_ids) is not None


def member_state(txn, tables: TangleTables, key: bytes, member: bytes) -> MemberState | None:
    """The state of `member` in the tangle with this key, None if it is not a stored member."""
    raw = _state(txn, tables, key, member)
    if raw is None:
        return None
    if raw == _JOINED_ROW:
        return MemberState(JOINED)
    kind, _count, previous = _split(raw)
    if kind != _PENDING:
        return MemberState(INVALID, reason=_REASONS[kind])
    waiting = [p for p in previous if _state(txn, tables, key, p) != _JOINED_ROW]
    return MemberState(PENDING, tuple(waiting[:MAX_WAITING_SHOWN]))


def state_names(txn, tables: TangleTables, key: bytes, members: Iterable[bytes]) -> list[str]:
    """The state of each member (one row read each)."""
    names = []
    for member in members:
        raw = _state(txn, tables, key, member)
        if raw == _JOINED_ROW:
            names.append(JOINED)
        else:
            names.append(PENDING if raw is None or raw[:1] == _PENDING else INVALID)
    return names


# -- arrival ---------------------------------------------------------------------------------


class _Joiner:
    """The row work of one arrival or departure, inside the caller's transaction."""

    def __init__(self, txn, tables: TangleTables, order: TimelineWriter | None) -> None:
        self.txn, self.tables, self.order = txn, tables, order

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
        found = []
        cursor = self.txn.cursor(db=self.tables.tangle_state)
        at = cursor.set_range(root)
        while at and cursor.key()[:_ID] == root:
            row = bytes(cursor.key())
            key = row[:-_ID]
            if key in skip:  # jump past the whole tangle
                at = cursor.set_range(key + b"\xff" * (_ID + 1))
                continue
            found.append((key, row[-_ID:]))
            at = cursor.next()
        return found

    def decide(self, key: bytes, previous: Sequence[bytes]) -> tuple[bytes, list[bytes]]:
        """The kind a non-root member with these previous takes, and its not-joined previous."""
        txn, tables = self.txn, self.tables
        kind = _PENDING
        root = key[:_ID]
        if _state(txn, tables, key, root) is None and _present(txn, tables, root):
            kind = _ROOT_BAD
        waiting = []
        for p in previous:
            raw = _state(txn, tables, key, p)
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
            self.txn.put(
                key + member, _row(kind, len(waiting), previous), db=self.tables.tangle_state
            )

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
        txn, tables = self.txn, self.tables
        timeline = joined_timeline(key)
        stack = [(member, previous)]
        joined = 0
        while stack:
            joining, links = stack.pop()
            txn.put(key + joining, _JOINED_ROW, db=tables.tangle_state)
            joined += 1
            if self.order is not None:
                self.order.add(timeline, joining, links)
            tip_joined(txn, tables, key, joining, links)
            if joining == member and waiters is not None:
                found = waiters
            else:
                found = [waiter for _key, waiter in self.waiters(joining + key)]
            for waiter in found:
                txn.delete(joining + key + waiter, db=tables.tangle_pending)
                kind, count, waiter_previous = _split(_state(txn, tables, key, waiter))  # type: ignore[arg-type]
                if kind == _PENDING and count == 1:
                    stack.append((waiter, waiter_previous))
                else:
                    row = _row(kind, count - 1, waiter_previous)
                    txn.put(key + waiter, row, db=tables.tangle_state)
        self.count_joined(key, joined)

    def redecide(self, key: bytes, member: bytes) -> None:
        """A not-joined member whose root or previous changed presence: its kind again."""
        raw = _state(self.txn, self.tables, key, member)
        if raw is None or raw == _JOINED_ROW:
            return
        _kind, count, previous = _split(raw)
        kind, _waiting = self.decide(key, previous)
        if kind == _PENDING and count == 0:
            self.join(key, member, previous)
        else:
            self.txn.put(key + member, _row(kind, count, previous), db=self.tables.tangle_state)


def join_message(txn, tables: TangleTables, order: TimelineWriter | None, message: Message) -> None:
    """Decide what `message`'s arrival changes (call after it is stored and indexed); `order`
    writes the joined order's timelines, where the store keeps them."""
    joiner = _Joiner(txn, tables, order)
    links = {tangle_key(message.tangle_root(n), n): link for n, link in message.tangles.items()}
    named_by: dict[bytes, list[bytes]] = {key: [] for key in links}
    for key, waiter in joiner.waiters(message.id):
        if key in named_by:
            named_by[key].append(waiter)
        else:  # named by a member of a tangle it is not in
            raw = _state(txn, tables, key, waiter)
            if raw is not None and raw[:1] == _PENDING:
                txn.put(key + waiter, _OUTSIDE + raw[1:], db=tables.tangle_state)
    for key, member in joiner.members_rooted_at(message.id, set(links)):
        raw = _state(txn, tables, key, member)
        txn.put(key + member, _ROOT_BAD + raw[1:], db=tables.tangle_state)  # type: ignore[index]
    for key, link in links.items():
        joiner.place(key, message.id, link, named_by[key])


# -- departure -------------------------------------------------------------------------------


def leave_message(
    txn,
    tables: TangleTables,
    order: TimelineWriter | None,
    reader: TimelineReader,
    message: Message,
    previous_of,
) -> None:
    """Undo `message`'s arrival; call once it is out of `message-ids` and its timelines.

    `previous_of(name, id)` gives a stored member's `previous` in tangle `name`.
    """
    joiner = _Joiner(txn, tables, order)
    links = {
        tangle_key(message.tangle_root(n), n): (n, link) for n, link in message.tangles.items()
    }
    for key, (name, link) in links.items():
        raw = _state(txn, tables, key, message.id)
        if raw == _JOINED_ROW:
            _unjoin(joiner, reader, key, name, message, lambda ref, n=name: previous_of(n, ref))
        else:
            for p in link.previous or ():
                txn.delete(p + key + message.id, db=tables.tangle_pending)
            txn.delete(key + message.id, db=tables.tangle_state)
    for key, waiter in joiner.waiters(message.id):
        if key not in links:
            joiner.redecide(key, waiter)
    for key, member in joiner.members_rooted_at(message.id, set(links)):
        joiner.redecide(key, member)


def _unjoin(joiner: _Joiner, reader: TimelineReader, key: bytes, name: str, message, previous_of):
    """`message` (joined) leaves: it and its joined descendants leave the joined view."""
    txn, tables = joiner.txn, joiner.tables
    full = tangle_timeline(key[:_ID], name)
    gone = message.id
    previous = {gone: tuple(message.tangles[name].previous or ())}
    order: list[bytes] = []  # depth-first postorder over successors: descendants first
    seen = {gone}
    stack: list[tuple[bytes, list[bytes]]] = [
        (gone, _joined_successors(txn, tables, reader, full, key, gone))
    ]
    while stack:
        node, todo = stack[-1]
        if todo:
            child = todo.pop()
            if child not in seen:
                seen.add(child)
                previous[child] = tuple(previous_of(child))
                stack.append((child, _joined_successors(txn, tables, reader, full, key, child)))
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
            txn.delete(key + member, db=tables.tangle_state)
        else:
            txn.put(key + member, _row(_PENDING, 0, previous[member]), db=tables.tangle_state)
    untip_left(
        txn,
        tables,
        key,
        order,
        previous,
        lambda p: (
            _state(txn, tables, key, p) == _JOINED_ROW
            and not _joined_successors(txn, tables, reader, full, key, p)
        ),
    )
    for member in order:
        if member == gone:
            continue
        kind, waiting = joiner.decide(key, previous[member])
        for p in waiting:
            txn.put(p + key + member, EMPTY, db=tables.tangle_pending)
        txn.put(key + member, _row(kind, len(waiting), previous[member]), db=tables.tangle_state)
    for member in order:  # members that stayed out of the view and named one that left
        for successor in reader.successors(full, member):
            if successor not in seen:
                raw = _state(txn, tables, key, successor)
                if raw is None or raw == _JOINED_ROW:
                    continue
                kind, count, successor_previous = _split(raw)
                txn.put(member + key + successor, EMPTY, db=tables.tangle_pending)
                txn.put(
                    key + successor,
                    _row(kind, count + 1, successor_previous),
                    db=tables.tangle_state,
                )


def _joined_successors(txn, tables, reader, full: bytes, key: bytes, member: bytes) -> list[bytes]:
    return [
        s for s in reader.successors(full, member) if _state(txn, tables, key, s) == _JOINED_ROW
    ]
