"""`message-ids`: every message id the store knows, with where the message is and its ref number.

Theory of operation
-------------------
One row per id, whose value says what the store knows of it:

    feed number (u32 BE) + seq (u64 BE)               held, no ref number yet
    feed number (u32 BE) + seq (u64 BE) + number (u32) held, with its ref number
    number (u32 BE)                                   not held, with its ref number:
                                                      a link's target not stored (yet),
                                                      or a message taken out since

The three are told apart by length (12, 16, 4). A message's position
(author + seq) is found through the feed's number (`feeds`,
storage.feeds.feed_numbers), 12 bytes where author + seq took 40.

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

`MessageRefHome` also shortens spacetime refs (author + seq + tag, 56
bytes: storage.views.timelines) to the author's feed number + seq + tag (28
bytes) in `tl-refs` and `tl-ref-names`, numbering the feed if it has no
number yet. So in a node's store those two tables hold ids of 32 bytes and
spacetime refs of 28: a ref of 28 bytes is refused (it would read back as
a spacetime ref).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

from tanglenode.storage.errors import StoreDamaged, TimelineError
from tanglenode.storage.feeds.bodies import Bodies
from tanglenode.storage.feeds.feed_numbers import FeedNumbers

_WHERE = struct.Struct(">IQ")  # feed number, seq
_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")
HELD, NUMBERED, HELD_NUMBERED = 12, 4, 16  # the lengths of the three kinds of row
ID_BYTES = 32
SPACETIME_REF = 32 + 8 + 16  # author + seq + tag (storage.views.timelines.spacetime_ref)
SHORT_SPACETIME_REF = 4 + 8 + 16  # its feed as a number


class MessageIds:
    """The `message-ids` rows (see the module docstring); one per store."""

    def __init__(self, db: Any, bodies: Bodies) -> None:
        self.db = db
        self._bodies = bodies

    def position(self, txn, msg_id: bytes) -> bytes | None:
        """Where the message `msg_id` is (author + seq, u64 BE), None if it is not held."""
        row = txn.get(msg_id, db=self.db)
        if row is None or len(row) < HELD:
            return None
        return self.position_of(txn, row)

    def position_of(self, txn, row: bytes) -> bytes:
        """The position a held message's row names."""
        number, seq = _WHERE.unpack_from(row)
        return self._bodies.key_of(txn, number) + _U64.pack(seq)

    def holds(self, txn, msg_id: bytes) -> bool:
        """Whether the message `msg_id` is held."""
        row = txn.get(msg_id, db=self.db)
        return row is not None and len(row) >= HELD

    def place(self, txn, msg_id: bytes, feed_number: int, seq: int) -> None:
        """Record that the message `msg_id` is held at the feed numbered `feed_number`,
        `seq`, keeping the ref number it had."""
        where = _WHERE.pack(feed_number, seq)
        if not txn.put(msg_id, where, overwrite=False, db=self.db):
            row = txn.get(msg_id, db=self.db)
            if len(row) != NUMBERED:
                raise StoreDamaged(f"message-ids holds {msg_id.hex()} already")
            txn.put(msg_id, where + row, db=self.db)

    def forget(self, txn, msg_id: bytes) -> None:
        """The message `msg_id` is no longer held: its row keeps its ref number alone."""
        row = txn.get(msg_id, db=self.db)
        if row is None:
            return
        if len(row) == HELD_NUMBERED:
            txn.put(msg_id, row[HELD:], db=self.db)
        else:
            txn.delete(msg_id, db=self.db)

    def held(self, txn) -> Iterator[tuple[bytes, bytes]]:
        """(id, position) of every held message, in id order."""
        for msg_id, row in txn.cursor(db=self.db):
            if len(row) >= HELD:
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
            if len(row) >= HELD:
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
        if row is None or len(row) == HELD:
            return None
        return bytes(row[-4:])

    def keep(self, ref: bytes, number: bytes) -> None:
        txn = self._txn
        row = txn.get(ref, db=self._db)
        if row is None:
            txn.put(ref, number, db=self._db)
        elif len(row) == HELD:
            txn.put(ref, bytes(row) + number, db=self._db)
        else:
            raise StoreDamaged(f"message-ids numbers {ref.hex()} already")

    def stored(self, ref: bytes, assign: bool) -> bytes | None:
        if len(ref) == SPACETIME_REF:
            feeds = self._feed_numbers()
            number = feeds.number(ref[:32]) if assign else feeds.find(ref[:32])
            return None if number is None else _U32.pack(number) + ref[32:]
        if len(ref) == SHORT_SPACETIME_REF:
            raise TimelineError(f"a ref of {SHORT_SPACETIME_REF} bytes is not a node's ref")
        return ref

    def ref(self, stored: bytes) -> bytes:
        if len(stored) == SHORT_SPACETIME_REF:
            return self._bodies.key_of(self._txn, _U32.unpack_from(stored)[0]) + stored[4:]
        return stored

    def numbered(self) -> Iterator[tuple[bytes, bytes]]:
        for msg_id, row in self._txn.cursor(db=self._db):
            if len(row) != HELD:
                yield bytes(msg_id), bytes(row[-4:])

    def _feed_numbers(self) -> FeedNumbers:
        if self._feeds is None:
            self._feeds = self._bodies.feed_numbers(self._txn)
        return self._feeds
