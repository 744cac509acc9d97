"""`message-at`: where each message's body is, by position (author + seq).

Theory of operation
-------------------
A feed holds every seq from 1 to its head (it grows by one at its head and
is cut back from its head down), so the arrival numbers of its messages
are kept in runs: one row for each `RUN` consecutive seqs,

    author + first seq (u64 BE) -> the arrival numbers (u64 BE each) of
                                   seqs first, first + 1, ..., in order

where first = 1, 1 + RUN, 1 + 2 RUN, ... A row holds a prefix of its run:
the numbers of the seqs stored, at most `RUN`. Looking a position up is one
get and a slice; storing a feed's next message rewrites its last row one
number longer; cutting a feed back shortens rows from its head down. A row
costs LMDB its key and node header once for `RUN` messages, where a row a
message cost them every time (measured: docs/BENCHMARKS.md).

The rows of a feed are one contiguous key range, in seq order, so a feed
from seq N is a walk of its rows from the one holding N.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

RUN = 64  # seqs a row holds
_SEQ = struct.Struct(">Q")
_WIDTH = 8  # bytes of an arrival number


def _row_of(position: bytes) -> tuple[bytes, int] | None:
    """(the key of the row holding `position`, the offset of its number), None for seq 0."""
    seq = _SEQ.unpack_from(position, 32)[0]
    if seq == 0:
        return None
    first = (seq - 1) // RUN * RUN + 1
    return position[:32] + _SEQ.pack(first), (seq - first) * _WIDTH


class PositionIndex:
    """The `message-at` table: position -> arrival number, in runs of seqs."""

    def __init__(self, db: Any) -> None:
        self.db = db

    def get(self, txn, position: bytes) -> bytes | None:
        """The arrival number of the message at `position`, None if none is stored."""
        row_of = _row_of(position)
        if row_of is None:
            return None
        key, at = row_of
        row = txn.get(key, db=self.db)
        if row is None or len(row) < at + _WIDTH:
            return None
        return bytes(row[at : at + _WIDTH])

    def put(self, txn, position: bytes, arrival: bytes) -> None:
        """Name the body of the message at `position`, the next seq of its feed."""
        row_of = _row_of(position)
        if row_of is None:
            raise ValueError("seq 0 holds no message")
        key, at = row_of
        row = txn.get(key, db=self.db) or b""
        if len(row) != at:
            raise ValueError(f"{position.hex()} is not the next position of its feed")
        txn.put(key, bytes(row) + arrival, db=self.db)

    def delete(self, txn, position: bytes) -> None:
        """Forget `position`, the last position of its feed (a feed is cut back from its
        head down)."""
        row_of = _row_of(position)
        if row_of is None:
            return
        key, at = row_of
        row = txn.get(key, db=self.db)
        if row is None or len(row) != at + _WIDTH:
            raise ValueError(f"{position.hex()} is not the last position of its feed")
        if at:
            txn.put(key, bytes(row[:at]), db=self.db)
        else:
            txn.delete(key, db=self.db)

    def entries(
        self, txn, start: bytes = b"", within: bytes = b""
    ) -> Iterator[tuple[bytes, bytes]]:
        """(position, arrival) from position `start` on, in position order, while
        positions begin with `within`."""
        cursor = txn.cursor(db=self.db)
        row_of = _row_of(start) if len(start) == 40 else None
        if row_of is not None:
            found = cursor.set_range(row_of[0])
        else:
            found = cursor.set_range(start) if start else cursor.first()
        while found:
            key = bytes(cursor.key())
            if not key.startswith(within):
                return
            author, first = key[:32], _SEQ.unpack_from(key, 32)[0]
            row = bytes(cursor.value())
            if len(key) != 40 or len(row) % _WIDTH or len(row) > RUN * _WIDTH:
                raise ValueError(f"message-at row {key.hex()} is malformed")
            for index in range(len(row) // _WIDTH):
                position = author + _SEQ.pack(first + index)
                if position >= start:
                    yield position, row[index * _WIDTH : (index + 1) * _WIDTH]
            found = cursor.next()
