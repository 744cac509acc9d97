"""Writing a store's id rows and ref numbers back as schema 14 kept them, to test the migration
(storage/feeds/ids_migration.py): `message-ids` as id -> author + seq, every numbered id in
`tl-refs`, spacetime refs with the author's key."""

from __future__ import annotations

import struct

from tanglenode.storage.feeds.layout import Tables
from tanglenode.storage.feeds.message_ids import split_row

_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")


def write_schema_14_ids(env, txn, tables: Tables) -> None:
    """Rewrite, in `txn`, `message-ids`, `tl-refs` and `tl-ref-names` in schema 14's layout."""
    refs = env.open_db(b"tl-refs", txn=txn)
    names = env.open_db(b"tl-ref-names", txn=txn)

    def feed(number: int) -> bytes:
        return bytes(txn.get(_U32.pack(number), db=tables.feeds))

    def long(ref: bytes) -> bytes:
        if len(ref) == 24:
            return feed(_U32.unpack(ref[:4])[0]) + _U64.pack(_U32.unpack(ref[4:8])[0]) + ref[8:]
        return feed(_U32.unpack(ref[:4])[0]) + ref[4:] if len(ref) == 28 else ref

    ids = [(bytes(k), bytes(v)) for k, v in txn.cursor(db=tables.message_ids)]
    old_refs = [(long(bytes(k)), bytes(v)) for k, v in txn.cursor(db=refs)]
    old_names = [(bytes(k), long(bytes(v))) for k, v in txn.cursor(db=names)]
    for db in (tables.message_ids, refs, names):
        txn.drop(db, delete=False)
    for msg_id, row in ids:
        where, number = split_row(row)
        if where is not None:
            txn.put(msg_id, feed(where[0]) + _U64.pack(where[1]), db=tables.message_ids)
        if number is not None:
            old_refs.append((msg_id, number))
    for ref, number in old_refs:
        txn.put(ref, number, db=refs)
    for number, ref in old_names:
        txn.put(number, ref, db=names)
