"""The feed store's reads of feeds, messages, evidence and the processed order.

`FeedStore` mixes these in, beside `TimelineReads` and `DocumentOps`; each
public method is one read transaction (or, for `iter_raw`, one per chunk),
as every store call is, and none writes. They read `_env`, `_tables`,
`_timeline_tables` and `_processor_tables`, which `FeedStore` opens, and
`_timeline_final` (`TimelineReads`). Stored bytes are parsed without
verifying signatures again; `check()` verifies everything.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from tanglenode.protocol.evidence import ProofKind
from tanglenode.protocol.message import Message
from tanglenode.storage.abouts import read_name, read_names
from tanglenode.storage.check import CheckReport, check_store
from tanglenode.storage.invalidation import (
    invalid_by_proof,
    invalid_feeds,
    invalid_from,
    kept_proofs,
)
from tanglenode.storage.layout import feed_key, parse_stored, split_head_value
from tanglenode.storage.processor import (
    Stall,
    SuspectedFork,
    processed_frontier,
    read_processed,
    stalls,
    suspected_forks,
)
from tanglenode.storage.tangles import tips_of
from tanglenode.storage.timeline import TimelineReader
from tanglenode.storage.timelines import SPACETIME, tangle_timeline


@dataclass(frozen=True, slots=True)
class FeedInfo:
    author: bytes
    head_seq: int
    head_id: bytes | None
    invalid_from: int | None


@dataclass(frozen=True, slots=True)
class WriterPast:
    """What every future message of one writer follows in a timeline: each of `all_of`
    and at least one of `one_of` (see `FeedStore.writers_final`)."""

    all_of: tuple[bytes, ...]
    one_of: tuple[bytes, ...]


@dataclass(frozen=True, slots=True)
class Evidence:
    """A kept proof: its kind, the feeds it made invalid (author -> seq), its messages."""

    id: bytes
    kind: ProofKind
    invalid: dict[bytes, int]
    messages: list[Message]


class StoreReads:
    """The feed, message, evidence and processed-order half of `FeedStore`'s reads."""

    def frontier(self) -> dict[bytes, int]:
        """Feed -> highest stored seq: this store's vector clock."""
        with self._env.begin() as txn:
            return {
                bytes(key): split_head_value(value)[0]
                for key, value in txn.cursor(db=self._tables.heads)
            }

    def get(self, msg_id: bytes) -> Message | None:
        """A message by id: an accepted one, or one held as fork evidence."""
        with self._env.begin() as txn:
            return self._get(txn, msg_id)

    def _get(self, txn, msg_id: bytes) -> Message | None:
        position = txn.get(msg_id, db=self._tables.message_ids)
        if position is not None:
            return self._tables.bodies.message(txn, position)
        raw = txn.get(msg_id, db=self._tables.evidence)
        return None if raw is None else parse_stored(raw)

    def get_by_seq(self, author: bytes, seq: int) -> Message | None:
        with self._env.begin() as txn:
            return self._tables.bodies.message(txn, feed_key(author, seq))

    def read_feed(self, author: bytes, from_seq: int = 1, limit: int = 1000) -> list[Message]:
        """Up to `limit` messages of a feed, from `from_seq` on, in seq order."""
        return [parse_stored(raw) for raw in self.read_feed_raw(author, from_seq, limit)]

    def read_feed_raw(self, author: bytes, from_seq: int = 1, limit: int = 1000) -> list[bytes]:
        """The signed bytes of up to `limit` messages of a feed from `from_seq` on (for gossip)."""
        raws: list[bytes] = []
        with self._env.begin() as txn:
            cursor = txn.cursor(db=self._tables.messages)
            if not cursor.set_range(feed_key(author, max(from_seq, 1))):
                return raws
            for key, value in cursor:
                if key[:32] != author or len(raws) >= limit:
                    break
                raws.append(self._tables.bodies.rebuild(txn, key, value))
        return raws

    def group_messages(self, root: bytes, tangle: str = "group") -> dict[bytes, Message]:
        """Every message of the timeline of tangle (`tangle`, `root`), in timeline order.

        Raises `UnknownTimeline` when the store holds no such tangle.
        """
        with self._env.begin() as txn:
            reader = TimelineReader(txn, self._timeline_tables)
            entries = reader.entries(tangle_timeline(root, tangle))
            return {msg_id: self._get(txn, msg_id) for _rank, msg_id in entries}

    def writers_final(self, timeline: bytes, writers: Iterable[WriterPast]) -> int:
        """How many leading positions of `timeline` none of `writers` can change.

        Each writer's future messages follow what its `WriterPast` names, so
        they rank above it (see `_timeline_final` for the rest of the bound).
        """
        writers = list(writers)

        def writers_bound(_txn, reader: TimelineReader) -> int | None:
            bounds = []
            for writer in writers:
                after = [reader.member_rank(timeline, i) for i in writer.all_of]
                one_of = [reader.member_rank(timeline, i) for i in writer.one_of]
                bound = min(one_of) + 1 if one_of else 0
                if after:
                    bound = max(bound, max(after) + 1)
                bounds.append(bound)
            return min(bounds) if bounds else None

        return self._timeline_final(timeline, writers_bound)

    def feeds(self) -> list[FeedInfo]:
        """Every feed held or proven invalid: its head (0 if none left) and boundary."""
        with self._env.begin() as txn:
            invalid = invalid_feeds(txn, self._tables)
            found = {
                bytes(author): FeedInfo(
                    bytes(author), *split_head_value(value), invalid.get(bytes(author))
                )
                for author, value in txn.cursor(db=self._tables.heads)
            }
        for author, boundary in invalid.items():
            found.setdefault(author, FeedInfo(author, 0, None, boundary))
        return [found[author] for author in sorted(found)]

    def about_names(self) -> dict[bytes, str]:
        """Feed -> the name it gave itself: its latest own `about` below its invalid
        boundary (storage.abouts)."""
        with self._env.begin() as txn:
            boundaries = invalid_feeds(txn, self._tables)
            return read_names(txn, self._tables.about_names, boundaries)

    def about_name(self, feed: bytes) -> str | None:
        """The name `feed` gave itself, as in `about_names()`, or None."""
        with self._env.begin() as txn:
            boundary = invalid_from(txn, self._tables, feed)
            return read_name(txn, self._tables.about_names, feed, boundary)

    def invalid_feeds(self) -> dict[bytes, int]:
        """Feed -> the seq it is invalid from, for every feed a kept proof cut back."""
        with self._env.begin() as txn:
            return invalid_feeds(txn, self._tables)

    def evidence(self) -> list[Evidence]:
        """Every kept proof (at most one per invalid feed)."""
        with self._env.begin() as txn:
            proofs = kept_proofs(txn, self._tables)
            cut = invalid_by_proof(txn, self._tables)
        return [
            Evidence(proof_id, kind, dict(sorted(cut.get(proof_id, {}).items())), messages)
            for proof_id, kind, messages in proofs
        ]

    def evidence_messages(self) -> list[Message]:
        """The messages of every kept proof (held apart from the feeds)."""
        return [message for proof in self.evidence() for message in proof.messages]

    def iter_raw(self, chunk: int = 10_000) -> Iterator[bytes]:
        """Every accepted message's signed bytes, feed by feed in seq order.

        Reads `chunk` rows per read transaction, so a long export never pins
        old pages while a node keeps writing.
        """
        after: bytes | None = None
        while True:
            with self._env.begin() as txn:
                cursor = txn.cursor(db=self._tables.messages)
                found = cursor.set_range(after) if after else cursor.first()
                if found and after is not None and cursor.key() == after:
                    found = cursor.next()
                rows = []
                bodies = self._tables.bodies
                while found and len(rows) < chunk:
                    key = bytes(cursor.key())
                    rows.append((key, bodies.rebuild(txn, key, cursor.value())))
                    found = cursor.next()
            if not rows:
                return
            yield from (raw for _key, raw in rows)
            after = rows[-1][0]

    def timelines(self) -> list[tuple[bytes, bytes | None, str | None]]:
        """(timeline name, tangle root, tangle name) of every timeline; the spacetime's root and
        name are None."""
        found: list[tuple[bytes, bytes | None, str | None]] = []
        with self._env.begin() as txn:
            for name in txn.cursor(db=self._timeline_tables.names).iternext(values=False):
                name = bytes(name)
                if name == SPACETIME:
                    found.append((name, None, None))
                elif name[:1] == b"\x01" and len(name) > 34:
                    found.append((name, name[1:33], name[34:].decode()))
        return found

    def tangle_tips(self, root: bytes, name: str) -> list[bytes]:
        with self._env.begin() as txn:
            return tips_of(txn, self._tables, root, name)

    def processed(self, start: int = 0, limit: int = 1000) -> list[tuple[int, bytes, int]]:
        """(index, feed, seq) of the processed order from `start` on."""
        with self._env.begin() as txn:
            return read_processed(txn, self._processor_tables, start, limit)

    def processed_frontier(self) -> dict[bytes, int]:
        with self._env.begin() as txn:
            return processed_frontier(txn, self._processor_tables)

    def stalls(self) -> list[Stall]:
        """Feeds whose next message waits on a message the store does not have."""
        with self._env.begin() as txn:
            return stalls(txn, self._processor_tables, self._tables.bodies)

    def suspected_forks(self) -> list[SuspectedFork]:
        """Every (feed, seq) some message names with a tag other than the one processed there:
        a fork until its proof arrives (storage.processor)."""
        with self._env.begin() as txn:
            return suspected_forks(txn, self._processor_tables, self._tables.bodies)

    def check(self) -> CheckReport:
        """Re-verify every stored message and every index (slow: reads everything)."""
        return check_store(self._env, self._tables, self._timeline_tables)

    def processed_page(
        self, start: int = 0, limit: int = 1000, max_bytes: int | None = None
    ) -> list[tuple[int, Message | None]]:
        """(index, message) of the processed order from `start` on (None: no longer held).

        The page stops early once the messages' signed bytes reach `max_bytes`.
        """
        page: list[tuple[int, Message | None]] = []
        size = 0
        with self._env.begin() as txn:
            for index, feed, seq in read_processed(txn, self._processor_tables, start, limit):
                message = self._tables.bodies.message(txn, feed_key(feed, seq))
                page.append((index, message))
                size += len(message.raw) if message else 0
                if max_bytes is not None and size >= max_bytes:
                    break
        return page

    def statistics(self) -> dict[str, int]:
        """Counts, the bytes of data.mdb in use (up to its last page) and the map's size."""
        with self._env.begin() as txn:
            info = self._env.info()
            return {
                "messages": txn.stat(self._tables.messages)["entries"],
                "feeds": txn.stat(self._tables.heads)["entries"],
                "evidence": txn.stat(self._tables.evidence)["entries"],
                "invalid_feeds": txn.stat(self._tables.invalid)["entries"],
                "bytes_on_disk": info["last_pgno"] * self._env.stat()["psize"],
                "map_size": info["map_size"],
            }
