"""A document's weave written out as the causal-tree paper's `weave5c` (docs/WEAVE.md).

Theory of operation
-------------------
The store keeps the weave's text atoms as pieces (storage/documents/weave.py)
and its backspaces as rows (`doc-dels`, `doc-undels`); the file form has
every atom in one string (protocol/weave_file.py). One walk over the pieces
writes each text atom, then the backspaces on it, each followed by its
undeletes: the paper's place for them, right after what they delete and
before the atom's text children. Backspaces on one atom follow the sibling
rule among themselves (descending weft1 of their messages, the higher index
first within one message), and so do the undeletes of one backspace.

An atom is named in the file by its author's feed and its place among that
author's atoms of the document: the author's woven messages by seq, each
message's atoms by index (the doc/init's root is the special (0, 0)).
`ExportedWeave.weft2` turns a weft (feed -> seq) into the yarns' last
offsets, so a past revision is one filtre away (protocol/weave_regex.py).
Reads the whole document's rows: O(atoms + backspaces), in one transaction.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from functools import cmp_to_key, partial

from tanglenode.protocol.weave_file import (
    BACKSPACE,
    MAX_ATOMS,
    MAX_YARNS,
    AtomKey,
    encode,
    reach_weft2,
)
from tanglenode.storage.documents.rows import (
    R_AUTHOR,
    R_SEGMENTS,
    R_SEQ,
    R_WEFT,
    DocumentTables,
    Weft,
    open_weave,
    read_meta,
    unpack,
    weft_greater,
)
from tanglenode.storage.documents.weave import (
    CAUSE_INDEX,
    CAUSE_MNO,
    ERASED_PIECE,
    FLAGS,
    MNO,
    START,
    TEXT,
)
from tanglenode.storage.errors import StorageError
from tanglenode.storage.feeds.layout import U32

ERASED_SYMBOL = "\ufffd"  # what the file holds for each atom of an erased edit


class Unexportable(StorageError):
    """A document the weave5c form cannot hold: a text atom U+0008 would read as a backspace."""


@dataclass(frozen=True, slots=True)
class ExportedWeave:
    weave: str  # weave5c
    frame: tuple[bytes, ...]  # the feed of yarn 1, 2, ...
    marks: dict[bytes, tuple[list[int], list[int]]]  # feed -> (seqs, n of each's last atom)

    def weft2(self, weft: Weft) -> dict[int, int]:
        """The yarns' last offsets inside `weft` (feed -> seq)."""
        reach: dict[bytes, int] = {}
        for feed, (seqs, lasts) in self.marks.items():
            at = bisect_right(seqs, weft.get(feed, 0))
            if at:
                reach[feed] = lasts[at - 1]
        return reach_weft2(self.frame, reach)


def export_weave(txn, tables: DocumentTables, docno: int) -> ExportedWeave:
    """The document's weave5c and frame (see the module doc); `Unexportable` if it holds a
    text atom U+0008, or more atoms or yarns than a weave file may (`doc import` reads
    what this writes)."""
    messages = _messages(txn, tables, docno)
    places = _places(messages)
    dels = _named(txn, tables.dels, docno)
    undels = _named(txn, tables.undels, docno)
    by_rule = cmp_to_key(partial(_sibling_cmp, messages))

    def key(mno: int, index: int) -> AtomKey:
        if mno == 0:
            return None
        author, base = places[mno]
        return author, base + index

    atoms: list[tuple[str, AtomKey, AtomKey]] = []
    meta = read_meta(txn, tables, docno)
    for pieces in open_weave(txn, tables, docno, meta).leaves():
        for piece in pieces:
            mno, start, text = piece[MNO], piece[START], piece[TEXT]
            if mno == 0:
                continue
            if piece[FLAGS] & ERASED_PIECE:  # in place, its characters gone: U+FFFD each
                text = ERASED_SYMBOL * len(text)
            cause = key(piece[CAUSE_MNO], piece[CAUSE_INDEX])
            for offset, symbol in enumerate(text):
                if symbol == BACKSPACE:
                    raise Unexportable(
                        f"atom {start + offset} of version {mno} is U+0008, which the weave5c "
                        "form reads as a backspace"
                    )
                own = key(mno, start + offset)
                atoms.append((symbol, cause, own))
                for backspace in sorted(dels.get((mno, start + offset), ()), key=by_rule):
                    atoms.append((BACKSPACE, own, key(*backspace)))
                    for undelete in sorted(undels.get(backspace, ()), key=by_rule):
                        atoms.append((BACKSPACE, key(*backspace), key(*undelete)))
                cause = own
            if len(atoms) > MAX_ATOMS:
                raise Unexportable(f"past {MAX_ATOMS} atoms: more than a weave file holds")
    try:
        weave, frame = encode(atoms)
    except ValueError as error:  # more yarns than ids below U+D800 can number
        raise Unexportable(str(error)) from None
    if len(frame) > MAX_YARNS:  # as `doc import` would refuse it
        raise Unexportable(f"{len(frame)} yarns: more than a weave file holds ({MAX_YARNS})")
    marks: dict[bytes, tuple[list[int], list[int]]] = {}
    for mno in sorted(messages, key=lambda m: messages[m][1]):
        author, seq, _weft, count = messages[mno]
        if mno == 0 or not count:
            continue
        seqs, lasts = marks.setdefault(author, ([], []))
        seqs.append(seq)
        lasts.append(places[mno][1] + count - 1)
    return ExportedWeave(weave, frame, marks)


def _messages(txn, tables: DocumentTables, docno: int) -> dict[int, tuple[bytes, int, Weft, int]]:
    """mno -> (author, seq, weft, atoms introduced) of every message woven."""
    found: dict[int, tuple[bytes, int, Weft, int]] = {}
    prefix = U32.pack(docno)
    cursor = txn.cursor(db=tables.msgs)
    if cursor.set_range(prefix):
        for raw_key, raw in cursor:
            if raw_key[:4] != prefix:
                break
            record = unpack(raw)
            count = sum(segment[1] for segment in record[R_SEGMENTS])
            found[U32.unpack(raw_key[4:8])[0]] = (
                record[R_AUTHOR],
                record[R_SEQ],
                record[R_WEFT],
                count,
            )
    return found


def _places(messages: dict[int, tuple[bytes, int, Weft, int]]) -> dict[int, tuple[bytes, int]]:
    """mno -> (author, n of its first atom among the author's atoms of the document)."""
    places: dict[int, tuple[bytes, int]] = {}
    counted: dict[bytes, int] = {}
    for mno in sorted(messages, key=lambda m: messages[m][1]):
        if mno == 0:
            continue
        author, _seq, _weft, count = messages[mno]
        places[mno] = (author, counted.get(author, 0))
        counted[author] = counted.get(author, 0) + count
    return places


def _named(txn, db, docno: int) -> dict[tuple[int, int], list[tuple[int, int]]]:
    """`doc-dels` or `doc-undels` of the document: each atom -> the atoms naming it."""
    found: dict[tuple[int, int], list[tuple[int, int]]] = {}
    prefix = U32.pack(docno)
    cursor = txn.cursor(db=db)
    if not cursor.set_range(prefix):
        return found
    for raw_key, value in cursor:
        if raw_key[:4] != prefix:
            break
        target, first, by_mno, by_index = (
            U32.unpack(raw_key[at : at + 4])[0] for at in (4, 8, 12, 16)
        )
        for step in range(U32.unpack(value)[0]):
            found.setdefault((target, first + step), []).append((by_mno, by_index + step))
    return found


def _sibling_cmp(messages: dict, a: tuple[int, int], b: tuple[int, int]) -> int:
    """The sibling rule: descending weft1 of the messages, then the higher index first."""
    if a[0] == b[0]:
        return b[1] - a[1]
    weft_a, weft_b = messages[a[0]][2], messages[b[0]][2]
    return -1 if weft_greater(weft_a, weft_b) else 1
