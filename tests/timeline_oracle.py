"""Plain, obviously-correct references for timeline tests."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import lmdb

from storage.timeline import Command, TimelineReader, TimelineTables, TimelineWriter


def rank_order(events: Iterable[tuple[bytes, Sequence[bytes]]]) -> list[bytes]:
    """DESIGN §4 computed from scratch: present events sorted by (longest-path rank, id)."""
    links = {event_id: [link for link in after] for event_id, after in events}
    rank: dict[bytes, int] = {}

    def rank_of(event_id: bytes) -> int:
        stack = [event_id]
        while stack:
            top = stack[-1]
            if top in rank:
                stack.pop()
                continue
            missing = [p for p in links[top] if p in links and p not in rank]
            if missing:
                stack.extend(missing)
                continue
            present = [rank[p] for p in links[top] if p in links]
            rank[top] = 1 + max(present) if present else 0
            stack.pop()
        return rank[event_id]

    return sorted(links, key=lambda event_id: (rank_of(event_id), event_id))


class EngineHarness:
    """A timeline engine in a real LMDB environment that can be closed and reopened."""

    def __init__(self, path, name: bytes = b"t") -> None:
        self.path = path
        self.name = name
        self.env: lmdb.Environment | None = None
        self.reopen()

    def reopen(self) -> None:
        if self.env is not None:
            self.env.close()
        self.env = lmdb.open(str(self.path), map_size=2**30, max_dbs=8)
        self.tables = TimelineTables.open(self.env)

    def close(self) -> None:
        if self.env is not None:
            self.env.close()
            self.env = None

    def add_batch(self, events: Iterable[tuple[bytes, Sequence[bytes]]]) -> list[list[Command]]:
        with self.env.begin(write=True) as txn:
            writer = TimelineWriter(txn, self.tables)
            done = [writer.add(self.name, ref, after) for ref, after in events]
            writer.finish()
        return done

    def add(self, ref: bytes, after: Sequence[bytes] = ()) -> list[Command]:
        return self.add_batch([(ref, after)])[0]

    def reader(self, txn) -> TimelineReader:
        return TimelineReader(txn, self.tables)

    def order(self) -> list[bytes]:
        with self.env.begin() as txn:
            reader = self.reader(txn)
            return reader.order(self.name) if reader.exists(self.name) else []

    def version(self) -> int:
        with self.env.begin() as txn:
            return self.reader(txn).version(self.name)
