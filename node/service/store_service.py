"""The store as a Trio service: blocking LMDB calls in worker threads, and change signals.

Theory of operation
-------------------
`FeedStore` is synchronous; every call here runs it in a worker thread so
the event loop never blocks on disk. Writes go one at a time (LMDB has one
writer anyway), reads alongside. The service has a typed method where the
node adds something of its own to a store call (the clock and `version`
after a write, group commit for publishes); any read is `read(fn, *args)`,
which runs `fn(store, *args)` in a worker thread, so a new read of the
store needs nothing here. The service keeps the vector clock (feed
-> highest seq) in memory, updated from what each write stored, and bumps
`version` after every write that stored something. Publishes go through
`GroupCommit` (node/service/group_commit.py): those that arrive while a transaction
commits share the next one. Tasks that push to peers or subscribers call
`wait_changed(seen)` to sleep until the store moves past the version they
last saw, so nothing polls.

A fork found in a batch, or a proof from a peer, can cut feeds
back (storage.feeds.invalidation): the clock is then read again from the store,
and `evidence_version` goes up so every connection sends the new proof on.

A write the store has no room for raises `StoreFull`; the service keeps it as
a state, `full` (why, or None once a write commits again), which `status`,
/metrics and the peers' reasons show in one line.

The service also holds the node's `counters` (node/service/counters.py): what was
ingested, refused and published, and how long it took, for `/metrics`.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import trio

from tanglenode.node.service.counters import NodeCounters
from tanglenode.node.service.group_commit import GroupCommit
from tanglenode.node.service.head_changes import HeadChanges
from tanglenode.node.service.offload import Offload
from tanglenode.node.service.verifier import Verifier
from tanglenode.protocol.contacts import CONTACT
from tanglenode.protocol.document import TANGLE, init_content
from tanglenode.protocol.identity import tag_of
from tanglenode.protocol.message import Message, author_of
from tanglenode.storage.documents.rows import Splice
from tanglenode.storage.errors import NotInGroup, StoreFull
from tanglenode.storage.feeds.ingest import IngestResult, Outcome, PreparedBatch
from tanglenode.storage.feeds.witnesses import Entry
from tanglenode.storage.groups.doc_keys import refresh_document_keys
from tanglenode.storage.groups.listing import group_members
from tanglenode.storage.groups.state import EPOCH, GROUP, MEMBERS
from tanglenode.storage.invites import Redemption
from tanglenode.storage.scope import Scope
from tanglenode.storage.store import FeedStore
from tanglenode.storage.writes import Job, OwnPublishing

T = TypeVar("T")
SCOPE_REFRESH_GAP = 1.0  # seconds between refreshes the stored contact messages call for


def _may_change_scope(message: Message) -> bool:
    """Whether storing `message` may change what the node carries: a contact message, or
    one that changes a private group's members (it joins the group's `members` or `epoch`
    tangle; a post, in the `group` tangle only, does not: a group's chat never makes the
    node compute its scope again)."""
    content = message.content
    if isinstance(content, dict) and content.get("type") == CONTACT:
        return True
    return MEMBERS in message.tangles or EPOCH in message.tangles


class StoreService:
    def __init__(self, store: FeedStore, hops: int | None = None, *, inline: bool = False) -> None:
        self.store = store
        self.offload = Offload(inline)  # worker threads, or the loop itself (the simulator)
        self.on_stored: Callable[[list[Message]], None] | None = None  # the simulator's probe
        self.hops = hops  # the scope's reach (storage/scope.py); None: every feed
        self.scope: Scope = store.feeds.scope()  # what the node carries, as last kept
        self.own_feed = store.keypair.public if store.keypair is not None else None
        self._scope_stale = trio.Event()  # a contact or group message was stored
        # Group messages stored, and how many of them the keys were last read after.
        self._group_messages = self._keys_read_after = 0
        self._scoping = trio.Lock()
        self.heads = HeadChanges()  # which feeds' heads moved, for the sessions' CLOCK notes
        self._watchers: set[Callable[[], None]] = set()
        self._shared: dict[Callable[[], Any], Any] = {}
        self.clock: dict[bytes, int] = {}  # feed -> highest valid seq held
        self.tags: dict[bytes, bytes] = {}  # feed -> tag of that message's id
        self.invalid: dict[bytes, int] = {}  # feed -> seq it is invalid from
        self._read_clock()
        # The number of the last proof kept (storage/feeds/proof_order.py) whose feed is in
        # `invalid`: a session sends those up to it by feed, and reads the later ones.
        self.proofs_known = store.feeds.last_proof()
        self.version = 0
        self.evidence_version = 0
        self._changed = trio.Event()
        self._writer = trio.CapacityLimiter(1)
        self.verifier = Verifier(  # a second core, beside the writer
            store.limits, store.writes.prepare, self.offload
        )
        self._readers = trio.CapacityLimiter(4)
        self.counters = NodeCounters()  # for /metrics (node/service/counters.py)
        self.full: str | None = None  # why the last write found no room (None: it found room)
        self.publishing = GroupCommit(
            self._watching_room(store.writes.publish_batch),
            self._writer,
            self._stored,
            self.counters.publish_latency,
            self.offload,
        )

    def _read_clock(self, feeds=None) -> None:
        """The clock from the feeds held (`store.feeds.held()`, read here if not given): on
        the event loop, so no session sees `clock` and `tags` of two different moments."""
        feeds = self.store.feeds.held() if feeds is None else feeds
        self.clock = {feed.author: feed.head_seq for feed in feeds if feed.head_id}
        self.tags = {feed.author: tag_of(feed.head_id) for feed in feeds if feed.head_id}
        self.invalid = {f.author: f.invalid_from for f in feeds if f.invalid_from is not None}
        self.heads.reset()

    # -- change signals ------------------------------------------------------

    def _stored(self, messages: Iterable[Message]) -> None:
        messages = list(messages)
        if self.on_stored is not None:
            self.on_stored(messages)
        grew = False
        for message in messages:
            if _may_change_scope(message):
                self._scope_stale.set()
            if GROUP in message.tangles:  # even a post may complete a re-key it follows
                self._group_messages += 1
            if message.seq > self.clock.get(message.author, 0):
                self.clock[message.author] = message.seq
                self.tags[message.author] = tag_of(message.id)
                self.heads.moved(message.author)
            grew = True
        if grew:
            self._bump()

    def _bump(self) -> None:
        self.version += 1
        self._changed.set()
        self._changed = trio.Event()
        for wake in list(self._watchers):
            wake()

    def shared(self, kind: Callable[[], T]) -> T:
        """The one `kind()` of this service, made on first use: state the node's gossip
        sessions share (node/gossip/session.py's `SuspectWatch`, node/gossip/stream_plan.py's
        plan)."""
        found = self._shared.get(kind)
        if found is None:
            found = self._shared[kind] = kind()
        return found

    def watch(self, wake: Callable[[], None]) -> None:
        """Call `wake()` at every change of the store (until `unwatch`): a session's writer
        waits on one event of its own, not on a task per change."""
        self._watchers.add(wake)

    def unwatch(self, wake: Callable[[], None]) -> None:
        self._watchers.discard(wake)

    async def wait_changed(self, seen: int) -> int:
        """Sleep until the store's version passes `seen`; returns the new version."""
        while self.version <= seen:
            await self._changed.wait()
        return self.version

    # -- writes --------------------------------------------------------------

    def _watching_room(self, write: Callable[..., T]) -> Callable[..., T]:
        """`write`, keeping `full` (`status`, /metrics, the peers' reasons): set by a write
        the store had no room for (`StoreFull`), cleared by the next that committed."""

        @functools.wraps(write)
        def watched(*args: Any, **keywords: Any) -> T:
            try:
                result = write(*args, **keywords)
            except StoreFull as error:
                self.full = str(error)
                raise
            self.full = None
            return result

        return watched

    async def _write(self, write: Callable[..., T], *args: Any) -> T:
        """`write(*args)` under the one write limiter, watching the store's room."""
        return await self.offload.run(self._watching_room(write), *args, limiter=self._writer)

    async def ingest(self, raws: list[bytes]) -> list[IngestResult]:
        writes = self.store.writes

        def ingest() -> list[IngestResult]:
            return writes.ingest_prepared(writes.prepare(raws), weave=False)

        results = await self._write(ingest)
        return await self._ingested(results)

    async def prepare(self, raws: list[bytes]) -> PreparedBatch:
        """Decode and verify `raws` beside the writer (node.service.verifier: a worker process for a
        large batch once `verifier.run` runs), while `ingest_prepared` stores the previous one."""
        return await self.verifier.prepare(raws)

    async def ingest_prepared(self, batch: PreparedBatch) -> list[IngestResult]:
        """Store a `prepare`d batch: what `ingest` does after the signatures."""
        ingest = functools.partial(self.store.writes.ingest_prepared, batch, weave=False)
        results = await self._write(ingest)
        return await self._ingested(results)

    async def _ingested(self, results: list[IngestResult]) -> list[IngestResult]:
        self.counters.count_ingest(results)
        forked = {r.message.author for r in results if r.outcome is Outcome.FORK and r.message}
        if forked:
            await self._proofs_changed(forked)
        accepted = (r.message for r in results if r.outcome is Outcome.ACCEPTED and r.message)
        self._stored(accepted)
        await self.weave_backlog()
        return results

    async def weave_backlog(self) -> None:
        """Weave the documents' backlog a slice a write transaction, each queued behind
        the writes already waiting (storage/documents/backlog.py), so a batch heavy with
        document work holds up the others' processing for one slice at most."""
        if not self.store.writes.backlog():  # one read of a table's size, on the loop
            return
        while await self._write(self.store.writes.weave_backlog):
            self._bump()
        self._bump()

    async def add_evidence(self, raws: list[bytes]) -> tuple[str, dict[bytes, int]]:
        """Check and apply a peer's proof (see `store.writes.add_evidence`)."""
        [outcome] = await self.add_evidences([raws])
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    async def add_evidences(self, proofs: list[list[bytes]]) -> list[Any]:
        """Check and apply a peer's proofs, the new ones in one write transaction (see
        `store.writes.add_evidences`): each one's outcome, or the error refusing it."""
        outcomes = await self._write(self.store.writes.add_evidences, proofs)
        authors = {
            author_of(raw)
            for raws, outcome in zip(proofs, outcomes, strict=True)
            if not isinstance(outcome, Exception) and outcome[0] == "new"
            for raw in raws
        }
        known = {author for author in authors if author is not None}
        if known:
            await self._proofs_changed(known)
        return outcomes

    async def add_witnesses(self, raws: list[bytes]) -> list[Entry]:
        """Keep the witnesses a peer sent that the processor asked for, and process what
        waited for them (`store.writes.add_witnesses`); the entries kept."""
        kept = await self._write(self.store.writes.add_witnesses, raws)
        if kept:
            self._bump()
        return kept

    async def give_up_witnesses(self, entries: list[Entry]) -> list[Entry]:
        """No peer gave these witnesses: their entries are met from now on."""
        marked = await self._write(self.store.writes.give_up_witnesses, entries)
        if marked:
            self._bump()
        return marked

    async def _proofs_changed(self, authors: set[bytes]) -> None:
        """New proofs about `authors`' feeds: their heads and boundaries read again (no other
        feed's moved: a feed that named a cut one is never cut), told to the sessions as
        moved heads, and the evidence version bumped so they pass the proofs on."""

        def read() -> tuple[list, int]:  # under the writer: no proof is kept meanwhile
            return self.store.feeds.held_of(sorted(authors)), self.store.feeds.last_proof()

        feeds, last = await self.offload.run(read, limiter=self._writer)
        for feed in feeds:
            if feed.head_id is None:
                self.clock.pop(feed.author, None)
                self.tags.pop(feed.author, None)
            else:
                self.clock[feed.author] = feed.head_seq
                self.tags[feed.author] = tag_of(feed.head_id)
            if feed.invalid_from is not None:
                self.invalid[feed.author] = feed.invalid_from
            self.heads.moved(feed.author)
        self.proofs_known = last
        self.evidence_version += 1
        self._bump()

    # -- the replication scope (storage/scope.py) ------------------------------------

    async def refresh_scope(self) -> bool:
        """Compute what the node carries from the contact messages held and our groups, and
        keep it if it changed (processing what waited on a feed no longer carried); the
        store's version moves then, so every session re-reads it. True if it changed."""
        keypair = self.store.keypair
        if keypair is None:
            return False
        hops = self.hops

        def compute(store: FeedStore) -> Scope:
            groups = None if hops is None else group_members(store, keypair)
            return store.feeds.computed_scope(keypair.public, hops, groups)

        async with self._scoping:  # one refresh at a time: the last computed is the last kept
            return await self.set_scope(await self.read(compute))

    async def set_scope(self, scope: Scope) -> bool:
        """Keep `scope` as what the node carries (`store.writes.set_scope`); the store's
        version moves if it changed, so every session re-reads it. True if it changed."""
        if scope == self.scope:
            return False
        await self._write(self.store.writes.set_scope, scope)
        if scope.blocked != self.scope.blocked:  # a blocked feed's messages left the store
            self._read_clock(await self.offload.run(self.store.feeds.held, limiter=self._writer))
        self.scope = scope
        self._bump()
        return True

    async def keep_scope(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Refresh the scope now, then whenever a contact or group message is stored, at
        most once per `SCOPE_REFRESH_GAP` seconds: a catch-up that stores thousands of
        contact messages computes the scope a few times, not once per batch (each refresh
        reads the contact rows of every feed followed). Our own follow, block and the
        others refresh at once (node/ipc/scope.py)."""
        await self.refresh_scope()
        await self.refresh_document_keys()
        await self.weave_backlog()  # what a stop left unwoven
        task_status.started()
        while True:
            await self._scope_stale.wait()
            await trio.sleep(SCOPE_REFRESH_GAP)  # what else comes meanwhile joins this one
            self._scope_stale = trio.Event()
            await self.refresh_scope()
            await self.refresh_document_keys()

    async def refresh_document_keys(self, group: bytes | None = None) -> bool:
        """Hand the document engine the keys and exclusions of our groups' epochs (only
        `group`'s, if given; storage/groups/doc_keys.py), weaving the private documents
        that waited for a new key or that a new exclusion changes; the store's version
        moves then. True if a key was new."""
        keypair = self.store.keypair
        if keypair is None:
            return False
        seen = self._group_messages
        kept = await self._write(refresh_document_keys, self.store, keypair, group)
        if group is None:
            self._keys_read_after = max(self._keys_read_after, seen)
        if kept:
            self._bump()
        return bool(kept.epochs)

    async def read_keys_if_stale(self) -> bool:
        """Read the groups' keys now if a group message came since they were last read (a
        read of a private document should not wait for `keep_scope`'s next turn); True if
        a key was new."""
        stale = self._group_messages != self._keys_read_after
        return stale and await self.refresh_document_keys()

    async def publish(self, content: Any, tangles: Mapping[str, bytes | None] | None) -> Message:
        """Sign and store our next message; concurrent publishes share one transaction
        (node/service/group_commit.py). Raises the error that refused this one."""
        return await self.publishing.publish(content, tangles)

    async def keep(self, write: Callable[..., T], *args: Any) -> T:
        """`write(*args)`: a write of the node's own bookkeeping that publishes nothing
        (`store.invites`' make and revoke), under the one write limiter."""
        return await self._write(write, *args)

    async def redeem_invite(
        self, hashed: bytes, redeemer: bytes, now: float, follow_all: bool
    ) -> Redemption:
        """Spend one use of an invite for `redeemer`, following it back where the invite
        (or `follow_all`) says, in one transaction group-committed with the publishes
        (`store.invites.redeem`); raises `InviteRefused` having written nothing."""
        invites, done = self.store.invites, []

        def redeem(session: OwnPublishing) -> list[Message]:
            redemption = invites.redeem(session, hashed, redeemer, now, follow_all)
            done.append(redemption)
            return [] if redemption.followed is None else [redemption.followed]

        await self.publishing.run(Job(redeem))
        if done[0].followed is not None:
            await self.refresh_scope()
        return done[0]

    # -- reads: any read of the store, in a worker thread --------------------------------

    async def publish_whole(
        self, requests: Sequence[tuple[Any, Mapping[str, bytes | None] | None]]
    ) -> list[Message]:
        """Sign and store our next messages in one transaction of their own, all or none
        (`store.writes.publish_batch(whole=True)`); raises the first refusal."""
        began = time.perf_counter()
        messages = await self._write(
            functools.partial(self.store.writes.publish_batch, requests, whole=True)
        )
        self._stored(messages)
        for _message in messages:  # each is a publish to /metrics, as through the group commit
            self.counters.publish_latency.observe(time.perf_counter() - began)
        return messages

    async def read(self, read: Callable[..., T], *args: Any) -> T:
        """`read(store, *args)`, in a worker thread beside the writer (at most 4 at once).

        Every read of the store goes through here, e.g. `await service.read(lambda
        store: store.feeds.get(msg_id))`; each `FeedStore` read is one transaction, so
        `read` sees one moment when it calls one. Arguments the event loop may
        change meanwhile (a dict of wants) are copied before the call.
        """
        return await self.offload.run(read, self.store, *args, limiter=self._readers)

    # -- documents (storage/documents/engine.py): `at` is a weft, a message id, a version or None --

    async def comment(self, write: Callable[[FeedStore], Message]) -> Message:
        """Publish a comment, a reply or an inclusion (`store.documents.comments`,
        `.transclusion`), in a transaction of its own: `write(store)` publishes it, a private
        document's keys read first."""
        await self.read_keys_if_stale()
        message = await self.offload.run(write, self.store, limiter=self._writer)
        self._stored([message])
        return message

    async def create_document(self, title: str, group: bytes | None = None) -> Message:
        """Publish a new document's doc/init (`store.documents.create_document`), group-committed
        with the other publishes; with `group`, private to it (sealed in the epoch we post
        in, whose key is read first), in a transaction of its own."""
        if group is None:
            return await self.publish(init_content(title), {TANGLE: None})
        await self.refresh_document_keys(group)
        message = await self._write(self.store.documents.create_document, title, group)
        self._stored([message])
        return message

    async def edit_document(
        self, doc: bytes, splices: Sequence[Splice], base: Any = None, exclusive: bool = False
    ) -> tuple[list[Message], dict[bytes, int]]:
        """Publish `splices`, made against revision `base` (None: the current text), merged
        with what happened since (with `exclusive`: `VersionConflict` when the document
        has moved past it); the messages, and the version each one made. A private
        document's group keys are read again once if we seem to post in none of its
        epochs (a message that made us a member arrived since they were last read)."""
        await self.read_keys_if_stale()  # a re-key just stored: seal in the new epoch
        documents = self.store.documents
        job = Job(
            lambda session: documents.edit_in(session, doc, splices, base, exclusive=exclusive)
        )
        try:  # group-committed with the publishes and the other editors' edits
            messages = await self.publishing.run(job)
        except NotInGroup:
            if not await self.refresh_document_keys():
                raise
            messages = await self.publishing.run(job)
        numbers = await self.read(lambda store: store.documents.versions_of(doc, messages))
        return messages, numbers
