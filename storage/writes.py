"""Every write to the feeds: ingest, our own messages, proofs; one transaction each.

Theory of operation
-------------------
`Writes` is the store's one writer. `ingest` first looks up which ids are
already held in a read transaction (so re-deliveries cost no signature
checks), verifies the rest with no transaction open (so the write lock is
never held for CPU work), then applies the batch in (author, seq) order in
one write transaction, which re-checks duplicates and commits the batch
whole. Our own messages are signed in one place, `_sign_next`, inside the
write transaction that stores them (`publish`, `publish_batch`, and
`publishing()` for a caller that publishes several messages in one
transaction, such as a document edit). A checked proof from a peer goes
through `add_evidence`.

Each write applies its messages with one `BatchWriter` (storage/feeds/ingest.py),
which hands them to every derived view (storage/registry.py); then the
causal processor advances (storage/feeds/processor.py) and what it processed goes
to every view's `processed` (documents weave there). All of it commits in
the write's one transaction.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import lmdb

from tanglenode.protocol.errors import InvalidMessage
from tanglenode.protocol.evidence import PROOF_MESSAGES, InvalidProof, check_proof
from tanglenode.protocol.identity import message_id, message_text
from tanglenode.protocol.message import (
    ROOT_LINK,
    Message,
    Named,
    TangleLink,
    decode_message,
    sign_message,
)
from tanglenode.storage.context import StoreContext
from tanglenode.storage.engine.timeline_reader import membership
from tanglenode.storage.erasure import carry_out, erasure_db, purge
from tanglenode.storage.errors import NoIdentity, OwnFeedForked, StorageError, UnknownTangle
from tanglenode.storage.feed_reads import message_by_id
from tanglenode.storage.feeds.derived import DerivedView, ProcessedStep, WriteScope
from tanglenode.storage.feeds.ingest import (
    BatchWriter,
    IngestResult,
    Outcome,
    PreparedBatch,
    prepare,
)
from tanglenode.storage.feeds.layout import Tables, feed_key, parse_stored
from tanglenode.storage.feeds.ownhead import OwnHead, OwnHeadFile
from tanglenode.storage.feeds.processor import Processor, processed_seq
from tanglenode.storage.feeds.scope_table import blocked_in
from tanglenode.storage.feeds.timeframe import new_timeframe
from tanglenode.storage.feeds.witnesses import (
    Entry,
    WitnessBook,
    drop_feeds,
    give_up,
    keep_witness,
)
from tanglenode.storage.scope import Scope, carried_in, write_scope
from tanglenode.storage.views.tangles import TangleTables, tips_of
from tanglenode.storage.views.timelines import SPACETIME

TimeframeSource = Callable[[Any, Tables, bytes], dict[bytes, Named]]


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


class OwnPublishing:
    """One open write transaction in which we publish several messages (`Writes.publishing`,
    or a `Job` of `Writes.publish_batch`)."""

    def __init__(self, txn: Any, writes: Writes) -> None:
        self.txn = txn
        self._writes = writes
        self.published: list[Message] = []

    def publish(
        self,
        content: Any,
        tangles: Mapping[str, bytes | None] | None,
        cites: Collection[bytes] = (),
    ) -> Message:
        """Sign, store and process our next message here; its timeframe covers `cites`."""
        message = self._writes.publish_in(self.txn, content, tangles, cites=cites)
        self.published.append(message)
        return message


T = TypeVar("T")


class Job:
    """A request of `publish_batch` that publishes what it decides inside the batch's
    transaction (a document edit planned against the text there): `run(session)`
    publishes through `session` and returns what it published."""

    def __init__(self, run: Callable[[OwnPublishing], list[Message]]) -> None:
        self.run = run


def _then_weave(write: Callable[..., T]) -> Callable[..., T]:
    """A write that, once committed, has the views catch up with the backlog it may have
    left (the documents': storage.documents.backlog), so the store's callers read the
    views whole."""

    @functools.wraps(write)
    def weaving(self: Writes, *args: Any, **kwargs: Any) -> T:
        result = write(self, *args, **kwargs)
        self.weave_all()
        return result

    return weaving


class Writes:
    """The store's writes (see the module docstring)."""

    def __init__(
        self,
        ctx: StoreContext,
        views: Sequence[DerivedView],
        own_head: OwnHeadFile,
        timeframe_source: TimeframeSource | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._ctx = ctx
        self._clock = clock  # seconds since the epoch: our messages' default timestamp
        self._views = views
        self._own_head = own_head
        self.own_head_unrecorded: str | None = None  # why our head's record lags, if it does
        self._timeframe_source = timeframe_source
        self._erasure = erasure_db(ctx.env)  # what was erased or purged (storage/erasure.py)

    @contextlib.contextmanager
    def publishing(self) -> Iterator[OwnPublishing]:
        """A write transaction in which to publish several of our messages, each processed as
        it is stored; our feed's head is recorded once the transaction commits."""
        with self._ctx.write() as txn:
            session = OwnPublishing(txn, self)
            yield session
        if session.published:
            self._wrote_own(session.published[-1])
        self.weave_all()

    def ingest(self, raws: Iterable[bytes]) -> list[IngestResult]:
        """Validate and store a batch of signed messages, atomically; one result each.

        Ids already held are looked up first (a re-delivery costs no signature check).
        """
        return self.ingest_prepared(self.prepare(raws))

    def prepare(self, raws: Iterable[bytes]) -> PreparedBatch:
        """`storage.feeds.ingest.prepare` after one read transaction that finds the ids held already
        (those cost no signature check). Safe in any thread, beside a writer."""
        raws = [bytes(raw) for raw in raws]
        with self._ctx.read() as txn:
            known = self._held_ids(txn, [message_id(raw) for raw in raws])
        return prepare(raws, self._ctx.limits, known)

    def ingest_prepared(self, batch: PreparedBatch, *, weave: bool = True) -> list[IngestResult]:
        """Store a batch `storage.feeds.ingest.prepare` checked (in any thread), atomically.

        One write transaction; the feed-chain rule, duplicates, forks and cycles
        are decided here against the store. Then the documents' backlog is woven,
        a slice a transaction (storage.documents.backlog), unless `weave` is
        False: the node weaves it itself, letting other writes in between.
        """
        results = self._ingest_prepared(batch)
        if weave:
            self.weave_all()
        return results

    def weave_backlog(self, work: int | None = None) -> int:
        """Have the views that left work for later (the documents' backlog,
        storage.documents.backlog) do about `work` units of it each (None: a slice of
        their choosing), in one transaction; how much remains (`ViewHooks.catch_up`)."""
        with self._ctx.read() as txn:
            behind = [view for view in self._views if view.hooks.backlog(txn)]
        if not behind:
            return 0  # the common case: no write transaction
        with self._ctx.write() as txn:
            return sum(view.hooks.catch_up(txn, work) for view in behind)

    def backlog(self) -> int:
        """How much work the views left for later (`ViewHooks.backlog`): the document
        messages waiting to be woven."""
        with self._ctx.read() as txn:
            return sum(view.hooks.backlog(txn) for view in self._views)

    def weave_all(self) -> None:
        """Have the views do all the work they left for later, a slice a transaction."""
        while self.weave_backlog():
            pass

    def _ingest_prepared(self, batch: PreparedBatch) -> list[IngestResult]:
        results = list(batch.results)
        candidates = feed_ordered(
            [(index, message) for index, message in enumerate(batch.messages) if message]
        )
        if not candidates:
            return results  # type: ignore[return-value]  # every slot is decided
        with self._ctx.write() as txn:
            writer = BatchWriter(txn, self._ctx, self._views)
            for index, message in candidates:
                results[index] = writer.apply(message)
            writer.finish()
            self._process(
                txn,
                {m.author for _i, m in candidates},
                writer.invalidated,
                writer.stored,
                writer.named_by_cut,
                writer.cut,
            )
        return results  # type: ignore[return-value]  # every slot is filled above

    def _held_ids(self, txn, ids: list[bytes]) -> set[bytes]:
        """Which of `ids` the store holds (accepted, or as fork evidence)."""
        held, evidence = self._ctx.tables.ids.holds, self._ctx.tables.evidence
        found = {msg_id for msg_id in ids if held(txn, msg_id)}
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
        (result,) = self.publish_batch([(content, tangles)], timestamps=[timestamp])
        if isinstance(result, Exception):
            raise result
        return result

    @_then_weave
    def publish_batch(
        self,
        requests: Sequence[tuple[Any, Mapping[str, bytes | None] | None] | Job],
        *,
        timestamps: Sequence[int | None] | None = None,
        whole: bool = False,
    ) -> list[Message | list[Message] | Exception]:
        """Sign and store several of our messages, in order, in one durable transaction.

        One result per `(content, tangles)` request, exactly as publishing them
        one by one would give it (`timestamps`, if given, as `publish`'s): the
        message, or the error that refused that request alone (an unknown
        tangle, content too large or not publishable). Every refusal is found
        before its message is signed, so it leaves nothing and the others
        commit with consecutive seqs. Our feed forked or behind refuses the
        whole batch. The own-head file is written once, for the last message,
        after the commit. An error of the transaction itself (the commit, a
        full store) raises: then none of the batch is stored.

        `whole`: all of the batch or none of it (messages that only mean something
        together, a group's exclusion and its new epoch): the first refusal
        raises instead, and nothing is stored.

        One `BatchWriter`, one processor pass and one document pass serve the
        batch. That gives each message the timeframe it would get alone: a
        timeframe leaves our own feed out, and processing our earlier messages
        of the batch moves only our own feed, unless some candidate waits on
        our feed or our feed is not processed up to its head (a store
        restored or imported), or a view wants the request alone
        (`ViewHooks.publishes_alone`: a document edit names the woven tips the one
        before it left); then each request gets
        its own nested transaction and processing, as `publish_in`. A `Job`
        always does: its result is the list of messages it published.
        """
        if not requests:
            return []
        stamps = list(timestamps) if timestamps is not None else [None] * len(requests)
        with self._ctx.write() as txn:
            writer = BatchWriter(txn, self._ctx, self._views)
            try:
                me = self._own_feed(writer)
            except StorageError as error:
                if whole:
                    raise
                return [error] * len(requests)
            one_at_a_time = any(
                isinstance(request, Job) or self._publishes_alone(request[1] or {})
                for request in requests
            )
            if one_at_a_time or self._processing_moves_others(txn, me, writer.head(me)[0]):
                results = self._publish_each(txn, requests, stamps)
            else:
                results = self._publish_together(txn, writer, me, requests, stamps)
            refused = [result for result in results if isinstance(result, Exception)]
            if whole and refused:
                raise refused[0]  # leaving the transaction by an exception aborts it
        published = [
            message
            for result in results
            for message in (result if isinstance(result, list) else [result])
            if isinstance(message, Message)
        ]
        if published:
            self._wrote_own(published[-1])
        return results

    def _own_feed(self, writer: BatchWriter) -> bytes:
        """Our feed's key, once it is sure that publishing cannot fork it."""
        if self._ctx.keypair is None:
            raise NoIdentity("this store was opened without the node's keypair")
        me = self._ctx.keypair.public
        if writer.invalid_from(me) is not None:
            raise OwnFeedForked(
                "our own feed is proven invalid (a fork): the secret key is in use elsewhere"
            )
        self._own_head.refuse_if_behind(me, writer.head(me)[0])
        return me

    def _processing_moves_others(self, txn, me: bytes, head_seq: int) -> bool:
        """Whether processing our next message may move another feed's processed seq."""
        if processed_seq(txn, self._ctx.processor_tables, me) != head_seq:
            return True
        cursor = txn.cursor(db=self._ctx.processor_tables.wait)
        return cursor.set_range(me) and cursor.key()[:32] == me

    def _publish_together(self, txn, writer: BatchWriter, me: bytes, requests, stamps):
        """The batch in `txn` with one writer and one processing (see `publish_batch`)."""
        head_seq, head_id = writer.head(me)
        latest = 0 if head_id is None else self._own_message(txn, me, head_seq).timestamp
        results: list[Message | Exception] = []
        named: set[bytes] = set()  # what our messages of the batch name: heads no more
        for (content, tangles), timestamp in zip(requests, stamps, strict=True):
            try:
                message = self._sign_next(
                    txn, me, (head_seq, head_id, latest), content, tangles, timestamp, named=named
                )
            except Exception as error:  # this request's own failure: nothing written yet
                results.append(error)
                continue
            self._apply_own(writer, message)
            head_seq, head_id, latest = message.seq, message.id, message.timestamp
            named.update(feed_key(feed, seq) for feed, seq in message.timeframe.items())
            results.append(message)
        writer.finish()
        self._process(txn, {me}, batch=writer.stored)
        return results

    def _publish_each(self, txn, requests, stamps) -> list[Message | list[Message] | Exception]:
        """The batch as one nested transaction per request, each processed on its own."""
        results: list[Message | list[Message] | Exception] = []
        for request, timestamp in zip(requests, stamps, strict=True):
            try:
                with self._ctx.env.begin(write=True, parent=txn) as child:
                    if isinstance(request, Job):
                        results.append(request.run(OwnPublishing(child, self)))
                    else:
                        content, tangles = request
                        results.append(self.publish_in(child, content, tangles, timestamp))
            except lmdb.MapFullError as error:
                full = self._ctx.full()
                full.__cause__ = error
                results.append(full)
            except Exception as error:  # this request's own failure; the others go on
                results.append(error)
        return results

    def publish_in(
        self,
        txn,
        content: Any,
        tangles: Mapping[str, bytes | None] | None,
        timestamp: int | None = None,
        cites: Collection[bytes] = (),
    ) -> Message:
        """Sign, store and process our next message inside the open write transaction `txn`;
        its timeframe covers the messages `cites` names (storage.feeds.timeframe)."""
        writer = BatchWriter(txn, self._ctx, self._views)
        me = self._own_feed(writer)
        head_seq, head_id = writer.head(me)
        latest = 0
        if timestamp is None and head_id is not None:
            latest = self._own_message(txn, me, head_seq).timestamp
        message = self._sign_next(
            txn, me, (head_seq, head_id, latest), content, tangles, timestamp, cites=cites
        )
        self._apply_own(writer, message)
        writer.finish()
        self._process(txn, {me}, batch={(me, message.seq): message})
        return message

    def _sign_next(
        self,
        txn,
        me: bytes,
        head: tuple[int, bytes | None, int],
        content: Any,
        tangles: Mapping[str, bytes | None] | None,
        timestamp: int | None,
        *,
        named: set[bytes] | None = None,
        cites: Collection[bytes] = (),
    ) -> Message:
        """Sign our next message after `head` (seq, id, timestamp): the one signing path.

        The timestamp defaults to now, never earlier than the head's; the timeframe
        is the heads we processed (storage.feeds.timeframe), leaving out those `named`
        by our earlier messages of the batch and covering the messages `cites` names.
        """
        head_seq, head_id, latest = head
        if timestamp is None:
            timestamp = max(int(self._clock() * 1000), latest)
        links = self._links(txn, tangles)
        return sign_message(
            self._ctx.keypair,
            seq=head_seq + 1,
            prev=head_id,
            timestamp=timestamp,
            timeframe=self._timeframe(txn, me, links, named, cites),
            tangles=links,
            content=content,
            limits=self._ctx.limits,
        )

    def _links(self, txn, tangles: Mapping[str, bytes | None] | None) -> dict[str, TangleLink]:
        """A new message's tangle links: each tangle's current tips (`UnknownTangle` if none),
        those a view keeps for it where one does (`ViewHooks.tips`: a document's woven
        tips), else its joined tips (storage.views.tangles)."""
        links: dict[str, TangleLink] = {}
        for name, root in (tangles or {}).items():
            if root is None:
                links[name] = ROOT_LINK
                continue
            tips = self._view_tips(txn, root, name)
            if tips is None:
                tips = tips_of(txn, TangleTables.of(self._ctx), root, name)
            if not tips:
                raise UnknownTangle(
                    f"no tangle {name!r} rooted at {message_text(root)}", name, root
                )
            links[name] = TangleLink(root, tuple(tips[: self._ctx.limits.max_previous]))
        return links

    def _publishes_alone(self, tangles: Mapping[str, bytes | None]) -> bool:
        """Whether a view wants a publish into `tangles` in its own nested transaction."""
        return any(view.hooks.publishes_alone(tangles) for view in self._views)

    def _view_tips(self, txn, root: bytes, name: str) -> list[bytes] | None:
        """The tips a view keeps for tangle `name` (a document's woven tips), or None."""
        for view in self._views:
            tips = view.hooks.tips(txn, root, name)
            if tips is not None:
                return tips
        return None

    def _own_message(self, txn, me: bytes, seq: int) -> Message:
        return self._ctx.tables.bodies.message(txn, feed_key(me, seq))

    @staticmethod
    def _apply_own(writer: BatchWriter, message: Message) -> None:
        result = writer.apply(message)
        if result.outcome is not Outcome.ACCEPTED:
            raise StorageError(f"our own message was not accepted: {result.reason}")

    def _wrote_own(self, message: Message) -> None:
        """Record our feed's new head beside the store (after the commit that holds it).

        The message is stored whatever happens here, so a failure to write the record (no
        descriptor left, EMFILE; a full disk) is not the publish's: the record lags, which
        is safe (storage/feeds/ownhead.py), the next publish writes it again, and
        `own_head_unrecorded` says why until one does."""
        try:
            self._own_head.write(OwnHead(message.author, message.seq, message.id))
        except OSError as error:
            self.own_head_unrecorded = f"seq {message.seq}: {error}"
        else:
            self.own_head_unrecorded = None

    def _timeframe(
        self,
        txn,
        me: bytes,
        links: dict[str, TangleLink],
        named_before: set[bytes] | None = None,
        cites: Collection[bytes] = (),
    ) -> dict[bytes, Named]:
        """A new message's timeframe: the heads we processed, capped (storage.feeds.timeframe)."""
        if self._timeframe_source is not None:
            return self._timeframe_source(txn, self._ctx.tables, me)
        return new_timeframe(
            txn,
            self._ctx.tables,
            self._ctx.processor_tables,
            me,
            links,
            named_before=named_before or (),
            cites=cites,
        )

    def _process(
        self,
        txn,
        feeds: set[bytes],
        invalidated: Mapping[bytes, int] | None = None,
        batch: Mapping[tuple[bytes, int], Message] | None = None,
        named_by_cut: Collection[bytes] = frozenset(),
        cut: Sequence[Message] = (),
        rescoped: bool = False,
        purged: Collection[bytes] = frozenset(),
        witnessed: Collection[Entry] = (),
    ) -> None:
        """Advance the causal processor, then hand what it processed to every view."""
        tables = self._ctx.tables
        carried = carried_in(txn, tables)
        book = None
        if carried is not None:  # a scope was chosen: feeds it leaves out are witnessed
            book = WitnessBook(
                txn, self._ctx.witness_tables, tables.bodies, blocked_in(txn, tables)
            )
        processor = Processor(
            txn,
            self._ctx.processor_tables,
            tables.bodies,
            tables.invalid,
            membership(txn, self._ctx.timeline_tables, SPACETIME),
            batch,
            carried,
            book,
        )
        invalidated = invalidated or {}
        for feed, boundary in sorted(invalidated.items()):
            processor.forget(feed, boundary)
        for feed in sorted(purged):
            processor.purge(feed)
        processor.restore_heads(set(named_by_cut) - invalidated.keys() - set(purged))
        if rescoped:
            processor.release_uncarried()
        processor.witnessed(witnessed)
        processor.advance(sorted(feeds - invalidated.keys()))
        # The views take a purged feed out as if a proof had cut it from seq 1.
        removed = {**invalidated, **dict.fromkeys(purged, 1)}
        step = ProcessedStep(processor.order, batch or {}, removed, cut)
        scope = WriteScope(txn, self._ctx)
        for view in self._views:
            view.processed(scope, step)
        carry_out(scope, self._erasure, self._views, step)  # erase requests just processed
        scope.finish()

    def purge(self, ids: Collection[bytes]) -> list[bytes]:
        """The operator's purge: drop the contents of the messages `ids` names that are held
        (their headers stay, so every link through them holds), here only, in one
        transaction; the ids whose content went (storage/erasure.py)."""
        with self._ctx.write() as txn:
            scope = WriteScope(txn, self._ctx)
            held = [m for m in (message_by_id(txn, self._ctx.tables, i) for i in ids) if m]
            gone = purge(scope, self._erasure, self._views, held)
            scope.finish()
        return gone

    def purge_feed(self, author: bytes) -> list[bytes]:
        """`purge` of every content of `author`'s feed (`tangled block --purge`)."""
        with self._ctx.write() as txn:
            scope = WriteScope(txn, self._ctx)
            bodies = self._ctx.tables.bodies
            held = [
                parse_stored(bodies.rebuild(txn, position, value))
                for position, value in bodies.rows(txn, author, author)
            ]
            gone = purge(scope, self._erasure, self._views, held)
            scope.finish()
        return gone

    @_then_weave
    def set_scope(self, scope: Scope) -> bool:
        """Keep `scope` as the feeds this node carries (storage.scope), take every message
        of a feed it blocks out of the store and every view, and process what waited on a
        feed it no longer carries, in one transaction; False if it was kept already
        (nothing written). A feed merely no longer carried keeps what was held of it."""
        with self._ctx.write() as txn:
            if not write_scope(txn, self._ctx.tables, scope):
                return False
            drop_feeds(
                txn, self._ctx.witness_tables, lambda f: f in scope.blocked or scope.carries(f)
            )
            writer = BatchWriter(txn, self._ctx, self._views)
            for feed in sorted(scope.blocked):
                writer.purge(feed)
            writer.finish()
            self._process(
                txn,
                set(),
                named_by_cut=writer.named_by_cut,
                cut=writer.cut,
                rescoped=True,
                purged=writer.purged,
            )
        return True

    @_then_weave
    def add_witnesses(self, raws: Iterable[bytes]) -> list[Entry]:
        """Keep the messages that answer witnesses asked for (storage/feeds/witnesses.py)
        and process what waited for them, in one transaction; the entries kept. Each is
        checked in full first (`InvalidMessage`); one not asked for is ignored."""
        messages = [decode_message(bytes(raw), self._ctx.limits) for raw in raws]
        with self._ctx.write() as txn:
            kept = [
                entry
                for message in messages
                if (entry := keep_witness(txn, self._ctx.witness_tables, message)) is not None
            ]
            if kept:
                self._process(txn, set(), witnessed=kept)
        return kept

    @_then_weave
    def give_up_witnesses(self, entries: Iterable[Entry]) -> list[Entry]:
        """No peer can give these witnesses: their entries are met from now on, and what
        waited for them is processed, in one transaction; the entries given up."""
        with self._ctx.write() as txn:
            marked = give_up(txn, self._ctx.witness_tables, entries)
            if marked:
                self._process(txn, set(), witnessed=marked)
        return marked

    @_then_weave
    def add_evidence(self, raws: Iterable[bytes]) -> tuple[str, dict[bytes, int]]:
        """Check a proof sent by a peer and apply it: ("new", feeds cut back) or ("known", {}).

        ("new", {}) when it cuts nothing but replaces a kept proof that cuts a feed
        at the same seq (the lower proof id is kept, so every node keeps the same
        one); it travels on like any new proof.

        Raises `InvalidMessage` for a message that fails validation and
        `InvalidProof` for messages that prove nothing.
        """
        [outcome] = self.add_evidences([raws])
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def add_evidences(
        self, proofs: Iterable[Iterable[bytes]]
    ) -> list[tuple[str, dict[bytes, int]] | InvalidMessage | InvalidProof]:
        """`add_evidence` for several proofs, the new ones applied in one write transaction
        (a peer's burst of proofs costs one commit, not one each); for each proof, its
        outcome or the error that refuses it (the others are applied all the same)."""
        outcomes: list[tuple[str, dict[bytes, int]] | InvalidMessage | InvalidProof] = []
        checked: dict[int, Any] = {}
        for number, raws in enumerate(proofs):
            try:
                raws = [bytes(raw) for raw in raws]
                if len(raws) != PROOF_MESSAGES:
                    raise InvalidProof(f"a proof holds {PROOF_MESSAGES} messages")
                checked[number] = check_proof(decode_message(raw, self._ctx.limits) for raw in raws)
                outcomes.append(("known", {}))
            except (InvalidMessage, InvalidProof) as error:
                outcomes.append(error)
        with self._ctx.read() as txn:
            fresh = {
                number: proof
                for number, proof in checked.items()
                if txn.get(proof.id, db=self._ctx.tables.proofs) is None
            }
        if not fresh:
            return outcomes
        with self._ctx.write() as txn:
            writer = BatchWriter(txn, self._ctx, self._views)
            for number, proof in fresh.items():
                lowered = writer.add_proof(proof)
                if txn.get(proof.id, db=self._ctx.tables.proofs) is not None:  # may lower nothing
                    outcomes[number] = ("new", lowered)
            writer.finish()
            self._process(
                txn, set(), writer.invalidated, named_by_cut=writer.named_by_cut, cut=writer.cut
            )
        return outcomes
