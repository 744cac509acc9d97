"""Writing a store's id rows and ref numbers back as schema 14 kept them, to test the migration
(storage/feeds/ids_migration.py): `message-ids` as id -> author + seq, every numbered id in
`tl-refs`, spacetime refs with the author's key."""

from __future__ import annotations

import struct

from tanglenode.storage.feeds.layout import Tables

_U32 = struct.Struct(">I")
_WHERE = struct.Struct(">IQ")
_U64 = struct.Struct(">Q")


def write_schema_14_ids(env, txn, tables: Tables) -> None:
    """Rewrite, in `txn`, `message-ids`, `tl-refs` and `tl-ref-names` in schema 14's layout."""
    refs = env.open_db(b"tl-refs", txn=txn)
    names = env.open_db(b"tl-ref-names", txn=txn)

    def feed(number: int) -> bytes:
        return bytes(txn.get(_U32.pack(number), db=tables.feeds))

    def long(ref: bytes) -> bytes:
        return feed(_U32.unpack(ref[:4])[0]) + ref[4:] if len(ref) == 28 else ref

    ids = [(bytes(k), bytes(v)) for k, v in txn.cursor(db=tables.message_ids)]
    old_refs = [(long(bytes(k)), bytes(v)) for k, v in txn.cursor(db=refs)]
    old_names = [(bytes(k), long(bytes(v))) for k, v in txn.cursor(db=names)]
    for db in (tables.message_ids, refs, names):
        txn.drop(db, delete=False)
    for msg_id, row in ids:
        if len(row) >= 12:
            number, seq = _WHERE.unpack_from(row)
            txn.put(msg_id, feed(number) + _U64.pack(seq), db=tables.message_ids)
        if len(row) != 12:
            old_refs.append((msg_id, row[-4:]))
    for ref, number in old_refs:
        txn.put(ref, number, db=refs)
    for number, ref in old_names:
        txn.put(number, ref, db=names)
