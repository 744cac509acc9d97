"""The LMDB types the store's code names in annotations (at run time each is only its
string): lmdb's own stubs (py.typed since lmdb 3.0) make a transaction generic
in what it reads, and the store never opens one with `buffers=True`, so every read is
`bytes`."""

from __future__ import annotations

from typing import TypeAlias

import lmdb

Txn: TypeAlias = "lmdb.Transaction[bytes]"  # one read or write transaction
Cursor: TypeAlias = "lmdb.Cursor[bytes]"
Db: TypeAlias = "lmdb._Database"  # a table's handle (lmdb names no public class for it)
