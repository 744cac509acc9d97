"""The store as a Trio service: blocking LMDB calls in worker threads, and change signals.

Theory of operation
-------------------
`FeedStore` is synchronous; every call here runs it in a worker thread so
the event loop never blocks on disk. Writes go one at a time (LMDB has one
writer anyway), reads alongside. The service keeps the vector clock (feed
-> highest seq) in memory, updated from what each write stored, and bumps
`version` after every write that stored something. Publishes go through
`GroupCommit` (node/group_commit.py): those that arrive while a transaction
commits share the next one. Tasks that push to peers or subscribers call
`wait_changed(seen)` to sleep until the store moves past the version they
last saw, so nothing polls.

A fork found in a batch, or a proof from a peer, can cut feeds
back (storage.feeds.invalidation): the clock is then read again from the store,
and `evidence_version` goes up so every connection sends the new proof on.

The service also holds the node's `counters` (node/counters.py): what was
ingested, refused and published, and how long it took, for `/metrics`.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import trio

from tanglenode.node.counters import NodeCounters
from tanglenode.node.group_commit import GroupCommit
from tanglenode.node.verifier import Verifier
from tanglenode.protocol.doc_ipc import At
from tanglenode.protocol.document import TANGLE, init_content
from tanglenode.protocol.identity import Keypair, tag_of
from tanglenode.protocol.limits import MAX_SEQ
from tanglenode.protocol.message import Message
from tanglenode.storage.documents.rows import (
    BlameSpan,
    DocumentInfo,
    DyeSpan,
    Splice,
    SpliceEntry,
    Version,
)
from tanglenode.storage.engine.timeline import Command, Placement
from tanglenode.storage.feed_reads import Evidence
from tanglenode.storage.feeds.ingest import IngestResult, Outcome, PreparedBatch
from tanglenode.storage.feeds.processor import Stall, SuspectedFork
from tanglenode.storage.feeds.replication import Batch
from tanglenode.storage.groups import state as groups
from tanglenode.storage.store import FeedStore
from tanglenode.storage.tangle_reads import TangleInfo
from tanglenode.storage.views.digest import TimelineDigest
from tanglenode.storage.views.joined import MemberState


class StoreService:
    def __init__(self, store: FeedStore) -> None:
        self.store = store
        self.clock: dict[bytes, int] = {}  # feed -> highest valid seq held
        self.tags: dict[bytes, bytes] = {}  # feed -> tag of that message's id
        self.invalid: dict[bytes, int] = {}  # feed -> seq it is invalid from
        self._read_clock()
        self.version = 0
        self.evidence_version = 0
        self._changed = trio.Event()
        self._writer = trio.CapacityLimiter(1)
        self.verifier = Verifier(store.limits, store.prepare)  # a second core, beside the writer
        self._readers = trio.CapacityLimiter(4)
        self.counters = NodeCounters()  # for /metrics (node/counters.py)
        self.publishing = GroupCommit(
            store.publish_batch, self._writer, self._stored, self.counters.publish_latency
        )

    def _read_clock(self) -> None:
        feeds = self.store.feeds.held()
        self.clock = {feed.author: feed.head_seq for feed in feeds if feed.head_id}
        self.tags = {feed.author: tag_of(feed.head_id) for feed in feeds if feed.head_id}
        self.invalid = {f.author: f.invalid_from for f in feeds if f.invalid_from is not None}

    # -- change signals ------------------------------------------------------

    def _stored(self, messages: Iterable[Message]) -> None:
        grew = False
        for message in messages:
            if message.seq > self.clock.get(message.author, 0):
                self.clock[message.author] = message.seq
                self.tags[message.author] = tag_of(message.id)
            grew = True
        if grew:
            self.version += 1
            self._changed.set()
            self._changed = trio.Event()

    async def wait_changed(self, seen: int) -> int:
        """Sleep until the store's version passes `seen`; returns the new version."""
        while self.version <= seen:
            await self._changed.wait()
        return self.version

    # -- writes --------------------------------------------------------------

    async def ingest(self, raws: list[bytes]) -> list[IngestResult]:
        results = await trio.to_thread.run_sync(
            self.store.ingest, raws, limiter=self._writer, abandon_on_cancel=False
        )
        return await self._ingested(results)

    async def prepare(self, raws: list[bytes]) -> PreparedBatch:
        """Decode and verify `raws` beside the writer (node.verifier: a worker process for a
        large batch once `verifier.run` runs), while `ingest_prepared` stores the previous one."""
        return await self.verifier.prepare(raws)

    async def ingest_prepared(self, batch: PreparedBatch) -> list[IngestResult]:
        """Store a `prepare`d batch: what `ingest` does after the signatures."""
        results = await trio.to_thread.run_sync(
            self.store.ingest_prepared, batch, limiter=self._writer, abandon_on_cancel=False
        )
        return await self._ingested(results)

    async def _ingested(self, results: list[IngestResult]) -> list[IngestResult]:
        self.counters.count_ingest(results)
        if any(result.outcome is Outcome.FORK for result in results):
            await self._proofs_changed()
        accepted = (r.message for r in results if r.outcome is Outcome.ACCEPTED and r.message)
        self._stored(accepted)
        return results

    async def add_evidence(self, raws: list[bytes]) -> tuple[str, dict[bytes, int]]:
        """Check and apply a peer's proof (see `FeedStore.add_evidence`)."""
        outcome = await trio.to_thread.run_sync(
            self.store.add_evidence, raws, limiter=self._writer, abandon_on_cancel=False
        )
        if outcome[0] == "new":
            await self._proofs_changed()
        return outcome

    async def _proofs_changed(self) -> None:
        await trio.to_thread.run_sync(self._read_clock, limiter=self._writer)
        self.evidence_version += 1
        self.version += 1
        self._changed.set()
        self._changed = trio.Event()

    async def publish(self, content: Any, tangles: Mapping[str, bytes | None] | None) -> Message:
        """Sign and store our next message; concurrent publishes share one transaction
        (node/group_commit.py). Raises the error that refused this one."""
        return await self.publishing.publish(content, tangles)

    async def publish_whole(
        self, requests: Sequence[tuple[Any, Mapping[str, bytes | None] | None]]
    ) -> list[Message]:
        """Sign and store our next messages in one transaction of their own, all or none
        (`FeedStore.publish_batch(whole=True)`); raises the first refusal."""
        began = time.perf_counter()
        messages = await trio.to_thread.run_sync(
            functools.partial(self.store.publish_batch, requests, whole=True),
            limiter=self._writer,
            abandon_on_cancel=False,
        )
        self._stored(messages)
        for _message in messages:  # each is a publish to /metrics, as through the group commit
            self.counters.publish_latency.observe(time.perf_counter() - began)
        return messages

    # -- typed reads, in worker threads: each `FeedStore` read is one transaction ---------

    async def _reading(self, function, *args):
        """`function(*args)`, a read of the store, in a worker thread (at most 4 at once)."""
        return await trio.to_thread.run_sync(function, *args, limiter=self._readers)

    async def message(self, msg_id: bytes) -> Message | None:
        """A message by id (accepted, or held as fork evidence), None if not held."""
        return await self._reading(self.store.get, msg_id)

    async def timeline_page(
        self, name: bytes, start: int = 0, limit: int | None = None, *, states: bool = False
    ) -> tuple[int, list[tuple[int, bytes]]]:
        """The version and up to `limit` entries (all: None) from `start`, of one moment;
        with `states`, a tangle's entries carry their joined-view state as a third item."""
        stop = None if limit is None else start + limit
        return await self._reading(
            functools.partial(self.store.timeline_at, states=states), name, start, stop
        )

    async def timeline_window(
        self, name: bytes, from_time: int, to_time: int, mode: str, start: int, limit: int
    ) -> tuple[int, int | None, list[tuple[int, bytes]]]:
        """The time window over a causal-time timeline (storage.engine.causal_window)."""
        return await self._reading(
            self.store.timeline_window, name, from_time, to_time, mode, start, limit
        )

    async def timeline_log(self, name: bytes, since: int, limit: int) -> tuple[int, list[Command]]:
        """The head version and up to `limit` commands after `since`."""
        return await self._reading(self.store.timeline_log, name, since, limit)

    async def timeline_updates(
        self, name: bytes, since: int, limit: int, max_bytes: int
    ) -> tuple[int, list[tuple[Command, Message | None]]]:
        """The head version and a page of commands after `since`, inserts with their messages."""
        return await self._reading(self.store.timeline_updates, name, since, limit, max_bytes)

    async def member(
        self, name: bytes, msg_id: bytes
    ) -> tuple[Placement, MemberState | None] | None:
        """A message's placement and, in a tangle's timeline, its joined-view state."""
        return await self._reading(self.store.timeline_member, name, msg_id)

    async def processed_page(
        self, start: int, limit: int, max_bytes: int
    ) -> list[tuple[int, Message | None]]:
        """(index, message) of a page of the processed order from `start`."""
        return await self._reading(self.store.processed_page, start, limit, max_bytes)

    async def digest(self, name: bytes) -> TimelineDigest:
        """A timeline's digest and count (storage/views/digest.py: on demand, cached by version)."""
        return await self._reading(self.store.timeline_digest, name)

    async def messages(self, msg_ids: list[bytes]) -> list[Message | None]:
        """Messages by id (None for one not held), read in one worker thread."""
        return await self._reading(lambda: [self.store.get(msg_id) for msg_id in msg_ids])

    async def timeline_tail(
        self, name: bytes, count: int
    ) -> tuple[int, int, list[tuple[int, bytes, str]]]:
        """A tangle's version, where its last `count` entries start, and those entries with
        their states (one moment)."""
        return await self._reading(self.store.timeline_tail, name, count)

    async def member_states(self, name: bytes, members: list[bytes]) -> list[str]:
        """The joined-view state of each of `members` in tangle timeline `name`."""
        return await self._reading(self.store.member_states, name, members)

    async def tangles(
        self, after: tuple[bytes, str] | None, limit: int
    ) -> tuple[list[TangleInfo], tuple[bytes, str] | None]:
        """A page of the tangles held after `after`, and the next page's cursor."""
        return await self._reading(self.store.tangle_page, after, limit)

    async def about_names(self) -> dict[bytes, str]:
        """Each feed's self-chosen name (storage/views/abouts.py)."""
        return await self._reading(self.store.about_names)

    async def digests(self, limit: int) -> tuple[list[tuple[bytes, TimelineDigest]], bool]:
        """The spacetime's digest, then up to `limit` tangles'; whether some were left out."""
        return await self._reading(self.store.timeline_digests, limit)

    async def stalls(self) -> list[Stall]:
        return await self._reading(self.store.stalls)

    async def suspected_forks(self) -> list[SuspectedFork]:
        return await self._reading(self.store.suspected_forks)

    async def final(self) -> int:
        """The spacetime's finality watermark."""
        return await self._reading(self.store.spacetime_final)

    async def statistics(self) -> dict[str, int]:
        """The store's counts, the bytes of its data file in use and its map size."""
        return await self._reading(self.store.statistics)

    # The group reads are node/groups.py's (several store reads each, as it stands).

    async def group(self, keypair: Keypair, root: bytes) -> groups.GroupView:
        """Group `root` as `keypair` reads it (`groups.GroupError` if unknown)."""
        return await self._reading(groups.read_group, self.store, keypair, root)

    async def group_final(self, view: groups.GroupView) -> int:
        return await self._reading(groups.final, self.store, view)

    async def group_timeline(
        self, view: groups.GroupView, tangle: str, order: str
    ) -> list[dict[str, Any]]:
        return await self._reading(groups.timeline, self.store, view, tangle, order)

    # -- documents (storage/documents/engine.py): `at` is a weft, a message id, a version or None --

    async def create_document(self, title: str) -> Message:
        """Publish a new document's doc/init (`FeedStore.create_document`), group-committed
        with the other publishes."""
        return await self.publish(init_content(title), {TANGLE: None})

    async def edit_document(
        self, doc: bytes, splices: Sequence[Splice], base: int | None = None
    ) -> tuple[list[Message], dict[bytes, int]]:
        """Publish `splices` (made against version `base`, if given: `VersionConflict` when
        the document has moved on); the messages, and the version each one made."""
        messages, numbers = await trio.to_thread.run_sync(
            edit_and_number,
            self.store,
            doc,
            splices,
            base,
            limiter=self._writer,
            abandon_on_cancel=False,
        )
        self._stored(messages)
        return messages, numbers

    async def documents(self) -> list[DocumentInfo]:
        return await self._reading(self.store.documents.held)

    async def document_snapshot(self, doc: bytes) -> tuple[int, str]:
        """The version and the text at the processed frontier, read together."""
        return await self._reading(self.store.document_snapshot, doc)

    async def document_revision(self, doc: bytes, at: At) -> str:
        return await self._reading(self.store.document_revision, doc, at)

    async def document_dye(self, doc: bytes, old: At, new: At) -> list[DyeSpan]:
        return await self._reading(self.store.document_dye, doc, old, new)

    async def document_blame(self, doc: bytes, at: At) -> list[BlameSpan]:
        return await self._reading(self.store.document_blame, doc, at)

    async def document_versions(self, doc: bytes, since: int, limit: int) -> list[Version]:
        return await self._reading(self.store.document_versions, doc, since, limit)

    async def document_set_aside(self, doc: bytes) -> list[tuple[bytes, str, str]]:
        return await self._reading(self.store.document_set_aside, doc)

    async def document_splices(
        self, doc: bytes, since: int, limit: int
    ) -> tuple[int, list[SpliceEntry]]:
        """The head version and up to `limit` splice entries after version `since`."""
        return await self._reading(self.store.document_splices, doc, since, limit)

    # -- reads ---------------------------------------------------------------

    async def replication_start(self, wants: Mapping[bytes, int]) -> int:
        """Where a peer's walk of our processed order starts (`FeedStore.replication_start`)."""
        return await self._reading(self.store.replication_start, dict(wants))

    async def next_batch(
        self, wants: Mapping[bytes, int], resume: int, limit: int, max_bytes: int
    ) -> Batch:
        """What a peer's subscriptions lack next (`FeedStore.next_batch`)."""
        return await self._reading(self.store.next_batch, dict(wants), resume, limit, max_bytes)

    async def evidence(self) -> list[Evidence]:
        """Every kept proof (`FeedStore.evidence`)."""
        return await self._reading(self.store.evidence)


def edit_and_number(
    store: FeedStore, doc: bytes, splices: Sequence[Splice], base: int | None = None
) -> tuple[list[Message], dict[bytes, int]]:
    """`store.edit_document`, and the version number each published message made.

    Called with the write limiter held, so no other write comes between the
    edit and the read of its versions: they are the document's last ones.
    """
    messages = store.edit_document(doc, splices, base)
    if not messages:
        return messages, {}
    head, _entries = store.document_splices(doc, MAX_SEQ, 0)
    since = max(0, head - len(messages) - 1)
    ours = {message.id for message in messages}
    found = store.document_versions(doc, since, len(messages) + 2)
    return messages, {v.msg_id: v.number for v in found if v.msg_id in ours}
