"""Tangle tips, kept up to date inside the transaction that stores a message.

Theory of operation
-------------------
A tip of a tangle is a member that no member references in `previous`
(docs/FORMAT.md, "Tangles"). Messages may arrive before or after the messages they
reference, so each stored message does two things:

- for each id it references: if that message is stored, it stops being a tip
  of this tangle (a no-op if it was not one); if not, the reference is
  remembered in `tangle-pending` under (referenced id, tangle key);
- it becomes a tip itself unless `tangle-pending` shows that some member of
  the tangle referenced it before it arrived. Its pending rows (for any
  tangle) are deleted: they are not pending any more.

So `tangle-pending` holds exactly the references to messages not stored,
which is almost nothing once a node has caught up, and is keyed by the
referenced id so an arriving message finds its rows with one seek. Every
write here lands on a tangle's few tip rows or on that small table, never
on an index that grows with the whole store.
"""

from __future__ import annotations

from tanglenode.protocol.message import Message
from tanglenode.storage.layout import EMPTY, Tables, tangle_key


def add_to_tangles(txn, tables: Tables, message: Message) -> None:
    """Update the tips of every tangle `message` belongs to (call after storing it)."""
    referenced_early = _take_pending(txn, tables, message.id)
    for name, link in message.tangles.items():
        key = tangle_key(message.tangle_root(name), name)
        for referenced in link.previous or ():
            if txn.get(referenced, db=tables.message_ids) is not None:
                txn.delete(key, referenced, db=tables.tangle_tips)
            else:
                txn.put(referenced + key, EMPTY, db=tables.tangle_pending)
        if key not in referenced_early:
            txn.put(key, message.id, db=tables.tangle_tips, dupdata=True)


def _take_pending(txn, tables: Tables, msg_id: bytes) -> set[bytes]:
    """Delete and return the tangle keys whose members referenced `msg_id` before it came."""
    found: set[bytes] = set()
    cursor = txn.cursor(db=tables.tangle_pending)
    if not cursor.set_range(msg_id):
        return found
    while cursor.key()[:32] == msg_id:
        found.add(bytes(cursor.key()[32:]))
        if not cursor.delete():
            break
    return found


def tips_of(txn, tables: Tables, root: bytes, name: str) -> list[bytes]:
    """The current tips of tangle (name, root), ascending by id."""
    key = tangle_key(root, name)
    cursor = txn.cursor(db=tables.tangle_tips)
    if not cursor.set_key(key):
        return []
    return [bytes(value) for value in cursor.iternext_dup(keys=False)]
