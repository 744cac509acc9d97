"""Turning text splices into edit ops against a document's current text.

Theory of operation
-------------------
An editor (the CLI, an IPC client) says what it did in positions: splices
(`ins pos text`, `del pos len`), each against the text as the ones before
it left it. `plan` replays them on a piece table over the current text
(runs of original positions and of new text), so any sequence costs
O(splices^2) and never a copy of the document. What survives says it all:
original positions missing from the result are deleted, and each maximal
run of new text is one insert caused by the original atom just before it
(the root when it starts the text). Only then are positions turned into
atom ids, by the weave's position index, so the plan reads a few leaves.

`plan_at` does the same against an older revision (the edit's *base*): its
positions are the base's atoms, in text order, so each new run is caused by
the base atom just before it and each deleted position deletes its base
atom. Applied to the current weave, the edit then lands where it was made:
what others inserted since stays (their atoms are not the base's, so
nothing deletes them), and their deletes stay too. This is the merge a
causal tree gives for free (docs/DOCUMENTS.md, "Edits from a base").

`chunk` packs the ops into messages under a byte budget: a long insert is
cut into runs, each caused by the last atom of the one before (a
self-reference in the same message, an id once the previous message is
signed).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

from tanglenode.protocol.document import MAX_ATOMS, MAX_OPS, SELF, AtomRef, Delete, Insert
from tanglenode.storage.documents.weave import FLAGS, MNO, START, TEXT, VISIBLE, Weave
from tanglenode.storage.errors import BadSplice

Splice = tuple[str, int, object]  # ("ins", pos, text) | ("del", pos, length)
MAX_SPLICES = 10_000


class Planned(NamedTuple):
    """An op whose atoms are (mno, index) pairs of the document, not yet message ids."""

    kind: str  # "ins" or "del"
    mno: int
    index: int  # type: ignore[assignment]  # a field named as tuple's method index
    text: str  # ins: the run
    count: int  # type: ignore[assignment]  # del: atoms (shadows tuple.count)


def _edit_table(length: int, splices: Sequence[Splice]) -> list[tuple[int, int] | str]:
    """The text after `splices` as a list of original ranges (start, end) and new strings."""
    if len(splices) > MAX_SPLICES:
        raise BadSplice(f"at most {MAX_SPLICES} splices at once")
    table: list[tuple[int, int] | str] = [(0, length)] if length else []
    total = length
    for number, splice in enumerate(splices):
        if not (isinstance(splice, (tuple, list)) and len(splice) == 3):
            raise BadSplice(f"splice {number}: expected (kind, position, value)")
        kind, position, value = splice
        if type(position) is not int or not 0 <= position <= total:
            raise BadSplice(f"splice {number}: position {position!r} outside 0..{total}")
        at, table = _cut(table, position)
        if kind == "ins":
            if type(value) is not str or not value:
                raise BadSplice(f"splice {number}: ins needs non-empty text")
            table.insert(at, value)
            total += len(value)
        elif kind == "del":
            if type(value) is not int or not 0 < value <= total - position:
                raise BadSplice(
                    f"splice {number}: del length {value!r} outside 1..{total - position}"
                )
            end, table = _cut(table, position + value)
            del table[at:end]
            total -= value
        else:
            raise BadSplice(f"splice {number}: kind {kind!r} is neither 'ins' nor 'del'")
    return table


def _cut(table: list, position: int) -> tuple[int, list]:
    """Split the table at text position `position`; returns the index of the part after it."""
    for at, part in enumerate(table):
        size = len(part) if type(part) is str else part[1] - part[0]
        if position == 0:
            return at, table
        if position < size:
            if type(part) is str:
                table[at : at + 1] = [part[:position], part[position:]]
            else:
                table[at : at + 1] = [(part[0], part[0] + position), (part[0] + position, part[1])]
            return at + 1, table
        position -= size
    return len(table), table


def _new_runs(table: list) -> Iterator[tuple[int | None, str]]:
    """Each maximal run of new text in the edit table, with the original position just
    before it (None: it starts the text)."""
    before = None
    run = ""
    for part in [*table, None]:
        if type(part) is str:
            run += part
            continue
        if run:
            yield before, run
            run = ""
        if part is not None:
            before = part[1] - 1


def _deleted_ranges(table: list, length: int) -> Iterator[tuple[int, int]]:
    """The original positions (start, end) the edit table no longer holds, in order."""
    cursor = 0
    for start, end in [*(part for part in table if type(part) is not str), (length, length)]:
        if start > cursor:
            yield cursor, start
        cursor = max(cursor, end)


def plan(weave: Weave, splices: Sequence[Splice]) -> list[Planned]:
    """The ops that turn the weave's frontier text into the text `splices` make of it."""
    length = weave.visible_total()
    table = _edit_table(length, splices)
    ops: list[Planned] = []
    for before, run in _new_runs(table):
        mno, index = (0, 0) if before is None else _atom(weave, before)
        ops.append(Planned("ins", mno, index, run, 0))
    for start, end in _deleted_ranges(table, length):
        ops.extend(_deletes(weave, start, end))
    return ops


def plan_at(
    base: Sequence[tuple[bytes, int]], root: bytes, splices: Sequence[Splice]
) -> tuple[list[Planned], list[bytes]]:
    """The ops that make of the revision whose atoms are `base` (message id, index per
    visible atom, in text order) the text `splices` make of it, whatever happened since:
    each new run is caused by the base atom just before it (`root`, the document's init,
    at the start), each deleted position deletes its base atom. Returns the ops, whose
    `mno` numbers the message ids in the list returned with them."""
    table = _edit_table(len(base), splices)
    numbers: dict[bytes, int] = {}

    def number(msg_id: bytes) -> int:
        if msg_id not in numbers:
            numbers[msg_id] = len(numbers)
        return numbers[msg_id]

    ops: list[Planned] = []
    for before, run in _new_runs(table):
        msg_id, index = (root, 0) if before is None else base[before]
        ops.append(Planned("ins", number(msg_id), index, run, 0))
    for start, end in _deleted_ranges(table, len(base)):
        for position in range(start, end):  # one op per run of one message's atoms
            msg_id, index = base[position]
            last = ops[-1] if ops else None
            if (
                last is not None
                and last.kind == "del"
                and last.mno == numbers.get(msg_id)
                and last.index + last.count == index
            ):
                ops[-1] = last._replace(count=last.count + 1)
            else:
                ops.append(Planned("del", number(msg_id), index, "", 1))
    return ops, list(numbers)


def _atom(weave: Weave, position: int) -> tuple[int, int]:
    leaf, slot, offset = weave.at_visible(position)
    piece = weave.piece(leaf, slot)
    return piece[MNO], piece[START] + offset


def _deletes(weave: Weave, start: int, end: int) -> Iterator[Planned]:
    """Delete ops for visible positions start .. end-1: one per run of one message's atoms."""
    leaf, slot, offset = weave.at_visible(start)
    left = end - start
    place: tuple[int, int] | None = (leaf, slot)
    while left > 0 and place is not None:
        piece = weave.piece(*place)
        if piece[FLAGS] & VISIBLE:
            take = min(left, len(piece[TEXT]) - offset)
            yield Planned("del", piece[MNO], piece[START] + offset, "", take)
            left -= take
            offset = 0
        place = weave.next_slot(*place)


def chunk(
    ops: Sequence[Planned],
    id_of: Callable[[int], bytes],
    budget: int,
    publish: Callable[[list], bytes],
) -> None:
    """Publish `ops` as few messages as fit `budget` content bytes each.

    `id_of(mno)` gives a document message's id; `publish(ops)` signs and
    applies one message's ops and returns its id.
    """
    current: list = []
    refs: set[bytes] = set()
    size, atoms = 40, 0

    def flush() -> bytes:
        nonlocal current, refs, size, atoms
        published = publish(current)
        current, refs, size, atoms = [], set(), 40, 0
        return published

    for op in ops:
        msg = id_of(op.mno)
        ref = AtomRef(msg, op.index)
        if op.kind == "del":
            index, left = op.index, op.count
            while left:
                cost = 24 + (0 if msg in refs else 35)
                full = size + cost > budget or len(current) >= MAX_OPS or atoms >= MAX_ATOMS
                if full and current:
                    flush()
                    continue
                take = min(left, MAX_ATOMS - atoms)
                current.append(Delete(AtomRef(msg, index), take))
                refs.add(msg)
                size += cost
                atoms += take
                index, left = index + take, left - take
            continue
        text = op.text
        while text:
            cost = 24 + (0 if ref.msg is None or ref.msg in refs else 35)
            room = budget - size - cost
            full = room < 64 or len(current) >= MAX_OPS or atoms >= MAX_ATOMS
            if full and current:
                last = flush()
                if ref.msg is SELF:
                    ref = AtomRef(last, ref.index)
                continue
            piece = _fit(text[: MAX_ATOMS - atoms], max(room, 4))
            current.append(Insert(ref, piece))
            if ref.msg is not None:
                refs.add(ref.msg)
            size += cost + len(piece.encode())
            atoms += len(piece)
            ref = AtomRef(SELF, atoms - 1)
            text = text[len(piece) :]
    if current:
        flush()


def _fit(text: str, budget: int) -> str:
    """The longest prefix of `text` whose UTF-8 form fits `budget` bytes (at least one char)."""
    if len(text.encode()) <= budget:
        return text
    low, high = 1, len(text)
    while low < high:
        middle = (low + high + 1) // 2
        if len(text[:middle].encode()) <= budget:
            low = middle
        else:
            high = middle - 1
    return text[:low]
