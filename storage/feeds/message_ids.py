"""`message-ids`: every message id the store knows, with where the message is and its ref number.

Theory of operation
-------------------
One row per id, whose value says what the store knows of it:

    where                 held, no ref number yet
    where + number (u32)  held, with its ref number
    number (u32 BE)       not held, with its ref number: a link's target not
                          stored (yet), or a message taken out since

where `where` is the feed's number (`feeds`, storage.feeds.feed_numbers)
and the seq: u32 + u32 (8 bytes), or, for a seq from 2**32 on, the feed
number with its top bit set + u64 (12 bytes). The first byte and the
length tell the kinds apart (`split_row`). A message's position (author +
seq) comes back through the feed's number: 8 bytes where author + seq
took 40.

The ref number (storage.engine.ref_numbers) is the number the timeline
engine's rows name a message id by. Ids are hashes, so a table keyed by
them takes each new row on a random leaf: a batch of N new messages dirtied
about N leaves in each such table, however large it grew, once here and
once more in `tl-refs`. So the number lives here, in the row the message
already has (`MessageRefHome`, the engine's `RefHome` for the node's
stores), and `tl-refs` keeps the refs that are not ids. A number is never
taken back: a message taken out of the store (a feed cut back by a fork
proof) leaves its number in a row of its own (`forget`), and one stored
again keeps it (`place`).

`MessageRefHome` also shortens spacetime refs (author + seq (u64) + tag,
56 bytes: storage.views.timelines) to the author's feed number + seq + tag
in `tl-refs` and `tl-ref-names`: 24 bytes (seq as u32), 28 from seq 2**32
on, numbering the feed if it has no number yet. So in a node's store those
two tables hold ids of 32 bytes and spacetime refs of 24 or 28: a ref of
24 or 28 bytes is refused (it would read back as a spacetime ref).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

from tanglenode.storage.errors import StoreDamaged, TimelineError
from tanglenode.storage.feeds.bodies import Bodies
from tanglenode.storage.feeds.feed_numbers import FeedNumbers

_SHORT = struct.Struct(">II")  # feed number, seq below 2**32
_LONG = struct.Struct(">IQ")  # feed number | LONG_SEQ, seq from 2**32 on
_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")
LONG_SEQ = 0x8000_0000  # the top bit of a row's feed number: its seq is a u64
NUMBER = 4  # a ref number's bytes
ID_BYTES = 32
SPACETIME_REF = 32 + 8 + 16  # author + seq + tag (storage.views.timelines.spacetime_ref)
SHORT_SPACETIME_REFS = (4 + 4 + 16, 4 + 8 + 16)  # its feed as a number, seq u32 or u64


def where_of(feed_number: int, seq: int) -> bytes:
    """The `where` part of a held message's row (see the module docstring)."""
    if feed_number >= LONG_SEQ:
        raise StoreDamaged(f"feed number {feed_number} is past the 2**31 a row can name")
    return _SHORT.pack(feed_number, seq) if seq < 2**32 else _LONG.pack(feed_number | LONG_SEQ, seq)


def split_row(row: bytes) -> tuple[tuple[int, int] | None, bytes | None]:
    """((feed number, seq) or None if not held, ref number or None) of a row; ValueError
    if it is of no layout."""
    if len(row) == NUMBER:
        return None, bytes(row)
    if len(row) < _SHORT.size:
        raise ValueError(f"a message-ids row of {len(row)} bytes")
    if row[0] & 0x80:
        number, seq = _LONG.unpack_from(row)
        where, size = (number & ~LONG_SEQ, seq), _LONG.size
    else:
        where, size = _SHORT.unpack_from(row), _SHORT.size
    if len(row) == size:
        return where, None
    if len(row) == size + NUMBER:
        return where, bytes(row[size:])
    raise ValueError(f"a message-ids row of {len(row)} bytes")


class MessageIds:
    """The `message-ids` rows (see the module docstring); one per store."""

    def __init__(self, db: Any, bodies: Bodies) -> None:
        self.db = db
        self._bodies = bodies

    def position(self, txn, msg_id: bytes) -> bytes | None:
        """Where the message `msg_id` is (author + seq, u64 BE), None if it is not held."""
        row = txn.get(msg_id, db=self.db)
        if row is None or len(row) == NUMBER:
            return None
        return self.position_of(txn, row)

    def position_of(self, txn, row: bytes) -> bytes:
        """The position a held message's row names; ValueError for a row of no layout,
        KeyError for one naming no feed."""
        where, _number = split_row(row)
        if where is None:
            raise ValueError("the row of a message not held")
        return self._bodies.key_of(txn, where[0]) + _U64.pack(where[1])

    def holds(self, txn, msg_id: bytes) -> bool:
        """Whether the message `msg_id` is held."""
        row = txn.get(msg_id, db=self.db)
        return row is not None and len(row) != NUMBER

    def place(self, txn, msg_id: bytes, feed_number: int, seq: int) -> None:
        """Record that the message `msg_id` is held at the feed numbered `feed_number`,
        `seq`, keeping the ref number it had."""
        where = where_of(feed_number, seq)
        if not txn.put(msg_id, where, overwrite=False, db=self.db):
            row = txn.get(msg_id, db=self.db)
            if len(row) != NUMBER:
                raise StoreDamaged(f"message-ids holds {msg_id.hex()} already")
            txn.put(msg_id, where + row, db=self.db)

    def forget(self, txn, msg_id: bytes) -> None:
        """The message `msg_id` is no longer held: its row keeps its ref number alone."""
        row = txn.get(msg_id, db=self.db)
        if row is None or len(row) == NUMBER:
            return
        _where, number = split_row(row)
        if number is not None:
            txn.put(msg_id, number, db=self.db)
        else:
            txn.delete(msg_id, db=self.db)

    def held(self, txn) -> Iterator[tuple[bytes, bytes]]:
        """(id, position) of every held message, in id order."""
        for msg_id, row in txn.cursor(db=self.db):
            if len(row) != NUMBER:
                yield bytes(msg_id), self.position_of(txn, row)

    def held_between(self, txn, low: bytes, high: bytes, limit: int) -> list[bytes]:
        """The held ids from `low` to `high` inclusive, in order, at most `limit`."""
        found: list[bytes] = []
        cursor = txn.cursor(db=self.db)
        if not cursor.set_range(low):
            return found
        for msg_id, row in cursor:
            if bytes(msg_id) > high or len(found) >= limit:
                break
            if len(row) != NUMBER:
                found.append(bytes(msg_id))
        return found


class MessageRefs:
    """The node store's `RefHomes` (storage.engine.ref_numbers): see the module docstring."""

    def __init__(self, ids: MessageIds, bodies: Bodies) -> None:
        self._ids = ids
        self._bodies = bodies

    def home(self, txn) -> MessageRefHome:
        return MessageRefHome(txn, self._ids.db, self._bodies)


class MessageRefHome:
    """Message ids' numbers and short spacetime refs, in one transaction."""

    def __init__(self, txn, ids_db: Any, bodies: Bodies) -> None:
        self._txn = txn
        self._db = ids_db
        self._bodies = bodies
        self._feeds: FeedNumbers | None = None  # made at the first spacetime ref

    def keeps(self, ref: bytes) -> bool:
        return len(ref) == ID_BYTES

    def number(self, ref: bytes) -> bytes | None:
        row = self._txn.get(ref, db=self._db)
        return None if row is None else split_row(row)[1]

    def keep(self, ref: bytes, number: bytes) -> None:
        txn = self._txn
        row = txn.get(ref, db=self._db)
        if row is None:
            txn.put(ref, number, db=self._db)
        elif split_row(row)[1] is None:
            txn.put(ref, bytes(row) + number, db=self._db)
        else:
            raise StoreDamaged(f"message-ids numbers {ref.hex()} already")

    def stored(self, ref: bytes, assign: bool) -> bytes | None:
        if len(ref) == SPACETIME_REF:
            feeds = self._feed_numbers()
            number = feeds.number(ref[:32]) if assign else feeds.find(ref[:32])
            return None if number is None else short_spacetime_ref(number, ref)
        if len(ref) in SHORT_SPACETIME_REFS:
            raise TimelineError(f"a ref of {len(ref)} bytes is not a node's ref")
        return ref

    def ref(self, stored: bytes) -> bytes:
        if len(stored) not in SHORT_SPACETIME_REFS:
            return stored
        feed = self._bodies.key_of(self._txn, _U32.unpack_from(stored)[0])
        if len(stored) == SHORT_SPACETIME_REFS[0]:
            return feed + _U64.pack(_U32.unpack_from(stored, 4)[0]) + stored[8:]
        return feed + stored[4:]

    def numbered(self) -> Iterator[tuple[bytes, bytes]]:
        for msg_id, row in self._txn.cursor(db=self._db):
            try:
                number = split_row(row)[1]
            except ValueError:
                continue  # the feeds' check reports it
            if number is not None:
                yield bytes(msg_id), number

    def _feed_numbers(self) -> FeedNumbers:
        if self._feeds is None:
            self._feeds = self._bodies.feed_numbers(self._txn)
        return self._feeds


def short_spacetime_ref(feed_number: int, ref: bytes) -> bytes:
    """The form a spacetime ref (author + seq u64 + tag) takes in `tl-refs`."""
    seq = ref[32:40]
    if seq[:4] == b"\0\0\0\0":
        return _U32.pack(feed_number) + seq[4:] + ref[40:]
    return _U32.pack(feed_number) + ref[32:]
