"""`message-at`: where each message's body is, by position (author + seq).

One row a message: author + seq (u64 BE) -> its arrival number (u64 BE),
the key of its body in `messages` (storage.feeds.bodies). A feed's rows are
one contiguous key range, so a feed from seq N is a walk of the index.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


class PositionIndex:
    """The `message-at` table: position -> arrival number."""

    def __init__(self, db: Any) -> None:
        self.db = db

    def get(self, txn, position: bytes) -> bytes | None:
        """The arrival number of the message at `position`, None if none is stored."""
        found = txn.get(position, db=self.db)
        return None if found is None else bytes(found)

    def put(self, txn, position: bytes, arrival: bytes) -> None:
        """Name the body of the message at `position`."""
        txn.put(position, arrival, db=self.db)

    def delete(self, txn, position: bytes) -> None:
        """Forget `position` (a feed is cut back from its newest message down)."""
        txn.delete(position, db=self.db)

    def entries(
        self, txn, start: bytes = b"", within: bytes = b""
    ) -> Iterator[tuple[bytes, bytes]]:
        """(position, arrival) from position `start` on, in position order, while
        positions begin with `within`."""
        cursor = txn.cursor(db=self.db)
        found = cursor.set_range(start) if start else cursor.first()
        while found:
            position = bytes(cursor.key())
            if not position.startswith(within):
                return
            yield position, bytes(cursor.value())
            found = cursor.next()
