"""Rewriting a table whole inside a migration: new rows to a scratch table, then back, appended.

A migration (storage.store, schemas named in storage.feeds.layout) writes a
table's new rows to a scratch table first, then empties the table and puts
them back with LMDB's append flag: every page of the result is full, where
rows rewritten in place would leave pages split half-empty.
"""

from __future__ import annotations

from typing import Any


def copy_back(txn, scratch: Any, db: Any) -> None:
    """Empty `db`, then fill it with `scratch`'s rows, appended."""
    txn.drop(db, delete=False)
    with txn.cursor(db=db) as out:
        for key, value in txn.cursor(db=scratch):
            out.put(bytes(key), bytes(value), append=True)
