"""Ref numbers: every ref the timeline engine stores, as a store-wide number of 4 bytes.

Theory of operation
-------------------
A ref names a member in its timeline's rows: a message id (32 bytes) in a
tangle's timelines, author + seq + tag (56 bytes) in the spacetime, any
string of up to 256 bytes in `tangled linearize`. Ids are hashes and
spacetime refs begin with the author, so rows keyed by refs land on random
B-tree leaves: every batch dirtied leaves all over each table (each one
copied on write, its old copy left as a free page), and every row paid the
ref's length in its key, and again in the value of a successor row.

So the engine stores a ref's *number* instead: a u32, big-endian, given in
order of first use. Rows keyed by timeline number + ref number then take
new members at the right edge of their timeline's range, so a batch writes
to a few leaves at the end of each range, and a successor row is 8 bytes of
key and 4 of value.
Callers never see numbers: they pass refs in and get refs back, and the
engine translates at its edge (`storage.engine.timeline`,
`storage.engine.causal_timeline`, `storage.engine.causal_window`). Two
tables hold the numbering:

    tl-refs       ref -> number (u32 BE)
    tl-ref-names  number (u32 BE) -> ref

Numbers are store-wide: a message id has one number in its tangle's
timeline, the joined view and both their causal-time twins. A ref gets one
the first time a writer stores it, as a member or as the target of a link
(a pending reference names a ref no timeline holds yet), and keeps it:
numbers are never reused or deleted. A removed member's ref stays the
target of its successors' pending references, and `tangled reindex`, which
empties the views' tables, leaves these two alone, so a rebuild gives
every ref the number it had.

A store may keep some numbers elsewhere and shorten some refs: a
`RefHome` (one per transaction, given by the store's `RefHomes`) says which
refs it keeps the numbers of itself (the node keeps a message id's in its
`message-ids` row, beside where the message is: storage.feeds.message_ids),
and the form the two tables hold of the others (the node names a spacetime
ref's feed by its number). Without one, every ref is numbered here, as
it is. The form must be a function of the ref alone, and one-to-one.

`RefNumbers` serves one transaction. `find` looks a number up and never
assigns one: a read of a ref without a number writes nothing, the ref
being in no timeline. `assign` (writers only) numbers a ref that has none,
writing both rows at once so that readers in the same transaction see
them. The next number is the one after this `RefNumbers`' last, written with
LMDB's append, which refuses a key not above the table's last row: then
another one of the same transaction numbered since, and the last row says
where to go on. So two `RefNumbers` of one transaction never give out the
same one, and a run of assignments reads the table's end once. A ref
`find` saw without a number is remembered as such until assigned. What it
looked up or assigned is cached for its transaction only: a transaction
that aborts takes its numbers with it, and a cache outliving it would hand
them out again with no rows behind them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol

from tanglenode.storage.engine.keys import U32
from tanglenode.storage.errors import StoreDamaged, TimelineError

if TYPE_CHECKING:
    from tanglenode.storage.engine.txn import Cursor, Db, Txn

LAST_NUMBER = 0xFFFF_FFFF


class RefHome(Protocol):
    """Where one transaction keeps refs' numbers other than in `tl-refs` (module docstring)."""

    def keeps(self, ref: bytes) -> bool:
        """Whether `ref`'s number is kept here, not in `tl-refs`."""

    def number(self, ref: bytes) -> bytes | None:
        """The number of a ref kept here, None if it has none."""

    def keep(self, ref: bytes, number: bytes) -> None:
        """Record the number of a ref kept here."""

    def stored(self, ref: bytes, assign: bool) -> bytes | None:
        """The form of `ref` in `tl-refs` and `tl-ref-names`; None if it has none without
        `assign` (then it has no number either)."""

    def ref(self, stored: bytes) -> bytes:
        """The ref of a form `stored` gave."""

    def numbered(self) -> Iterator[tuple[bytes, bytes]]:
        """(ref, number) of every ref kept here with a number (`tangled check`)."""


class RefHomes(Protocol):
    """A store's `RefHome` for each transaction."""

    def home(self, txn: Txn) -> RefHome: ...


class RefNumbers:
    """The numbers of refs inside one transaction (see the module docstring)."""

    def __init__(self, txn: Txn, refs_db: Db, names_db: Db, home: RefHome | None = None) -> None:
        self._txn = txn
        self._home = home
        self._refs_db = refs_db  # tl-refs: ref -> number
        self._names_db = names_db  # tl-ref-names: number -> ref
        self._numbers: dict[bytes, bytes] = {}  # ref -> number, found or assigned here
        self._refs: dict[bytes, bytes] = {}  # number -> ref, the same pairs
        self._absent: set[bytes] = set()  # refs `find` saw without a number, until assigned
        self._last: Cursor | None = None  # a cursor on tl-ref-names, opened at the first assignment
        self._next = -1  # the number after our last assignment (-1: read the table's last)

    def find(self, ref: bytes) -> bytes | None:
        """The number of `ref`, None if it has none (it is in no timeline)."""
        number = self._numbers.get(ref)
        if number is None:
            if ref in self._absent:
                return None
            home = self._home
            if home is None:
                number = self._txn.get(ref, None, self._refs_db)
            elif home.keeps(ref):
                number = home.number(ref)
            else:
                stored = home.stored(ref, assign=False)
                number = None if stored is None else self._txn.get(stored, None, self._refs_db)
            if number is None:
                self._absent.add(ref)
                return None
            self._numbers[ref] = number
            self._refs[number] = ref
        return number

    def assign(self, ref: bytes) -> bytes:
        """The number of `ref`, the next one if it has none yet (written at once)."""
        number = self._numbers.get(ref)
        if number is not None:
            return number
        number = self.find(ref)
        if number is not None:
            return number
        home = self._home
        stored = ref if home is None else home.stored(ref, assign=True)
        assert stored is not None  # given when assigning
        cursor = self._last
        if cursor is None:
            cursor = self._last = self._txn.cursor(self._names_db)
        following = self._next
        # The number after our own last one, unless another writer of this transaction
        # numbered since: LMDB's append refuses a key not above the last, and then the
        # table's last row says where to go on.
        if following < 0 or not cursor.put(_number(following), stored, append=True):
            following = U32.unpack(cursor.key())[0] + 1 if cursor.last() else 0
            if not cursor.put(_number(following), stored, append=True):
                raise StoreDamaged("tl-ref-names refused the next number")
        number = U32.pack(following)
        self._next = following + 1
        if home is not None and home.keeps(ref):
            home.keep(ref, number)
        else:
            self._txn.put(stored, number, db=self._refs_db)
        self._absent.discard(ref)
        self._numbers[ref] = number
        self._refs[number] = ref
        return number

    def assign_all(self, refs: list[bytes]) -> list[bytes]:
        """The numbers of `refs`, in order, numbering those without one (`assign`)."""
        known = self._numbers.get
        return [known(ref) or self.assign(ref) for ref in refs]

    def ref(self, number: bytes) -> bytes:
        """The ref numbered `number` (which a row of the engine holds)."""
        ref = self._refs.get(number)
        if ref is None:
            stored = self._txn.get(number, None, self._names_db)
            if stored is None:
                raise StoreDamaged(f"no ref has number {U32.unpack(number)[0]} (tl-ref-names)")
            ref = stored if self._home is None else self._home.ref(bytes(stored))
            self._refs[number] = ref
            self._numbers[ref] = number
        return ref


def _number(value: int) -> bytes:
    if value > LAST_NUMBER:
        raise TimelineError("every ref number is taken: the store holds 2**32 refs")
    return U32.pack(value)


def numbering_problems(
    txn: Txn, refs_db: Db, names_db: Db, home: RefHome | None = None
) -> list[str]:
    """`tangled check`'s look at the numbering: `tl-ref-names` must be `tl-refs` and the
    numbers kept elsewhere turned round, and no ref numbered in both."""
    numbers = {bytes(ref): bytes(number) for ref, number in txn.cursor(db=refs_db)}
    wrong = 0
    if home is not None:
        for ref, number in home.numbered():
            stored = home.stored(ref, assign=False)
            wrong += stored is None or stored in numbers
            if stored is not None:
                numbers[stored] = number
    for number, ref in txn.cursor(db=names_db):
        wrong += numbers.pop(bytes(ref), None) != bytes(number)
    wrong += len(numbers)  # refs that no number names
    return [f"tl-refs and tl-ref-names disagree on {wrong} refs"] if wrong else []
