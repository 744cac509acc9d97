"""Who follows and blocks whom: an index of contact messages, kept at ingest.

Theory of operation
-------------------
Each well-formed contact message (protocol/contacts.py) is one row of

    contacts    author + contact + seq (u64 BE) -> following + blocking

each flag one byte: 0 false, 1 true, 2 left out. An author's rows about one
contact are one contiguous key range in seq order, and all its rows one
range in contact order, so an author's stances (`stances_of`) are one pass
over its range, folding each contact's rows in seq order, and a reader that
wants only its first contacts (`contact_stances`, lazy: the replication
scope reads a bounded number of each feed's) reads no further. Nothing else
is written: a message that is not a well-formed contact costs nothing.

Invalid feeds: a feed cut back by a proof of a fork from seq b keeps its
rows from b on, unread (boundaries only fall, storage.feeds.invalidation),
exactly as the names (storage/views/abouts.py): a stance depends only on
the messages held below the boundary, whatever the order they and the
proof came in. A store written before this table existed is indexed when
opened: it never recorded the view's `version` (2), so the store rebuilds
the view (storage/reindex.py, "Versions").
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

from tanglenode.protocol.contacts import ContactSaid, Stance, contact_said, fold

CONTACTS_DB = b"contacts"
ROW_KEY_LEN = 72  # author (32) + contact (32) + seq (u64 BE)
_U64 = struct.Struct(">Q")
_FLAG = {False: 0, True: 1, None: 2}
_UNFLAG = {0: False, 1: True, 2: None}


def contact_key(author: bytes, contact: bytes, seq: int) -> bytes:
    return author + contact + _U64.pack(seq)


def split_contact_key(key: bytes) -> tuple[bytes, bytes, int]:
    """A row key's (author, contact, seq)."""
    return bytes(key[:32]), bytes(key[32:64]), _U64.unpack(key[64:ROW_KEY_LEN])[0]


def row_value(said: ContactSaid) -> bytes:
    return bytes((_FLAG[said.following], _FLAG[said.blocking]))


def read_row(contact: bytes, value: bytes) -> ContactSaid | None:
    """A row's value as what its message said; None for a malformed value."""
    if len(value) != 2 or value[0] not in _UNFLAG or value[1] not in _UNFLAG:
        return None
    return ContactSaid(contact, _UNFLAG[value[0]], _UNFLAG[value[1]])


def index_contact(txn: Any, db: Any, author: bytes, seq: int, content: Any) -> None:
    """Record what a just-stored message says of a contact, if it is a contact message."""
    said = contact_said(content, author)
    if said is not None:
        txn.put(contact_key(author, said.contact, seq), row_value(said), db=db)


def contact_stances(
    txn: Any, db: Any, author: bytes, boundary: int | None
) -> Iterator[tuple[bytes, Stance]]:
    """Each contact `author` named, with its stance towards it, in contact key order, from
    its rows below `boundary` (None: the feed is valid, every row counts). Lazy: a caller
    that stops after n contacts has read their rows and one row more, whatever follows."""
    cursor = txn.cursor(db=db)
    if not cursor.set_range(author):
        return
    current = b""  # the contact whose rows are being folded
    stance: Stance | None = None  # its stance so far (None: no row of it counts yet)
    for key, value in cursor:
        if key[:32] != author:
            break
        _author, contact, seq = split_contact_key(key)
        if contact != current:
            if stance is not None:
                yield current, stance
            current, stance = contact, None
        if boundary is not None and seq >= boundary:
            continue
        said = read_row(contact, bytes(value))
        if said is not None:
            stance = fold([said], stance or Stance())
    if stance is not None:
        yield current, stance


def stances_of(txn: Any, db: Any, author: bytes, boundary: int | None) -> dict[bytes, Stance]:
    """Contact -> `author`'s stance towards it, from its rows below `boundary` (None: the
    feed is valid, every row counts)."""
    return dict(contact_stances(txn, db, author, boundary))


def stance_toward(txn: Any, db: Any, author: bytes, contact: bytes) -> Stance:
    """`author`'s stance towards `contact`, from all its rows about it (one key range)."""
    stance = Stance()
    cursor = txn.cursor(db=db)
    if not cursor.set_range(author + contact):
        return stance
    for key, value in cursor:
        if key[:64] != author + contact:
            break
        said = read_row(contact, bytes(value))
        if said is not None:
            stance = fold([said], stance)
    return stance
