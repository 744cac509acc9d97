"""The feed store: signed feeds in LMDB.

Every public method is one LMDB transaction, but for `ingest`: it first
looks up which ids are already held in a read transaction (so re-deliveries
cost no signature checks), verifies the rest with no transaction open (so
the write lock is never held for CPU work), then applies the batch in
(author, seq) order in one write transaction, which re-checks duplicates
and commits the batch whole. Reads parse stored bytes
without verifying signatures again; `check()` verifies everything.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lmdb

from tanglenode.protocol.evidence import MAX_PROOF_MESSAGES, InvalidProof, ProofKind, check_proof
from tanglenode.protocol.identity import Keypair, message_id, message_text
from tanglenode.protocol.limits import DEFAULT_LIMITS, Limits
from tanglenode.protocol.message import ROOT_LINK, Message, TangleLink, decode_message, sign_message
from tanglenode.storage import replication
from tanglenode.storage.check import CheckReport, check_store
from tanglenode.storage.document_ops import DocumentOps
from tanglenode.storage.document_rows import DocumentTables
from tanglenode.storage.documents import DocumentEngine
from tanglenode.storage.errors import (
    IncompatibleStore,
    NoIdentity,
    OwnFeedForked,
    StorageError,
    StoreDamaged,
    StoreFull,
    StoreNotFound,
    UnknownTangle,
)
from tanglenode.storage.ingest import (
    BatchWriter,
    HeadTimeframes,
    IngestResult,
    Outcome,
    PreparedBatch,
    prepare,
)
from tanglenode.storage.invalidation import (
    invalid_by_proof,
    invalid_feeds,
    kept_proofs,
)
from tanglenode.storage.layout import (
    MAX_NAMED_DATABASES,
    SCHEMA_VERSION,
    Tables,
    feed_key,
    parse_stored,
    split_head_value,
)
from tanglenode.storage.metapage import check_data_file
from tanglenode.storage.ownhead import OwnHead, head_path, refuse_if_behind, write_own_head
from tanglenode.storage.processor import (
    Processor,
    ProcessorTables,
    Stall,
    processed_frontier,
    read_processed,
    stalls,
)
from tanglenode.storage.tangles import tips_of
from tanglenode.storage.timeline import (
    TimelineReader,
    TimelineTables,
)
from tanglenode.storage.timeline_reads import TimelineReads
from tanglenode.storage.timelines import SPACETIME, tangle_timeline

DEFAULT_MAP_SIZE = 64 * 2**30  # address space, not disk: the file grows as data does

TimeframeSource = Callable[[Any, Tables, bytes], dict[bytes, int]]


def feed_ordered(candidates: list[tuple[int, Message]]) -> list[tuple[int, Message]]:
    """Each feed's messages in seq order, feeds still interleaved as they arrived.

    The k-th slot a feed occupies in the batch gets its k-th lowest seq. A
    chain needs seq order; keeping the interleaving keeps a causally ordered
    batch causal, so the spacetime sees few references to messages still to
    come (each of which costs a correction when they arrive).
    """
    slots: dict[bytes, list[int]] = {}
    for slot, (_index, message) in enumerate(candidates):
        slots.setdefault(message.author, []).append(slot)
    ordered: list[tuple[int, Message]] = [candidates[0]] * len(candidates) if candidates else []
    for author_slots in slots.values():
        mine = sorted((candidates[slot] for slot in author_slots), key=lambda pair: pair[1].seq)
        for slot, pair in zip(author_slots, mine, strict=True):
            ordered[slot] = pair
    return ordered


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


class FeedStore(TimelineReads, DocumentOps):
    """Signed, append-only feeds in one LMDB environment (a directory)."""

    def __init__(
        self,
        path: str | Path,
        *,
        keypair: Keypair | None = None,
        limits: Limits = DEFAULT_LIMITS,
        map_size: int = DEFAULT_MAP_SIZE,
        create: bool = True,
        timeframe_source: TimeframeSource | None = None,
    ) -> None:
        self.path = Path(path)
        if not create and not (self.path / "data.mdb").exists():
            raise StoreNotFound(f"no store at {self.path}")
        self.path.mkdir(parents=True, exist_ok=True)
        check_data_file(self.path)  # refuses an emptied or truncated data.mdb (SIGBUS otherwise)
        try:
            self._env = lmdb.open(str(self.path), map_size=map_size, max_dbs=MAX_NAMED_DATABASES)
        except lmdb.Error as error:
            raise StorageError(f"cannot open the store at {self.path}: {error}") from error
        self.own_head_path = head_path(self.path)
        self._keypair = keypair
        self._limits = limits
        self._timeframe_source = timeframe_source
        self._head_timeframes = HeadTimeframes()
        try:
            self._tables = Tables.open(self._env)
            self._timeline_tables = TimelineTables.open(self._env)
            self._processor_tables = ProcessorTables.open(self._env)
            self._document_tables = DocumentTables.open(self._env)
            self._check_schema()
        except lmdb.Error as error:
            self._env.close()
            raise StoreDamaged(f"the store at {self.path} is damaged: {error}") from None

    # -- lifecycle ---------------------------------------------------------

    def close(self) -> None:
        self._env.close()

    def __enter__(self) -> FeedStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def limits(self) -> Limits:
        return self._limits

    def _check_schema(self) -> None:
        with self._write() as txn:
            found = txn.get(b"schema", db=self._tables.meta)
            if found is None:
                txn.put(b"schema", SCHEMA_VERSION, db=self._tables.meta)
            elif found != SCHEMA_VERSION:
                raise IncompatibleStore(
                    f"store schema {found.decode(errors='replace')}, this build reads "
                    f"{SCHEMA_VERSION.decode()}: with the build that wrote it, "
                    "`tangled export --bundle FILE`, then `tangled import FILE` into a new "
                    "data directory with this one"
                )

    @contextlib.contextmanager
    def _write(self) -> Iterator[Any]:
        try:
            with self._env.begin(write=True) as txn:
                yield txn
        except lmdb.MapFullError as error:
            raise StoreFull(f"the store at {self.path} is full; raise storage.map_size") from error

    # -- writing -----------------------------------------------------------

    def ingest(self, raws: Iterable[bytes]) -> list[IngestResult]:
        """Validate and store a batch of signed messages, atomically; one result each.

        Ids already held are looked up first (a re-delivery costs no signature check).
        """
        return self.ingest_prepared(self.prepare(raws))

    def prepare(self, raws: Iterable[bytes]) -> PreparedBatch:
        """`storage.ingest.prepare` after one read transaction that finds the ids held already
        (those cost no signature check). Safe in any thread, beside a writer."""
        raws = [bytes(raw) for raw in raws]
        with self._env.begin() as txn:
            known = self._held_ids(txn, [message_id(raw) for raw in raws])
        return prepare(raws, self._limits, known)

    def ingest_prepared(self, batch: PreparedBatch) -> list[IngestResult]:
        """Store a batch `storage.ingest.prepare` checked (in any thread), atomically.

        One write transaction; the feed-chain rule, duplicates, forks and cycles
        are decided here against the store.
        """
        results = list(batch.results)
        candidates = feed_ordered(
            [(index, message) for index, message in enumerate(batch.messages) if message]
        )
        if not candidates:
            return results  # type: ignore[return-value]  # every slot is decided
        with self._write() as txn:
            writer = BatchWriter(txn, self._tables, self._timeline_tables, self._head_timeframes)
            for index, message in candidates:
                results[index] = writer.apply(message)
            writer.finish()
            self._process(
                txn, {m.author for _i, m in candidates}, writer.invalidated, writer.stored
            )
        return results  # type: ignore[return-value]  # every slot is filled above

    def _held_ids(self, txn, ids: list[bytes]) -> set[bytes]:
        """Which of `ids` the store holds (accepted, or as fork evidence)."""
        message_ids, evidence = self._tables.message_ids, self._tables.evidence
        found = {msg_id for msg_id in ids if txn.get(msg_id, db=message_ids) is not None}
        if txn.stat(evidence)["entries"]:
            found.update(msg_id for msg_id in ids if txn.get(msg_id, db=evidence) is not None)
        return found

    def publish(
        self,
        content: Any,
        tangles: Mapping[str, bytes | None] | None = None,
        *,
        timestamp: int | None = None,
    ) -> Message:
        """Sign and store the next message of our own feed.

        `tangles` maps a tangle name to its root id, or to None to root a new
        tangle at this message. `previous` is the tangle's current tips (the
        lowest `max_previous` ids when there are more). The timestamp defaults
        to now, never earlier than our previous message's.
        """
        with self._write() as txn:
            message = self._publish_in(txn, content, tangles, timestamp)
        self._wrote_own(message)
        return message

    def publish_batch(
        self, requests: Sequence[tuple[Any, Mapping[str, bytes | None] | None]]
    ) -> list[Message | Exception]:
        """Sign and store several of our messages, in order, in one durable transaction.

        One result per `(content, tangles)` request, as `publish` would give
        it: the message, or the error that refused that request alone (an
        unknown tangle, content too large or not publishable, our feed forked
        or behind). Each request runs in a nested transaction, so a refused
        one leaves nothing behind and the others commit, with consecutive
        seqs. The own-head file is written once, for the last message, after
        the commit. An error of the transaction itself (the commit, a full
        store) raises: then none of the batch is stored.
        """
        results: list[Message | Exception] = []
        with self._write() as txn:
            for content, tangles in requests:
                try:
                    with self._env.begin(write=True, parent=txn) as child:
                        results.append(self._publish_in(child, content, tangles))
                except lmdb.MapFullError as error:
                    full = StoreFull(f"the store at {self.path} is full; raise storage.map_size")
                    full.__cause__ = error
                    results.append(full)
                except Exception as error:  # this request's own failure; the others go on
                    results.append(error)
        published = [result for result in results if isinstance(result, Message)]
        if published:
            self._wrote_own(published[-1])
        return results

    def _publish_in(
        self,
        txn,
        content: Any,
        tangles: Mapping[str, bytes | None] | None,
        timestamp: int | None = None,
    ) -> Message:
        """Sign and store our next message inside the open write transaction `txn`."""
        if self._keypair is None:
            raise NoIdentity("this store was opened without the node's keypair")
        me = self._keypair.public
        writer = BatchWriter(txn, self._tables, self._timeline_tables, self._head_timeframes)
        if writer.invalid_from(me) is not None:
            raise OwnFeedForked(
                "our own feed is proven invalid (a fork or a cycle): the secret key is in "
                "use elsewhere"
            )
        head_seq, head_id = writer.head(me)
        refuse_if_behind(self.own_head_path, me, head_seq)
        links: dict[str, TangleLink] = {}
        for name, root in (tangles or {}).items():
            if root is None:
                links[name] = ROOT_LINK
                continue
            tips = tips_of(txn, self._tables, root, name)
            if not tips:
                raise UnknownTangle(f"no tangle {name!r} rooted at {message_text(root)}")
            links[name] = TangleLink(root, tuple(tips[: self._limits.max_previous]))
        if timestamp is None:
            timestamp = int(time.time() * 1000)
            if head_id is not None:
                previous = self._tables.bodies.message(txn, feed_key(me, head_seq))
                timestamp = max(timestamp, previous.timestamp)
        message = sign_message(
            self._keypair,
            seq=head_seq + 1,
            prev=head_id,
            timestamp=timestamp,
            timeframe=self._timeframe(txn, me),
            tangles=links,
            content=content,
            limits=self._limits,
        )
        result = writer.apply(message)
        if result.outcome is not Outcome.ACCEPTED:
            raise StorageError(f"our own message was not accepted: {result.reason}")
        writer.finish()
        self._process(txn, {me}, batch={(me, message.seq): message})
        return message

    def _wrote_own(self, message: Message) -> None:
        """Record our feed's new head beside the store (after the commit that holds it)."""
        write_own_head(self.own_head_path, OwnHead(message.author, message.seq, message.id))

    def _timeframe(self, txn, me: bytes) -> dict[bytes, int]:
        """A new message's timeframe: the processed frontier, our own feed left out."""
        if self._timeframe_source is not None:
            return self._timeframe_source(txn, self._tables, me)
        frontier = processed_frontier(txn, self._processor_tables)
        frontier.pop(me, None)
        return frontier

    def _process(
        self,
        txn,
        feeds: set[bytes],
        invalidated: Mapping[bytes, int] | None = None,
        batch: Mapping[tuple[bytes, int], Message] | None = None,
    ) -> None:
        processor = Processor(
            txn, self._processor_tables, self._tables.bodies, self._tables.invalid, batch
        )
        invalidated = invalidated or {}
        for feed, boundary in sorted(invalidated.items()):
            processor.forget(feed, boundary)
        processor.advance(sorted(feeds - invalidated.keys()))
        self._weave(txn, processor.order, batch or {}, invalidated)

    def _weave(self, txn, order: list[tuple[bytes, int]], batch, invalidated) -> None:
        """Apply the document messages just processed, in processed order (after rebuilding
        the documents a proof took messages from)."""
        if not order and not invalidated:
            return
        engine = DocumentEngine(
            txn, self._document_tables, self._tables.bodies, self._tables.message_ids
        )
        if invalidated:
            engine.rebuild_after_proofs(dict(invalidated))
        bodies = self._tables.bodies
        for feed, seq in order:
            message = batch.get((feed, seq))
            if message is None:
                message = bodies.message(txn, feed_key(feed, seq))
            engine.apply(message)
        engine.finish()

    def add_evidence(self, raws: Iterable[bytes]) -> tuple[str, dict[bytes, int]]:
        """Check a proof sent by a peer and apply it: ("new", feeds cut back) or ("known", {}).

        ("new", {}) when it cuts nothing but replaces a kept proof that cuts a feed
        at the same seq (the lower proof id is kept, so every node keeps the same
        one); it travels on like any new proof.

        Raises `InvalidMessage` for a message that fails validation and
        `InvalidProof` for messages that prove nothing.
        """
        raws = [bytes(raw) for raw in raws]
        if not 2 <= len(raws) <= MAX_PROOF_MESSAGES:
            raise InvalidProof(f"a proof holds 2 to {MAX_PROOF_MESSAGES} messages")
        proof = check_proof(decode_message(raw, self._limits) for raw in raws)
        with self._env.begin() as txn:
            if txn.get(proof.id, db=self._tables.proofs) is not None:
                return "known", {}
        with self._write() as txn:
            writer = BatchWriter(txn, self._tables, self._timeline_tables)
            lowered = writer.add_proof(proof)
            kept = txn.get(proof.id, db=self._tables.proofs) is not None  # may lower nothing
            writer.finish()
            self._process(txn, set(), writer.invalidated)
        return ("new", lowered) if kept else ("known", {})

    # -- reading -----------------------------------------------------------

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

    # -- replication and groups: one read transaction each ----------------------

    def replication_start(self, wants: Mapping[bytes, int]) -> int:
        """Where a peer's walk of the processed order starts (see `storage.replication`)."""
        with self._env.begin() as txn:
            return replication.start_of(txn, self._processor_tables, dict(wants))

    def next_batch(
        self, wants: Mapping[bytes, int], resume: int, limit: int, max_bytes: int
    ) -> replication.Batch:
        """The next messages a peer's subscriptions (feed -> seq sent) lack, in processed order."""
        with self._env.begin() as txn:
            return replication.next_batch(
                txn,
                self._processor_tables,
                self._tables.bodies,
                dict(wants),
                resume,
                limit,
                max_bytes,
            )

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

    @property
    def keypair(self) -> Keypair | None:
        return self._keypair

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
            return stalls(txn, self._processor_tables, self._tables.messages)

    def check(self) -> CheckReport:
        """Re-verify every stored message and every index (slow: reads everything)."""
        return check_store(self._env, self._tables)

    # -- pages: what one IPC reply or stream event shows, each read in one transaction --------

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
        with self._env.begin() as txn:
            return {
                "messages": txn.stat(self._tables.messages)["entries"],
                "feeds": txn.stat(self._tables.heads)["entries"],
                "evidence": txn.stat(self._tables.evidence)["entries"],
                "invalid_feeds": txn.stat(self._tables.invalid)["entries"],
                "bytes_on_disk": self._env.info()["last_pgno"] * self._env.stat()["psize"],
            }
