"""Each atom's children in weave order, so a new sibling is placed in O(log N).

Theory of operation
-------------------
The children of one atom, siblings, follow one another in the weave in the
order of the sibling rule (docs/DOCUMENTS.md, "The weave and the sibling
rule"), each followed by its causal block. Walking them one by one to find
where a new one goes costs O(N) per insert, O(N^2) for a crowd typing at
one place. This index keeps, per atom that has ever been given a child by
an insert, its children in weave order, in chunks of at most `CHUNK`:

    doc-sibs  docno + cause mno + cause index + chunk (u32 each)  -> children: mno, index
                                                                     (u32 each), in order
              docno + cause mno + cause index + DIRECTORY         -> chunk numbers, in order

Placing a child is a binary search over the chunks (by their first child)
and then within one, with the rule as the comparison (the caller's
`goes_first`): O(log N) comparisons, two reads and at most three writes.
The answer is the child the new one follows and the one it precedes; the
engine puts the new piece right before the latter, or at the end of the
former's causal block when it comes last.

An atom gets an index at its second child: until then its one child, if
any, is the atom right after it in the weave whose cause it is (the next
atom of its run, or the one child an insert gave it), which the caller
hands in (`existing`) when the index is made. So typing, where each atom
has one child, writes no index at all.

A document is rebuilt (a proof cut it) with its index cleared first. The
index keeps, beside it, how many document messages were woven when this
build last wrote it (`mark_current`, at the end of every transaction that
wove); a store opened with another count (one woven before the index
existed, or by an older build since: it weaves without keeping the index)
weaves every document again first (storage/store.py), so a stale index is
never trusted.
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Callable
from typing import Any

from tanglenode.storage.feeds.layout import U32, U64

Atom = tuple[int, int]  # (mno, index) of an atom of the document
CHUNK = 128  # children per row, at most
DIRECTORY = 0xFFFFFFFF
# In `doc-sibs` (a docno no document has): how many document messages were woven when this
# build last wrote the index. Another count means a build without the index wove since.
WOVEN = b"\xff\xff\xff\xffwoven"


def index_current(txn: Any, db: Any, msgs_db: Any) -> bool:
    """Whether the index was written with every document message woven now: the count kept
    at its last write is the count of `doc-msgs` rows (one read and one stat)."""
    kept = txn.get(WOVEN, db=db)
    return kept is not None and U64.unpack(kept)[0] == txn.stat(msgs_db)["entries"]


def mark_current(txn: Any, db: Any, msgs_db: Any) -> None:
    """Keep the count of document messages woven, as the index knows them."""
    txn.put(WOVEN, U64.pack(txn.stat(msgs_db)["entries"]), db=db)


def _pack(atoms: list[Atom]) -> bytes:
    return struct.pack(f">{2 * len(atoms)}I", *(value for atom in atoms for value in atom))


def _unpack(raw: bytes) -> list[Atom]:
    values = struct.unpack(f">{len(raw) // 4}I", raw)
    return list(zip(values[0::2], values[1::2], strict=True))


class SiblingIndex:
    """One document's children index, inside one write transaction."""

    def __init__(self, txn: Any, db: Any, docno: int) -> None:
        self._txn = txn
        self._db = db
        self._prefix = U32.pack(docno)

    def _key(self, cause: Atom, chunk: int) -> bytes:
        return self._prefix + U32.pack(cause[0]) + U32.pack(cause[1]) + U32.pack(chunk)

    def _chunk(self, cause: Atom, number: int) -> list[Atom]:
        return _unpack(self._txn.get(self._key(cause, number), db=self._db))

    def indexed(self, cause: Atom) -> bool:
        """Whether `cause` has an index (two children or more)."""
        return self._txn.get(self._key(cause, DIRECTORY), db=self._db) is not None

    def place(
        self,
        cause: Atom,
        new: Atom,
        goes_first: Callable[[Atom], bool],
        existing: Callable[[], list[Atom]],
    ) -> tuple[Atom | None, Atom | None]:
        """Put `new` among `cause`'s children where the rule says (`goes_first(child)`:
        whether `new` precedes that child; false for a prefix of the children, true for the
        rest); returns (the child it follows, the child it precedes), None at either end.
        `existing()` gives the children the index does not know yet, when it has none."""
        raw = self._txn.get(self._key(cause, DIRECTORY), db=self._db)
        if raw is None:
            children = existing()
            if not children:  # its first child: nothing to order, nothing to index yet
                return None, None
            chunks = [0]
            self._txn.put(self._key(cause, 0), _pack(children), db=self._db)
        else:
            chunks = list(struct.unpack(f">{len(raw) // 4}I", raw))
        at = 0  # the chunk `new` goes in: before the first whose first child it precedes
        if len(chunks) > 1:
            firsts = _FirstChildren(self, cause, chunks)
            at = max(bisect.bisect_left(firsts, True, key=goes_first) - 1, 0)
        children = self._chunk(cause, chunks[at])
        slot = bisect.bisect_left(children, True, key=goes_first)
        before = children[slot - 1] if slot else self._last_of(cause, chunks, at - 1)
        after = children[slot] if slot < len(children) else self._first_of(cause, chunks, at + 1)
        children.insert(slot, new)
        if len(children) > CHUNK:  # split: the upper half in a new chunk, right after
            number = max(chunks) + 1
            self._txn.put(self._key(cause, number), _pack(children[CHUNK // 2 :]), db=self._db)
            children = children[: CHUNK // 2]
            chunks.insert(at + 1, number)
            raw = None
        self._txn.put(self._key(cause, chunks[at]), _pack(children), db=self._db)
        if raw is None:
            directory = struct.pack(f">{len(chunks)}I", *chunks)
            self._txn.put(self._key(cause, DIRECTORY), directory, db=self._db)
        return before, after

    def _first_of(self, cause: Atom, chunks: list[int], at: int) -> Atom | None:
        return self._chunk(cause, chunks[at])[0] if at < len(chunks) else None

    def _last_of(self, cause: Atom, chunks: list[int], at: int) -> Atom | None:
        return self._chunk(cause, chunks[at])[-1] if at >= 0 else None


class _FirstChildren:
    """The first child of each chunk, read when the binary search asks for it."""

    def __init__(self, index: SiblingIndex, cause: Atom, chunks: list[int]) -> None:
        self._index, self._cause, self._chunks = index, cause, chunks

    def __len__(self) -> int:
        return len(self._chunks)

    def __getitem__(self, at: int) -> Atom:
        return self._index._chunk(self._cause, self._chunks[at])[0]  # split chunks hold 64


def drop_document(txn: Any, db: Any, docno: int) -> None:
    """Forget one document's index (it is being woven again)."""
    prefix = U32.pack(docno)
    cursor = txn.cursor(db=db)
    if cursor.set_range(prefix):
        while cursor.key()[:4] == prefix:
            if not cursor.delete():
                break
