"""Plain, obviously-correct references for timeline tests."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

import lmdb

from tanglenode.storage.engine.command_log import KEEP_ALL, LogRetention
from tanglenode.storage.engine.timeline import Command, TimelineTables, TimelineWriter
from tanglenode.storage.engine.timeline_reader import TimelineReader


def rank_order(events: Iterable[tuple[bytes, Sequence[bytes]]]) -> list[bytes]:
    """docs/TIMELINES.md's order from scratch: present events sorted by (longest-path rank, id)."""
    rank = ranks(events)
    return sorted(rank, key=lambda event_id: (rank[event_id], event_id))


def pending_counts(events: Iterable[tuple[bytes, Sequence[bytes]]]) -> dict[bytes, int]:
    """For each present event with links to absent refs, how many distinct such links."""
    links = {event_id: set(after) for event_id, after in events}
    counts = {event_id: len(after - links.keys()) for event_id, after in links.items()}
    return {event_id: count for event_id, count in counts.items() if count}


def ranks(events: Iterable[tuple[bytes, Sequence[bytes]]]) -> dict[bytes, int]:
    """The longest-path rank of every present event (links to absent refs ignored)."""
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

    return {event_id: rank_of(event_id) for event_id in links}


def expected_rows(events: Iterable[tuple[bytes, Sequence[bytes]]]) -> dict[str, set]:
    """The rows a fresh engine holds for these events (refs = sort ids), as `EngineHarness.rows`."""
    events = list(events)
    return {
        "nodes": {(ref, rank) for ref, rank in ranks(events).items()},
        "succ": {(link, ref) for ref, after in events for link in after},
        "pending": set(pending_counts(events).items()),
    }


class EngineHarness:
    """A timeline engine in a real LMDB environment that can be closed and reopened; its
    command log trimmed to `retention`."""

    def __init__(self, path, name: bytes = b"t", retention: LogRetention = KEEP_ALL) -> None:
        self.path = path
        self.name = name
        self.retention = retention
        self.env: lmdb.Environment | None = None
        self.links: dict[bytes, list[bytes]] = {}  # present members -> links they came with
        self.reopen()

    def reopen(self) -> None:
        if self.env is not None:
            self.env.close()
        self.env = lmdb.open(str(self.path), map_size=2**30, max_dbs=TimelineTables.COUNT + 1)
        self.tables = TimelineTables.open(self.env)

    def close(self) -> None:
        if self.env is not None:
            self.env.close()
            self.env = None

    def add_batch(self, events: Iterable[tuple[bytes, Sequence[bytes]]]) -> list[list[Command]]:
        return self.apply_batch([("add", ref, after) for ref, after in events])

    def apply_batch(self, steps: Iterable[tuple]) -> list[list[Command]]:
        """Run ("add", ref, links) and ("remove", ref) steps in one write transaction."""
        links = dict(self.links)  # kept only if the transaction commits

        def links_of(ref: bytes) -> list[bytes]:
            return links[ref]

        with self.env.begin(write=True) as txn:
            writer = TimelineWriter(txn, self.tables, self.retention)
            done = []
            for kind, ref, *after in steps:
                if kind == "add":
                    done.append(writer.add(self.name, ref, after[0]))
                    links[ref] = list(after[0])
                else:
                    done.append(writer.remove(self.name, ref, links.get(ref, ()), links_of))
                    del links[ref]
            writer.finish()
        self.links = links
        return done

    def add(self, ref: bytes, after: Sequence[bytes] = ()) -> list[Command]:
        return self.add_batch([(ref, after)])[0]

    def remove(self, ref: bytes) -> list[Command]:
        return self.apply_batch([("remove", ref)])[0]

    def rows(self) -> dict[str, set]:
        """The timeline's tl-nodes (ref, rank), tl-succ (ref, successor) and
        tl-pending (ref, count) rows, read from LMDB, each ref number named by
        `tl-ref-names`."""
        with self.env.begin() as txn:

            def ref(number: bytes) -> bytes:
                assert len(number) == 4, "rows hold ref numbers"
                return txn.get(number, db=self.tables.ref_names)

            decoders = {
                "nodes": lambda raw: struct.unpack(">I", raw[:4])[0],
                "succ": ref,
                "pending": lambda raw: struct.unpack(">I", raw)[0],
            }
            return {
                table: {(ref(key), decoders[table](value)) for key, value in rows}
                for table, rows in self.raw_rows().items()
            }

    def raw_rows(self) -> dict[str, set]:
        """The timeline's tl-nodes, tl-succ and tl-pending rows as LMDB holds them: (key
        without the timeline number, value), bytes for bytes."""
        with self.env.begin() as txn:
            number = txn.get(self.name, db=self.tables.names)
            found: dict[str, set] = {"nodes": set(), "succ": set(), "pending": set()}
            if number is None:
                return found
            for table in found:
                cursor = txn.cursor(db=getattr(self.tables, table))
                if not cursor.set_range(number):
                    continue
                for key, value in cursor.iternext():
                    if key[:4] != number:
                        break
                    found[table].add((bytes(key[4:]), bytes(value)))
            return found

    def reader(self, txn) -> TimelineReader:
        return TimelineReader(txn, self.tables)

    def order(self) -> list[bytes]:
        with self.env.begin() as txn:
            reader = self.reader(txn)
            return reader.order(self.name) if reader.exists(self.name) else []

    def version(self) -> int:
        with self.env.begin() as txn:
            return self.reader(txn).version(self.name)
