"""Schema 14 -> 15: the ids' rows and the ref numbers, rewritten as the store is opened.

Theory of operation
-------------------
Schema 14 kept (storage.feeds.message_ids has the new layout):

    message-ids   id -> author + seq (u64 BE)
    tl-refs       every numbered ref -> number: ids (32 bytes), spacetime refs
                  (author + seq + tag, 56 bytes)
    tl-ref-names  number -> the same refs

`migrate_14` rewrites the three, in the one write transaction in which the
store says schema 15 (storage.store), so a crash leaves schema 14 whole:

1. `message-ids` and the ids' rows of `tl-refs`, both in id order, are
   merged into the new `message-ids`: a held message's feed number + seq,
   then its ref number if it has one; a numbered id no message holds, its
   number alone.
2. `tl-refs` keeps its other rows, spacetime refs shortened (the author as
   its feed number, numbering it if no number names it yet).
3. `tl-ref-names` holds the same short form.

Each table is written to a scratch table first, then back, appended
(storage.feeds.rewrite): every page full. A row of another layout stops the
migration with a `ValueError` (nothing is written: the transaction aborts).
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Iterator
from typing import Any

from tanglenode.storage.feeds.feed_numbers import FeedNumbers
from tanglenode.storage.feeds.message_ids import (
    ID_BYTES,
    SHORT_SPACETIME_REFS,
    SPACETIME_REF,
    short_spacetime_ref,
    where_of,
)
from tanglenode.storage.feeds.rewrite import copy_back

log = logging.getLogger(__name__)

_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")
_CHUNK = 50_000  # rows between progress reports


def migrate_14(
    env: Any,
    txn,
    ids_db: Any,
    feeds_db: Any,
    progress: Callable[[str, int], None] | None = None,
) -> int:
    """Rewrite a schema-14 store's `message-ids`, `tl-refs` and `tl-ref-names` in this
    schema's layout, in `txn`; how many `message-ids` rows it wrote."""
    refs_db = env.open_db(b"tl-refs", txn=txn)
    names_db = env.open_db(b"tl-ref-names", txn=txn)
    scratch = env.open_db(b"ids-migrating", txn=txn)
    numbers = FeedNumbers(txn, feeds_db)
    done = 0

    def counted(phase: str) -> None:
        nonlocal done
        done += 1
        if done % _CHUNK == 0:
            log.info("schema 14 -> 15: %d %s", done, phase)
            if progress is not None:
                progress(phase, done)

    def short(ref: bytes) -> bytes:
        if len(ref) == SPACETIME_REF:
            return short_spacetime_ref(numbers.number(ref[:32]), ref)
        if len(ref) in SHORT_SPACETIME_REFS:
            raise ValueError(f"tl-refs holds a ref of {len(ref)} bytes: {ref.hex()}")
        return ref

    # 1. message-ids, merged with the ids' numbers
    txn.drop(scratch, delete=False)
    id_numbers = _id_numbers(txn, refs_db)
    pending = next(id_numbers, None)
    with txn.cursor(db=scratch) as out:
        for key, value in txn.cursor(db=ids_db):
            msg_id = bytes(key)
            if len(value) != 40:
                raise ValueError(f"message-ids row {msg_id.hex()} is malformed")
            while pending is not None and pending[0] < msg_id:
                out.put(pending[0], pending[1], append=True)  # numbered, not held
                pending = next(id_numbers, None)
            row = where_of(numbers.number(bytes(value[:32])), _U64.unpack(value[32:])[0])
            if pending is not None and pending[0] == msg_id:
                row += pending[1]
                pending = next(id_numbers, None)
            out.put(msg_id, row, append=True)
            counted("ids' rows rewritten")
        while pending is not None:
            out.put(pending[0], pending[1], append=True)
            pending = next(id_numbers, None)
    written = done
    copy_back(txn, scratch, ids_db)

    # 2. tl-refs: the other refs, spacetime refs short (their order changes: put, then back)
    txn.drop(scratch, delete=False)
    for key, number in txn.cursor(db=refs_db):
        if len(key) != ID_BYTES:
            txn.put(short(bytes(key)), bytes(number), db=scratch)
            counted("refs rewritten")
    copy_back(txn, scratch, refs_db)

    # 3. tl-ref-names: the same short forms, in number order
    txn.drop(scratch, delete=False)
    with txn.cursor(db=scratch) as out:
        for number, ref in txn.cursor(db=names_db):
            out.put(bytes(number), short(bytes(ref)), append=True)
            counted("ref names rewritten")
    copy_back(txn, scratch, names_db)
    txn.drop(scratch, delete=True)
    if progress is not None:
        progress("ref numbers rewritten", done)
    return written


def _id_numbers(txn, refs_db: Any) -> Iterator[tuple[bytes, bytes]]:
    """(id, number) of every id `tl-refs` numbers, in id order."""
    for key, number in txn.cursor(db=refs_db):
        if len(key) == ID_BYTES:
            yield bytes(key), bytes(number)
