"""Message bodies: kept in the order they arrived, found by position through an index.

Theory of operation
-------------------
Two tables hold the accepted messages:

    messages     arrival (u64 BE) -> stored form      the bodies, in arrival order
    message-at   position -> arrival (u64 BE)         where each body is, by position
                                                      (storage.feeds.message_at: in runs)

Callers ask by position, author + seq, as they always did: a read looks the
position up in `message-at`, then the body in `messages`; a range of
positions (a feed from seq N, every message) walks `message-at` in
position order and fetches each body. The stored form
(storage.feeds.stored_form) leaves the author out of the body; the index
key holds it, so a body is only ever read through its index row.

Why two tables: messages arrive interleaved across feeds, so bodies keyed
by position landed each at the end of its feed's key range, in the middle
of the B-tree; LMDB splits such a page in half, and the halves stayed ~60 %
full (715 bytes a row for values of ~430). A body's arrival number is the
last key of `messages` + 1, written with LMDB's append flag, so body pages
fill completely; only the index's small rows take the scattered inserts.
The price is one more lookup a read.

The next number is read from `messages` itself in the writing transaction
(its last key + 1), never cached, so every writer of a transaction agrees
on it. A truncation that removes the newest bodies frees their numbers for
the next ones: a number means nothing outside the store, only its index
row names it. A body and its index row are written together and removed
together, in one transaction (ingest, publish, a feed cut back by a fork
proof: storage.feeds.invalidation), so a store never holds one without the
other; `tangled check` reports it if it does (storage.feeds.check).

`Bodies` also numbers the feeds the stored form names (the `feeds` table,
storage.feeds.feed_numbers), caching the numbers other transactions committed.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

from tanglenode.protocol.message import Message
from tanglenode.storage.errors import StorageError
from tanglenode.storage.feeds.feed_numbers import CommittedFeeds, FeedNumbers
from tanglenode.storage.feeds.message_at import PositionIndex
from tanglenode.storage.feeds.stored_form import (
    decode,
    encode,
    has_content,
    parse_stored,
    without_content,
)

_U32 = struct.Struct(">I")
ARRIVAL = struct.Struct(">Q")  # the `messages` key and the `message-at` value


class MissingBody(StorageError, LookupError):
    """A `message-at` row names a body `messages` does not hold: the store is damaged."""


class Bodies:
    """The accepted messages by position: `message-at`, then `messages` through the
    stored form, with the feed numbers (see the module docstring).

    One per store, shared by every transaction: it caches committed numbers only.
    """

    def __init__(self, messages_db: Any, message_at_db: Any, feeds_db: Any) -> None:
        self.messages = messages_db
        self.index = PositionIndex(message_at_db)
        self.feeds = feeds_db
        self.committed_feeds = CommittedFeeds()  # numbers committed, for every transaction

    def key_of(self, txn, number: int) -> bytes:
        committed = self.committed_feeds
        key = committed.keys.get(number)
        if key is None:
            found = txn.get(_U32.pack(number), db=self.feeds)
            if found is None:
                raise KeyError(f"feed number {number} is not in the store")
            key = bytes(found)
            committed.learn(number, key)
        return key

    def feed_numbers(self, txn) -> FeedNumbers:
        """The feed numbers as write transaction `txn` sees them, giving new ones."""
        return FeedNumbers(txn, self.feeds, self.committed_feeds)

    def arrival(self, txn, position: bytes) -> bytes | None:
        """The `messages` key of the body of the message at `position` (author + seq),
        None if no message is stored there."""
        return self.index.get(txn, position)

    def holds(self, txn, position: bytes) -> bool:
        """Whether a message is stored at `position` (author + seq)."""
        return self.arrival(txn, position) is not None

    def count(self, txn) -> int:
        """How many messages are stored."""
        return txn.stat(self.messages)["entries"]

    def positions(
        self, txn, start: bytes = b"", within: bytes = b""
    ) -> Iterator[tuple[bytes, bytes]]:
        """(position, arrival) of each stored message from position `start` on, in position
        order, while positions begin with `within` (an author: one feed)."""
        return self.index.entries(txn, start, within)

    def raw(self, txn, position: bytes) -> bytes | None:
        """The signed bytes of the message at `position` (author + seq), None if not held."""
        arrival = self.arrival(txn, position)
        if arrival is None:
            return None
        return self.rebuild(txn, position, self._body(txn, position, arrival))

    def rebuild(self, txn, position: bytes, value: bytes) -> bytes:
        """The signed bytes of the body `value` of the message at `position`."""
        return decode(bytes(position[:32]), value, lambda number: self.key_of(txn, number))

    def message(self, txn, position: bytes) -> Message | None:
        """The message at `position`, parsed (no signature check), None if not held."""
        raw = self.raw(txn, position)
        return None if raw is None else parse_stored(raw)

    def rows(self, txn, start: bytes = b"", within: bytes = b"") -> Iterator[tuple[bytes, bytes]]:
        """(position, body) of each stored message from position `start` on, in position
        order, while positions begin with `within` (an author: one feed); `rebuild` reads
        a body."""
        for position, arrival in self.positions(txn, start, within):
            yield position, self._body(txn, position, arrival)

    def drop_content(self, txn, position: bytes) -> Message | None:
        """Keep the message at `position` as its header alone (its body rewritten in place,
        the header's bytes as they were); the message as it was, or None if none is held
        there or it held no content."""
        arrival = self.arrival(txn, position)
        if arrival is None:
            return None
        value = bytes(self._body(txn, position, arrival))
        if not has_content(value):
            return None
        message = parse_stored(self.rebuild(txn, position, value))
        txn.put(arrival, without_content(value), db=self.messages)
        return message

    def remove(self, txn, position: bytes) -> Message:
        """Take the message at `position` out of both tables; the message it was."""
        arrival = self.arrival(txn, position)
        if arrival is None:
            raise KeyError(f"no message is stored at {position.hex()}")
        message = parse_stored(self.rebuild(txn, position, self._body(txn, position, arrival)))
        txn.delete(arrival, db=self.messages)
        self.index.delete(txn, position)
        return message

    def writer(self, txn) -> BodyWriter:
        return BodyWriter(txn, self)

    def _body(self, txn, position: bytes, arrival: bytes) -> bytes:
        value = txn.get(arrival, db=self.messages)
        if value is None:
            number = ARRIVAL.unpack(arrival)[0]
            raise MissingBody(
                f"the store is damaged: message-at row {position.hex()} names body {number},"
                " which it does not hold; run `tangled check`"
            )
        return value


class BodyWriter:
    """Stores messages in one write transaction, numbering feeds as they first appear."""

    def __init__(self, txn, bodies: Bodies) -> None:
        self._txn = txn
        self._bodies = bodies
        self._ends: Any = None  # a cursor that finds the last body, once one is stored
        self.numbers = bodies.feed_numbers(txn)
        self.number_of = self.numbers.number

    def put(self, position: bytes, message: Message) -> None:
        """Store `message` at `position` (author + seq): its body after the last one,
        its index row naming it."""
        value = encode(message, self.number_of)
        if self._ends is None:
            self._ends = self._txn.cursor(db=self._bodies.messages)
        ends = self._ends
        last = ARRIVAL.unpack(ends.key())[0] if ends.last() else -1
        arrival = ARRIVAL.pack(last + 1)
        if not ends.put(arrival, value, append=True):
            raise RuntimeError(f"body {arrival.hex()} is not past the last body")
        self._bodies.index.put(self._txn, position, arrival)
