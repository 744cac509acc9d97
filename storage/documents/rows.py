"""A document's rows in LMDB: the tables, their records, and the types reads return.

Shared by the engine (storage.documents.engine), the reads (storage.documents.revisions) and
FeedStore's document methods (storage.documents.ops). Backspaces are rows,
not pieces: `doc-dels` names, for a run of a message's text atoms, the
backspaces on them; `doc-undels` the same for backspaces.

    doc-index   doc id -> docno (u32)
    doc-meta    docno -> msgpack [doc id, title, author, seq, created, root node,
                                  next node, next mno, {}, [], group id | nil]
                (a meta written before private documents has no group: public; one
                written before `doc-authors` and `doc-tips` holds their rows in its
                two middle fields, moved to the tables when next written)
    doc-authors docno + author -> highest seq woven (u64): the frontier's weft
    doc-tips    docno + message id -> (empty): the woven tips
    doc-msgs    docno + mno -> msgpack [id, author, seq, timestamp, segments,
                                        inserted, deleted, weft]
                segments: [[first atom, count, kind, cited mno, cited index], ...]
                weft: {author: seq}, the message's document weft (storage.documents.engine)
    doc-ids     message id -> docno + mno
    doc-dels    docno + target mno + index + backspace mno + index -> count (u32)
    doc-undels  docno + backspace mno + index + undelete mno + index -> count (u32)
    doc-log     docno + version (u64) -> msgpack [id, [[kind, pos, text|len], ...]]
    doc-aside   doc id + message id -> msgpack [reason, detail]
    doc-comments docno + comment id -> msgpack [author, seq, timestamp, text,
                                  first id, first index, last id, last index, thread]
                (a comment on a range: its ends' atoms, thread nil; a reply: the ends
                nil, thread the id of the comment it answers: storage.documents.comments)
    doc-includes docno + inclusion id -> msgpack [author, seq, timestamp, at id,
                                  at index, source doc, first id, first index,
                                  last id, last index]   (storage.documents.transclusion)
    doc-feeds   author + seq (u64) -> docno + mno   (to find what a proof cuts out)
    doc-yarn    docno + author + seq (u64) -> mno   (an author's messages woven in a document)
    doc-waiting, doc-waits, doc-keys: private documents (storage.documents.sealed)
    doc-erased  message id -> msgpack [erase request id | b"" (purged), weave | nil]: the
                skeleton an erased message is woven from (storage.documents.erased)
    doc-queue   counter (u64) -> position: the backlog (storage.documents.backlog)
    doc-nodes, doc-pieces: the weave (storage.documents.weave)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

import lmdb
import msgpack

from tanglenode.storage.documents.weave import Weave
from tanglenode.storage.errors import StoreDamaged
from tanglenode.storage.feeds.layout import U32, U64

Weft = dict[bytes, int]
Splice = tuple[str, int, Any]  # ("ins", pos, text) | ("del", pos, length)


class DocumentInfo(NamedTuple):
    id: bytes
    title: str
    author: bytes
    created: int  # ms, the doc/init's timestamp
    length: int  # code points at the processed frontier
    versions: int  # edits woven in (the init is version 0)
    set_aside: int
    group: bytes | None = None  # the group a private document is sealed in


class Version(NamedTuple):
    number: int
    msg_id: bytes
    author: bytes
    timestamp: int
    inserted: int
    deleted: int


class SpliceEntry(NamedTuple):
    """One version's frontier splices, in order; `splices` None means: read a new snapshot."""

    version: int
    msg_id: bytes | None
    splices: tuple[tuple[str, int, Any], ...] | None


class DyeSpan(NamedTuple):
    text: str
    inserted_by: bytes | None
    removed_by: bytes | None


class BlameSpan(NamedTuple):
    text: str
    author: bytes
    msg_id: bytes
    # An erased edit's atoms shown at the weft, without their characters (`text` empty):
    # the erase request's id (b"" for this node's purge), and how many atoms.
    erased: bytes | None = None
    erased_atoms: int = 0


# Atom kinds in a message's segments.
ROOT, TEXT_ATOM, BACKSPACE, UNBACKSPACE = 0, 1, 2, 3
# doc-meta fields.
(
    M_ID,
    M_TITLE,
    M_AUTHOR,
    M_SEQ,
    M_CREATED,
    M_ROOT_NODE,
    M_NEXT_NODE,
    M_NEXT_MNO,
    M_YARNS,
    M_TIPS,
    M_GROUP,
) = range(11)
# doc-msgs fields.
R_ID, R_AUTHOR, R_SEQ, R_TIMESTAMP, R_SEGMENTS, R_INSERTED, R_DELETED, R_WEFT = range(8)
# doc-comments fields.
C_AUTHOR, C_SEQ, C_TIMESTAMP, C_TEXT, C_FIRST, C_FIRST_INDEX, C_LAST, C_LAST_INDEX, C_THREAD = (
    range(9)
)
# doc-includes fields.
I_AUTHOR, I_SEQ, I_TIMESTAMP, I_AT, I_AT_INDEX, I_SOURCE, I_FIRST, I_FIRST_INDEX = range(8)
I_LAST, I_LAST_INDEX = 8, 9

ROOT_SYMBOL = "\u0950"  # ॐ: the root's piece, never visible (reads skip mno 0)


@dataclass(frozen=True, slots=True)
class DocumentTables:
    index: Any
    meta: Any
    msgs: Any
    ids: Any
    dels: Any
    undels: Any
    log: Any
    aside: Any
    nodes: Any
    pieces: Any
    feeds: Any
    yarn: Any
    sibs: Any
    waiting: Any
    waits: Any
    queue: Any
    authors: Any
    tips: Any
    keys: Any
    comments: Any
    includes: Any
    erased: Any

    NAMES = (
        b"doc-index",
        b"doc-meta",
        b"doc-msgs",
        b"doc-ids",
        b"doc-dels",
        b"doc-undels",
        b"doc-log",
        b"doc-aside",
        b"doc-nodes",
        b"doc-pieces",
        b"doc-feeds",
        b"doc-yarn",
        b"doc-sibs",
        b"doc-waiting",
        b"doc-waits",
        b"doc-queue",
        b"doc-authors",
        b"doc-tips",
        b"doc-keys",
        b"doc-comments",
        b"doc-includes",
        b"doc-erased",
    )  # the named databases, in field order
    # Not the documents view's own: the keys this node was handed (storage.documents.sealed)
    # and the skeletons of the messages whose content it dropped (storage.documents.erased),
    # which `tangled reindex` keeps, as the weave it rebuilds depends on them (a purged
    # message's skeleton came from its content, which no message holds any longer).
    KEPT = (b"doc-keys", b"doc-erased")

    @classmethod
    def open(cls, env: lmdb.Environment) -> DocumentTables:
        with env.begin(write=True) as txn:
            return cls(*(env.open_db(name, txn=txn) for name in cls.NAMES))


def pack(value: Any) -> bytes:
    return msgpack.packb(value, use_bin_type=True)


def unpack(raw: bytes) -> Any:
    return msgpack.unpackb(raw, use_list=True, raw=False)


def join_wefts(wefts: Iterable[Weft]) -> Weft:
    """The least weft that holds each of `wefts` (the highest seq of each author)."""
    joined: Weft = {}
    for weft in wefts:
        for author, seq in weft.items():
            if joined.get(author, 0) < seq:
                joined[author] = seq
    return joined


def weft_greater(a: Weft, b: Weft) -> bool:
    """weft1 (docs/DOCUMENTS.md): seqs over feed keys ascending (absent = 0), lexicographic."""
    for feed in sorted(a.keys() | b.keys()):
        x, y = a.get(feed, 0), b.get(feed, 0)
        if x != y:
            return x > y
    return False


def woven_tips(txn, tables: DocumentTables, doc: bytes) -> list[bytes]:
    """The ids of the document's woven messages no woven message names in `previous`
    (ascending; none if the document is not held)."""
    docno = docno_of(txn, tables, doc)
    if docno is None:
        return []
    prefix = U32.pack(docno)
    rows = [bytes(key[4:]) for key in keys_with(txn, tables.tips, prefix)]
    return sorted({*rows, *read_meta(txn, tables, docno)[M_TIPS]})


def frontier(txn, tables: DocumentTables, docno: int, meta: list) -> Weft:
    """Each author's highest seq woven into the document: the weft of its current text."""
    weft: Weft = dict(meta[M_YARNS])  # what a meta written before `doc-authors` holds
    cursor = txn.cursor(db=tables.authors)
    prefix = U32.pack(docno)
    if cursor.set_range(prefix):
        for key, value in cursor:
            if key[:4] != prefix:
                break
            author, seq = bytes(key[4:]), U64.unpack(value)[0]
            weft[author] = max(weft.get(author, 0), seq)
    return weft


def move_meta_rows(txn, tables: DocumentTables, docno: int, meta: list) -> None:
    """Move the authors and tips a meta written before `doc-authors` and `doc-tips` holds
    into those tables (the caller writes the meta back)."""
    prefix = U32.pack(docno)
    for author, seq in meta[M_YARNS].items():
        txn.put(prefix + author, U64.pack(seq), db=tables.authors)
    for tip in meta[M_TIPS]:
        txn.put(prefix + tip, b"", db=tables.tips)
    meta[M_YARNS], meta[M_TIPS] = {}, []


def keys_with(txn, db, prefix: bytes):
    """The keys of `db` that start with `prefix`, in order."""
    cursor = txn.cursor(db=db)
    if cursor.set_range(prefix):
        for key in cursor.iternext(values=False):
            if key[: len(prefix)] != prefix:
                break
            yield key


def group_of(meta: list) -> bytes | None:
    """The group a document is private to; None for a public one."""
    return meta[M_GROUP] if len(meta) > M_GROUP else None


def kept_weave(txn, tables: DocumentTables, msg_id: bytes) -> tuple[bytes, Any] | None:
    """(erase request id, or b"" for a purge; the skeleton, None for no document message)
    of a message whose content was dropped, as `doc-erased` keeps it; None if none."""
    raw = txn.get(msg_id, db=tables.erased)
    if raw is None:
        return None
    by, weave = unpack(raw)
    return by, weave


def docno_of(txn, tables: DocumentTables, doc: bytes) -> int | None:
    raw = txn.get(doc, db=tables.index)
    return None if raw is None else U32.unpack(raw)[0]


def read_meta(txn, tables: DocumentTables, docno: int) -> list:
    return unpack(txn.get(U32.pack(docno), db=tables.meta))


def read_record(txn, tables: DocumentTables, docno: int, mno: int) -> list | None:
    raw = txn.get(U32.pack(docno) + U32.pack(mno), db=tables.msgs)
    return None if raw is None else unpack(raw)


def stored_record(txn, tables: DocumentTables, docno: int, mno: int) -> list:
    """`read_record` of a message the document holds (woven, numbered): `StoreDamaged` if
    its row is missing."""
    raw = txn.get(U32.pack(docno) + U32.pack(mno), db=tables.msgs)
    if raw is None:
        raise StoreDamaged(f"document {docno} has no row for its message {mno}")
    return unpack(raw)


def open_weave(txn, tables: DocumentTables, docno: int, meta: list) -> Weave:
    return Weave(txn, tables.nodes, tables.pieces, docno, meta[M_ROOT_NODE], meta[M_NEXT_NODE])


def segment_kinds(segments: list, first: int, count: int) -> set[int] | None:
    """The kinds of atoms first .. first+count-1 per `segments`; None if some do not exist."""
    kinds: set[int] = set()
    end = first + count
    covered = first
    for start, length, kind, _m, _i in segments:
        if start + length <= covered:
            continue
        if start > covered:
            return None
        kinds.add(kind)
        covered = start + length
        if covered >= end:
            return kinds
    return None


def segment_at(segments: list, index: int) -> list:
    for segment in segments:
        if segment[0] <= index < segment[0] + segment[1]:
            return segment
    raise LookupError(f"no atom {index}")


def rows_of(txn, db, docno: int, mno: int) -> list[tuple[int, int, int, int]]:
    """The `doc-dels` or `doc-undels` (`db`) rows on message `mno`'s atoms, each as
    (first, count, by mno, by index): atoms first.. named by atoms (by mno, by index)..."""
    prefix = U32.pack(docno) + U32.pack(mno)
    cursor = txn.cursor(db=db)
    rows: list[tuple[int, int, int, int]] = []
    if not cursor.set_range(prefix):
        return rows
    for key, value in cursor:
        if key[:8] != prefix:
            break
        first, by_mno, by_index = (U32.unpack(key[at : at + 4])[0] for at in (8, 12, 16))
        rows.append((first, U32.unpack(value)[0], by_mno, by_index))
    return rows


def naming(rows: list[tuple[int, int, int, int]], index: int) -> list[tuple[int, int]]:
    """(mno, index) of the atoms in `rows` that name atom `index`."""
    return [
        (by_mno, by_index + index - first)
        for first, count, by_mno, by_index in rows
        if 0 <= index - first < count
    ]


def backspaces_of(txn, tables: DocumentTables, docno: int, mno: int, index: int):
    """(mno, index) of every backspace on atom (mno, index)."""
    return naming(rows_of(txn, tables.dels, docno, mno), index)


def undeletes_of(txn, tables: DocumentTables, docno: int, mno: int, index: int):
    """(mno, index) of every undelete of backspace (mno, index)."""
    return naming(rows_of(txn, tables.undels, docno, mno), index)
