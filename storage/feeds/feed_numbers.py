"""Feed numbers: every feed the store names, as a number of 4 bytes.

Theory of operation
-------------------
The `feeds` table holds both directions in one table, told apart by key
length:

    feed key (32 bytes) -> number (u32 BE)
    number (u32 BE)     -> feed key

Numbers are given in order, 0 up, the first time anything of the store
names a feed (a timeframe in a stored form, the processed order, a
spacetime ref), and never change or go away: a feed cut back for a fork
keeps its number.

`FeedNumbers` serves one transaction. A new number is the table's count of
feeds as the transaction sees it (two rows a feed), read at the moment it
is given, so any number of `FeedNumbers` in one transaction (the body
writer's, the processor's, the timeline refs') never give one number twice:
each sees the rows the others wrote.

`CommittedFeeds` is the store's memory of numbers other transactions
committed, shared by every transaction: a committed number maps to the
same key forever. A number seen in a read transaction is committed; in a
write transaction, only those below the count it started with (a number
given in it would be wrong if it aborted). A write transaction says so by
`FeedNumbers(..., writing=True)`.
"""

from __future__ import annotations

import struct
from typing import Any

_U32 = struct.Struct(">I")


class CommittedFeeds:
    """Numbers committed to the `feeds` table, cached for the store's life."""

    def __init__(self) -> None:
        self.keys: dict[int, bytes] = {}  # number -> feed key
        self.numbers: dict[bytes, int] = {}  # feed key -> number
        self.below = 0  # numbers below this are committed

    def learn(self, number: int, key: bytes) -> None:
        if number < self.below:
            self.keys[number] = key
            self.numbers[key] = number


class FeedNumbers:
    """Feed key <-> number in one transaction (see the module docstring)."""

    def __init__(
        self,
        txn,
        feeds_db: Any,
        committed: CommittedFeeds | None = None,
        writing: bool = True,
    ) -> None:
        self._txn, self._db = txn, feeds_db
        self._committed = committed if committed is not None else CommittedFeeds()
        if writing:
            count = txn.stat(feeds_db)["entries"] // 2
            if count > self._committed.below:
                self._committed.below = count
        self._numbers: dict[bytes, int] = {}  # this transaction's, committed or not
        self._keys: dict[int, bytes] = {}

    def number(self, feed: bytes) -> int:
        """`feed`'s number, given it now if it has none (a write transaction's only)."""
        number = self._committed.numbers.get(feed)
        if number is None:
            number = self._numbers.get(feed)
        if number is None:
            txn, db = self._txn, self._db
            found = txn.get(feed, db=db)
            if found is None:
                number = txn.stat(db)["entries"] // 2  # two rows a feed: the next number
                packed = _U32.pack(number)
                if txn.get(packed, db=db) is not None:
                    raise ValueError(f"the feeds table holds feed number {number} twice")
                txn.put(feed, packed, db=db)
                txn.put(packed, feed, db=db)
            else:
                number = _U32.unpack(found)[0]
            self._known(number, feed)
        return number

    def find(self, feed: bytes) -> int | None:
        """`feed`'s number, None if it has none (never gives one)."""
        number = self._committed.numbers.get(feed)
        if number is None:
            number = self._numbers.get(feed)
        if number is None:
            found = self._txn.get(feed, db=self._db)
            if found is None:
                return None
            number = _U32.unpack(found)[0]
            self._known(number, feed)
        return number

    def key(self, number: int) -> bytes:
        """The feed numbered `number`; KeyError if none is."""
        key = self._committed.keys.get(number)
        if key is None:
            key = self._keys.get(number)
        if key is None:
            found = self._txn.get(_U32.pack(number), db=self._db)
            if found is None:
                raise KeyError(f"feed number {number} is not in the store")
            key = bytes(found)
            self._known(number, key)
        return key

    def _known(self, number: int, key: bytes) -> None:
        self._numbers[key] = number
        self._keys[number] = key
        self._committed.learn(number, key)
