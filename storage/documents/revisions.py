"""Reading a document at any weft: revisions, dyeing, blame (docs/DOCUMENTS.md).

Theory of operation
-------------------
A revision at weft W is the weave restricted to the atoms inside W, minus
those with a backspace inside W that no undelete inside W cancels. One
walk over the weave's pieces, left to right, answers it: a piece of a
message outside W contributes nothing; a piece no backspace ever named
contributes its whole text (one check per piece, which is most of them);
only the pieces some backspace touched are looked at atom by atom, against
their message's `doc-dels` rows and those backspaces' `doc-undels` rows,
each read once per walk. The frontier (W = None) needs no rows at all:
every piece carries its visibility there.

Dyeing walks once with two wefts and tags each atom visible in either;
blame walks once and groups the visible atoms by the message that typed
them. All of it is O(pieces + backspace rows), memory O(result).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from tanglenode.storage.documents.rows import (
    R_AUTHOR,
    R_ID,
    R_SEQ,
    BlameSpan,
    DocumentTables,
    DyeSpan,
    Weft,
    kept_weave,
    open_weave,
    read_meta,
    rows_of,
    stored_record,
)
from tanglenode.storage.documents.weave import (
    ERASED_PIECE,
    FLAGS,
    MNO,
    START,
    TEXT,
    TOUCHED,
    VISIBLE,
    Weave,
)


class _History:
    """The rows of one document that a walk needs, each read once."""

    def __init__(self, txn, tables: DocumentTables, docno: int) -> None:
        self._txn = txn
        self._tables = tables
        self._docno = docno
        self._records: dict[int, tuple[bytes, int, bytes]] = {}
        self._dels: dict[int, list[tuple[int, int, int, int]]] = {}
        self._undels: dict[int, list[tuple[int, int, int, int]]] = {}

    def message(self, mno: int) -> tuple[bytes, int, bytes]:
        """(author, seq, id) of document message `mno`."""
        found = self._records.get(mno)
        if found is None:
            record = stored_record(self._txn, self._tables, self._docno, mno)
            found = self._records[mno] = (record[R_AUTHOR], record[R_SEQ], record[R_ID])
        return found

    def inside(self, mno: int, weft: Weft | None) -> bool:
        if weft is None:
            return True
        author, seq, _id = self.message(mno)
        return weft.get(author, 0) >= seq

    def _rows(self, db, cache: dict, mno: int) -> list[tuple[int, int, int, int]]:
        rows = cache.get(mno)
        if rows is None:
            rows = cache[mno] = rows_of(self._txn, db, self._docno, mno)
        return rows

    def live_backspace(self, mno: int, index: int, weft: Weft | None) -> int | None:
        """The mno of a backspace on atom (mno, index) live at `weft`, None if none is."""
        for first, count, bs_mno, bs_index in self._rows(self._tables.dels, self._dels, mno):
            offset = index - first
            live = 0 <= offset < count and self.inside(bs_mno, weft)
            if live and not self._undone(bs_mno, bs_index + offset, weft):
                return bs_mno
        return None

    def _undone(self, mno: int, index: int, weft: Weft | None) -> bool:
        for first, count, u_mno, _u_index in self._rows(self._tables.undels, self._undels, mno):
            if 0 <= index - first < count and self.inside(u_mno, weft):
                return True
        return False

    def visible(self, piece: list, weft: Weft | None) -> list[bool] | bool:
        """Whether each atom of `piece` is visible at `weft` (one bool for the whole piece):
        an erased piece's atoms never are, having no characters."""
        mno = piece[MNO]
        if mno == 0 or piece[FLAGS] & ERASED_PIECE:
            return False
        return self.present(piece, weft)

    def present(self, piece: list, weft: Weft | None) -> list[bool] | bool:
        """Whether each atom of `piece` is inside `weft` with no live backspace there, its
        characters erased or not (one bool for the whole piece)."""
        mno = piece[MNO]
        if mno == 0:
            return False
        if weft is None and not piece[FLAGS] & ERASED_PIECE:
            return bool(piece[FLAGS] & VISIBLE)
        if weft is not None and not self.inside(mno, weft):
            return False
        if not piece[FLAGS] & (TOUCHED | ERASED_PIECE):  # erased: backspaces leave no mark
            return True
        start = piece[START]
        return [self.live_backspace(mno, start + i, weft) is None for i in range(len(piece[TEXT]))]


def _weave(txn, tables: DocumentTables, docno: int) -> Weave:
    meta = read_meta(txn, tables, docno)
    return open_weave(txn, tables, docno, meta)


def _pieces(txn, tables: DocumentTables, docno: int) -> Iterator[list]:
    for pieces in _weave(txn, tables, docno).leaves():
        yield from pieces


def revision(txn, tables: DocumentTables, docno: int, weft: Weft | None) -> str:
    """The text at `weft` (None: the processed frontier)."""
    history = _History(txn, tables, docno)
    parts: list[str] = []
    for piece in _pieces(txn, tables, docno):
        shown = history.visible(piece, weft)
        if shown is True:
            parts.append(piece[TEXT])
        elif shown is not False:
            parts.append("".join(c for c, v in zip(piece[TEXT], shown, strict=True) if v))
    return "".join(parts)


@dataclass(frozen=True, slots=True)
class Located:
    """The current text, every text atom ever typed (shown or not) in weave order, and
    where each atom asked for is: (its position in the text, or where it would be if
    hidden; its position among every atom; whether it is shown)."""

    text: str
    every: str
    where: dict[tuple[int, int], tuple[int, int, bool]]
    pieces: int  # pieces walked: the work it took
    erased: frozenset[tuple[int, int]] = frozenset()  # atoms asked for without characters

    def span(self, first: tuple[int, int], last: tuple[int, int]) -> tuple[str, int, str]:
        """The range from atom `first` to atom `last` (either way round): its text now, where
        that starts, and every atom of it, shown or not. Both atoms must be located."""
        (v1, a1, _s1), (v2, a2, s2) = self.where[first], self.where[last]
        if a1 > a2:
            (v1, a1, _s1), (v2, a2, s2) = (v2, a2, s2), (v1, a1, _s1)
            first, last = last, first
        return self.text[v1 : v2 + int(s2)], v1, self.every[a1 : a2 + int(last not in self.erased)]


def locate(txn, tables: DocumentTables, docno: int, wanted: Iterable[tuple[int, int]]) -> Located:
    """`Located` for the atoms `wanted` ((mno, index) each; the root (0, 0) is at 0), at
    the frontier, in one walk over the pieces: O(pieces + wanted)."""
    indexes: dict[int, list[int]] = {}
    for mno, index in set(wanted):
        indexes.setdefault(mno, []).append(index)
    for found in indexes.values():
        found.sort()
    where: dict[tuple[int, int], tuple[int, int, bool]] = {}
    if 0 in (indexes.get(0) or ()):
        where[(0, 0)] = (0, 0, False)
    shown: list[str] = []
    every: list[str] = []
    empty: set[tuple[int, int]] = set()
    visible_count = every_count = pieces = 0
    for piece in _pieces(txn, tables, docno):
        pieces += 1
        mno, start, text = piece[MNO], piece[START], piece[TEXT]
        if mno == 0:
            continue
        visible = bool(piece[FLAGS] & VISIBLE)
        erased = bool(piece[FLAGS] & ERASED_PIECE)  # atoms without characters: none counted
        asked = indexes.get(mno)
        if asked:
            low = bisect.bisect_left(asked, start)
            for index in asked[low : bisect.bisect_left(asked, start + len(text))]:
                offset = index - start
                where[(mno, index)] = (
                    visible_count + (offset if visible else 0),
                    every_count + (0 if erased else offset),
                    visible,
                )
                if erased:
                    empty.add((mno, index))
        if visible:
            shown.append(text)
            visible_count += len(text)
        if not erased:
            every.append(text)
            every_count += len(text)
    return Located("".join(shown), "".join(every), where, pieces, frozenset(empty))


def visible_atoms(
    txn, tables: DocumentTables, docno: int, weft: Weft | None
) -> list[tuple[bytes, int]]:
    """The (message id, index) of every atom of the revision at `weft`, in text order."""
    history = _History(txn, tables, docno)
    atoms: list[tuple[bytes, int]] = []
    for piece in _pieces(txn, tables, docno):
        shown = history.visible(piece, weft)
        if shown is False:
            continue
        msg_id, start = history.message(piece[MNO])[2], piece[START]
        if shown is True:
            atoms.extend((msg_id, start + i) for i in range(len(piece[TEXT])))
        else:
            atoms.extend((msg_id, start + i) for i, v in enumerate(shown) if v)
    return atoms


def between(
    txn,
    tables: DocumentTables,
    docno: int,
    first: tuple[int, int],
    last: tuple[int, int],
    weft: Weft | None,
    *,
    deleted_too: bool = False,
) -> tuple[str, int, bool]:
    """The text the revision at `weft` shows of the atoms from `first` to `last` (each
    (mno, index)), inclusive, in weave order (with `deleted_too`: every text atom
    between them, shown or not); where it starts in that revision's text; and whether
    both atoms were met (the walk reads the weave up to `last`)."""
    history = _History(txn, tables, docno)
    before: list[str] = []
    inside: list[str] = []
    started = False
    for piece in _pieces(txn, tables, docno):
        length = len(piece[TEXT])
        shown = [True] * length if deleted_too else _each(history.visible(piece, weft), length)
        mno, start = piece[MNO], piece[START]
        erased = piece[FLAGS] & ERASED_PIECE  # its atoms are in the range, with no characters
        for offset, (char, visible) in enumerate(zip(piece[TEXT], shown, strict=True)):
            atom = (mno, start + offset)
            if atom == first:
                started = True
            if visible and mno != 0 and not erased:
                (inside if started else before).append(char)
            if atom == last:
                return "".join(inside) if started else "", len(before), started
    return "", len(before), False


def _each(shown: list[bool] | bool, length: int) -> list[bool]:
    return [shown] * length if type(shown) is bool else shown


def dye(
    txn, tables: DocumentTables, docno: int, old: Weft | None, new: Weft | None
) -> list[DyeSpan]:
    """Every atom visible at `old` or `new`, tagged with who inserted or removed it between."""
    history = _History(txn, tables, docno)
    spans: list[list] = []
    for piece in _pieces(txn, tables, docno):
        if piece[MNO] == 0:
            continue
        text, length = piece[TEXT], len(piece[TEXT])
        before, after = history.visible(piece, old), history.visible(piece, new)
        author = history.message(piece[MNO])[0]
        if type(before) is bool and type(after) is bool:  # untouched: the piece as one run
            if before or after:
                _dye_append(spans, text, author if after and not before else None, None)
            continue
        before, after = _each(before, length), _each(after, length)
        for offset in range(length):
            was, now = before[offset], after[offset]
            if not (was or now):
                continue
            removed = None
            if was and not now:
                by = history.live_backspace(piece[MNO], piece[START] + offset, new)
                removed = None if by is None else history.message(by)[0]
            _dye_append(spans, text[offset], author if now and not was else None, removed)
    return [DyeSpan(*span) for span in spans]


def _dye_append(
    spans: list[list], text: str, inserted: bytes | None, removed: bytes | None
) -> None:
    if spans and spans[-1][1] == inserted and spans[-1][2] == removed:
        spans[-1][0] += text
    else:
        spans.append([text, inserted, removed])


def blame(txn, tables: DocumentTables, docno: int, weft: Weft | None) -> list[BlameSpan]:
    """The revision at `weft` as spans, each with the author and message that typed it."""
    history = _History(txn, tables, docno)
    spans: list[list] = []
    for piece in _pieces(txn, tables, docno):
        erased = bool(piece[FLAGS] & ERASED_PIECE)
        shown = history.present(piece, weft) if erased else history.visible(piece, weft)
        if shown is False:
            continue
        author, _seq, msg_id = history.message(piece[MNO])
        text = (
            piece[TEXT]
            if shown is True
            else "".join(c for c, v in zip(piece[TEXT], shown, strict=True) if v)
        )
        if not text:
            continue
        if erased:  # its atoms, in place, without their characters; by whose request
            kept = kept_weave(txn, tables, msg_id)
            by = b"" if kept is None else kept[0]
            if spans and spans[-1][2] == msg_id and spans[-1][3] is not None:
                spans[-1][4] += len(text)
            else:
                spans.append(["", author, msg_id, by, len(text)])
        elif spans and spans[-1][2] == msg_id and spans[-1][3] is None:
            spans[-1][0] += text
        else:
            spans.append([text, author, msg_id, None, 0])
    return [BlameSpan(*span) for span in spans]
