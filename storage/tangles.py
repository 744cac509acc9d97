"""Tangle tips, kept up to date inside the transaction that stores a message.

A tip of a tangle is a message of it that no message of it references in
`previous` (DESIGN §3). Messages may arrive before what they reference, and
after what references them, so we remember every referenced id (`tangle-refs`)
whether or not it is present: a message enters the tips only if nothing has
referenced it yet, and leaves them when something does.
"""

from __future__ import annotations

from protocol.message import Message
from storage.layout import Tables, tangle_key

EMPTY = b""


def add_to_tangles(txn, tables: Tables, message: Message) -> None:
    """Update tips and references of every tangle `message` belongs to."""
    for name, link in message.tangles.items():
        key = tangle_key(message.tangle_root(name), name)
        for referenced in link.previous or ():
            txn.put(key + referenced, EMPTY, db=tables.tangle_refs)
            txn.delete(key, referenced, db=tables.tangle_tips)
        if txn.get(key + message.id, db=tables.tangle_refs) is None:
            txn.put(key, message.id, db=tables.tangle_tips, dupdata=True)


def tips_of(txn, tables: Tables, root: bytes, name: str) -> list[bytes]:
    """The current tips of tangle (name, root), ascending by id."""
    key = tangle_key(root, name)
    cursor = txn.cursor(db=tables.tangle_tips)
    if not cursor.set_key(key):
        return []
    return [bytes(value) for value in cursor.iternext_dup(keys=False)]
