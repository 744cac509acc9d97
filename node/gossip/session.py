"""One gossip connection: the sans-IO `GossipConnection` and `GossipPolicy` driven over a
`SecureStream`.

Theory of operation
-------------------
This module is the adapter between three machines and the world: the
wire's (`protocol/gossip.py`: bytes in, frame events out), the session's
decisions (`node/gossip/policy.py`: events and the time in, actions out)
and the store (`StoreService`). It reads frames, asks the store, feeds the
policy and carries out what it answers (`_act`): frames to send, batches to
queue for the inbox, the peer to drop (`PeerMisbehaved`, with the policy's
reason), WANTs for another session (the stream plan moved a feed there).
Every rule about *what* to ask, store, grant, refuse or tell lives in the
policy; this module decides only when to look and how to wait. How our
clock reaches the peer (the walk, or the whole clock told to a node that
does not walk) and the feeds named by position after the walk are the
session's `Walker`'s (node/gossip/walk_session.py), which it holds and
hands the frames of the walk.

Six tasks share the connection:

- the reader turns the peer's frames into the policy's events: its clock
  (HELLO, then CLOCK changes), its WANTs, MESSAGES and EVIDENCE (which the
  policy sends on to the `Inbox`, node.gossip.inbox, a pipeline that checks the
  next batch's signatures in the node's verifying process while it stores
  the previous one), ASK, WITNESS and UNHELD (node/gossip/witness_fetch.py);
- the inbox reports each stored batch back (`_stored`), and the policy
  grants that many credits back, so the window refills only as fast as we
  store. Those grants, and the WANTs a stored batch calls for, go out from
  a task of their own (`_send_outgoing`): storing never waits on the
  network;
- the writer wakes whenever the store changes or the reader pokes it. It
  sends every proof the peer has not had from us nor sent us about a
  feed its clock names or it asked for (docs/PEERS.md, "Evidence travels"),
  the new ones read by number, never all we keep; CLOCK for the heads the
  policy says changed since it last told the peer,
  then what the subscriptions lack in our processed order (causal, so the
  peer's spacetime sees few references to messages still to come; see
  `storage.feeds.replication`), in batches, as far as the credit allows. After
  catching up, a subscription stays open, so new messages are pushed live;
- the suspects' watcher reads the store's suspected forks once per store
  version for all the node's sessions (`SuspectWatch`) and tells the
  policy, which asks the peer for the other branch;
- the streams' watcher tells the policy the time every tick while it has
  feeds to judge (node/gossip/stream_plan.py), and otherwise waits for the peer's
  clock to move;
- the witnesses' task asks and answers witnesses (node/gossip/witness_fetch.py).

What a peer may cost us is bounded: what it sent and we have not stored
stays within the credit we granted and the inbox's byte bound (past it we
stop reading), its clock names at most `max_peer_feeds` feeds, and
everything about it but its `PeerState` summary is freed when the
connection ends. Every frame in or out is counted for `/metrics`
(node/service/counters.py): its bytes and messages, under the peer's key while the
session runs, whose `PeerState` gives its lag at scrape time.
"""

from __future__ import annotations

import structlog
import trio

from tanglenode.node.failures import leaves, only
from tanglenode.node.gossip.inbox import MAX_BATCH, Inbox, Kind
from tanglenode.node.gossip.policy import (
    FULL_LOOK,
    CheckProof,
    Drop,
    Elsewhere,
    GossipPolicy,
    Grant,
    Refused,
    SendClock,
    SendEvidence,
    SendWant,
    Store,
    Wake,
)
from tanglenode.node.gossip.presence import (
    PRESENCE_QUEUED,
    SEND_BURST,
    SEND_RATE,
    Access,
    PresenceHub,
    PresenceRate,
    judge_access,
    judge_frame,
    may_tell,
)
from tanglenode.node.gossip.proof_rate import ProofRate
from tanglenode.node.gossip.stream_plan import StreamPlan
from tanglenode.node.gossip.walk_session import Walker
from tanglenode.node.gossip.witness_fetch import WitnessExchange
from tanglenode.node.net.peers import PeerState
from tanglenode.node.net.transport import SecureStream
from tanglenode.node.service.counters import PeerTraffic
from tanglenode.node.service.store_service import StoreService
from tanglenode.protocol.errors import RemoteProtocolError
from tanglenode.protocol.gossip import (
    DEFAULT_MAX_FEEDS,
    GossipConnection,
    PeerAsks,
    PeerClock,
    PeerClockNamed,
    PeerCredit,
    PeerEvidence,
    PeerHello,
    PeerMessages,
    PeerOffersReconcile,
    PeerPresence,
    PeerReconcile,
    PeerUnheld,
    PeerWants,
    PeerWantsAgreed,
    PeerWantsNamed,
    PeerWitnesses,
)
from tanglenode.protocol.identity import feed_text
from tanglenode.protocol.presence import Presence, PresenceRefused, encode_presence
from tanglenode.storage.feeds.ingest import IngestResult

log = structlog.get_logger("gossip")

WINDOW = 16384  # messages a peer may send before we grant more (four store batches)
BATCH = 1024  # messages per MESSAGES frame at most (and at most one frame's bytes)
PAGE = 256  # kept proofs read at once by a session's writer


class PeerMisbehaved(RemoteProtocolError):
    """The peer sent something invalid; the connection is dropped."""


class SuspectWatch:
    """The store's suspected forks, as feed -> the lowest seq suspected, read at most once
    per store version whatever the number of sessions asking (one per service:
    `service.shared(SuspectWatch)`). The lowest is all a WANT needs: it asks from there on."""

    def __init__(self) -> None:
        self.version = -1  # the store version `lowest` was read at (or after)
        self.lowest: dict[bytes, int] = {}
        self._lock = trio.Lock()

    async def read(self, service: StoreService) -> dict[bytes, int]:
        """The suspects as of the service's current version (read again if it moved)."""
        async with self._lock:
            version = service.version
            if version != self.version:
                lowest: dict[bytes, int] = {}
                for each in await service.read(lambda store: store.feeds.suspected_forks()):
                    lowest[each.feed] = min(each.seq, lowest.get(each.feed, each.seq))
                self.lowest, self.version = lowest, version
        return self.lowest


class _Holdings:
    """What the policy reads of the node (node.gossip.policy.Holdings), live."""

    __slots__ = ("service", "watch")

    def __init__(self, service: StoreService, watch: SuspectWatch) -> None:
        self.service, self.watch = service, watch

    @property
    def clock(self):
        return self.service.clock

    @property
    def tags(self):
        return self.service.tags

    @property
    def invalid(self):
        return self.service.invalid

    @property
    def own_feed(self):
        return self.service.own_feed

    @property
    def suspects(self):
        return self.watch.lowest

    @property
    def carries(self):
        return self.service.scope.carries


class GossipSession:
    def __init__(
        self,
        secure: SecureStream,
        service: StoreService,
        peer: PeerState,
        *,
        window: int = WINDOW,
        batch: int = BATCH,
        max_peer_feeds: int = DEFAULT_MAX_FEEDS,
        store_batch: int = MAX_BATCH,
        proof_rate: dict | None = None,
        walk: bool = True,
    ) -> None:
        self.secure = secure
        self.service = service
        self.peer = peer
        self.batch = batch
        self.connection = GossipConnection(window, max_feeds=max_peer_feeds, walks=walk)
        self.resume: int | None = None  # where the walk of our processed order goes on
        self.evidence_seen = -1  # the service's evidence version we last looked at proofs for
        # The number of the last kept proof we looked at (storage/feeds/proof_order.py):
        # those kept before the session are sent by `proofs_due`, later ones are read after it.
        self.proofs_read = service.proofs_known
        self._poke = trio.Event()
        self.inbox = Inbox(service, self._stored, self._take_evidence, max_batch=store_batch)
        self._outgoing: list[bytes] = []  # grants and wants the storer left for `_send_soon`
        self._outgoing_added = trio.Event()
        self.traffic = PeerTraffic()  # the node's counters for this peer, once `run` starts
        self.suspects = service.shared(SuspectWatch)
        self.scope_seen = service.scope  # the scope our clock and wants were made for
        self.heads_seen: tuple[int, int] | None = None  # our place in service.heads
        self.plan = service.shared(StreamPlan)  # which session streams each feed
        if not self.plan.salt:
            self.plan.salt = service.own_feed or b"-"  # ties ranked by no peer's choice
        rate = ProofRate(**(proof_rate or {}), now=trio.current_time())
        self.policy = GossipPolicy(
            _Holdings(service, self.suspects),
            self.plan,
            peer.key,
            peer_clock=peer.clock,
            max_feeds=max_peer_feeds,
            proof_rate=rate,
            owner=self,
        )
        self._clock_moved = trio.Event()  # set when the peer's clock changes
        self.witnesses = WitnessExchange(
            self.policy, service, self.connection, self._send, self.plan.sessions
        )
        self.presence = service.shared(PresenceHub)  # node/gossip/presence.py
        now = trio.current_time()
        self.presence_in = PresenceRate(last=now)
        self.presence_out = PresenceRate(SEND_RATE, SEND_BURST, SEND_BURST, now)
        self.walker = Walker(  # the walk with the peer (node/gossip/walk_session.py)
            self.connection,
            self.policy,
            secure,
            walks=walk,
            send=self._send,
            send_soon=self._send_soon,
            act=self._act,
            told=self._told,
        )

    @property
    def delivered(self) -> dict[bytes, int]:
        """Feed -> its messages from the peer we stored (this connection)."""
        return self.policy.delivered

    async def run(self) -> None:
        self.service.verifier.want()  # its messages are checked in a worker process
        hello = self.policy.hello()
        self.heads_seen = self.service.heads.cursor()  # the walk settles every head up to here
        self.plan.sessions.add(self.policy)
        self.presence.senders.add(self._tell_presence)
        try:
            await self._run(hello)
        finally:
            self.presence.senders.discard(self._tell_presence)
            self.plan.sessions.discard(self.policy)
            self._act_soon(self.policy.ended(trio.current_time()))

    async def _run(self, hello) -> None:
        with self.service.counters.session(self.peer) as self.traffic:
            await self._send(self.walker.hello(hello))
            seen = self.service.version
            await self.suspects.read(self.service)  # known before the peer's clock is read
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._read)
                nursery.start_soon(self.inbox.run)
                nursery.start_soon(self._send_outgoing)
                nursery.start_soon(self._watch_suspects, seen)
                nursery.start_soon(self._watch_streams)
                nursery.start_soon(self.witnesses.run)
                nursery.start_soon(self.walker.await_peer_kind)
                await self._write()

    async def _send(self, data: bytes) -> None:
        """Every frame we send goes out here, counted."""
        self.traffic.bytes_out += len(data)
        self.peer.bytes_out += len(data)
        await self.secure.send_all(data)

    def poke(self) -> None:
        self._poke.set()

    # -- carrying out the policy's actions ------------------------------------------------

    def _frame(self, action) -> bytes:
        if isinstance(action, SendWant):
            return self.walker.want(action.wants)
        if isinstance(action, SendEvidence):
            return self.connection.evidence(action.raws)
        if isinstance(action, Grant):
            return self.connection.grant(action.n)
        return self.walker.notes(action.changes)  # SendClock

    async def _act(self, actions: list) -> None:
        """Carry out the policy's actions in order, WANT and CLOCK sent at once, grants
        queued (`_act_soon`); a `Drop` ends the connection and nothing after it is carried
        out."""
        for action in actions:
            if isinstance(action, SendWant | SendClock | SendEvidence):
                await self._send(self._frame(action))
            elif isinstance(action, Store):
                await self.inbox.put(Kind.MESSAGES, action.raws)
            elif isinstance(action, CheckProof):
                await self.inbox.put(Kind.EVIDENCE, action.raws)
            else:
                self._act_soon([action])

    def _act_soon(self, actions: list) -> None:
        """The same, the frames queued for `_send_outgoing` (the storer, the plan's
        judgements: they must never wait on the network)."""
        for action in actions:
            if isinstance(action, SendWant | Grant | SendClock | SendEvidence):
                self._send_soon(self._frame(action))
            elif isinstance(action, Elsewhere):
                action.policy.owner._act_soon(action.actions)
            elif isinstance(action, Drop):
                raise PeerMisbehaved(action.reason)
            elif isinstance(action, Wake):
                self.poke()
            elif isinstance(action, Refused):
                self._refused(action)
            else:
                raise AssertionError(f"not carried out from here: {action!r}")

    def _refused(self, action: Refused) -> None:
        """A proof over the peer's rate (node/gossip/proof_rate.py): counted, logged once."""
        self.peer.proofs_refused += 1
        if action.first:
            log.warning("proofs refused", peer=feed_text(self.peer.key), reason=action.reason)

    # -- reading -------------------------------------------------------------

    async def _read(self) -> None:
        while True:
            data = await self.secure.receive_some()
            if not data:
                await self.inbox.drained()  # store what it sent before its goodbye
                raise _PeerLeft
            self.traffic.bytes_in += len(data)
            self.peer.bytes_in += len(data)
            for event in self.connection.receive_data(data):
                await self._handle(event)

    async def _handle(self, event) -> None:
        policy, walker = self.policy, self.walker
        walker.sees(event)
        if isinstance(event, PeerOffersReconcile):
            await walker.offered()
        elif isinstance(event, PeerReconcile):
            await walker.walk_on(event.ranges)
        elif isinstance(event, PeerWantsAgreed):
            self.resume = None  # the new subscriptions may start earlier in the walk
            await self._act(policy.peer_wants(walker.wanted(event.selection)))
        elif isinstance(event, PeerClockNamed):
            changes = walker.notes_in(event.entries)
            await self._act(policy.peer_clock_changed(changes, trio.current_time()))
            self._clock_moved.set()
        elif isinstance(event, PeerWantsNamed):
            self.resume = None
            await self._act(policy.peer_wants(walker.wants_in(event.entries)))
        elif isinstance(event, PeerHello | PeerClock):
            hello = isinstance(event, PeerHello)
            changes = event.clock if hello else event.changes
            walker.peer_clock(changes, hello=hello)
            actions = policy.peer_clock_changed(changes, trio.current_time(), hello=hello)
            self._clock_moved.set()
            await self._act(actions)
            if not any(isinstance(action, SendWant) for action in actions):
                await self._send(b"")  # the reader yields after each clock, WANT or not
        elif isinstance(event, PeerWants):
            actions = policy.peer_wants(event.wants)
            self.resume = None  # the new subscriptions may start earlier in the walk
            await self._act(actions)
        elif isinstance(event, PeerCredit):
            self.poke()
        elif isinstance(event, PeerMessages):
            self.traffic.received += len(event.raws)
            await self._act(policy.messages(event.raws))
        elif isinstance(event, PeerEvidence):
            await self._act(policy.proof(event.raws, trio.current_time()))
        elif isinstance(event, PeerAsks):
            await self.witnesses.answer(event.entries)
        elif isinstance(event, PeerWitnesses):
            await self.witnesses.take(event.answered)
        elif isinstance(event, PeerUnheld):
            self.witnesses.unheld(event.entries)
        elif isinstance(event, PeerPresence):
            await self._presence(event)

    def _told(self, whole: bool) -> None:
        """The peer knows our clock now (the `Walker` says): the writer tells it what moves,
        every head as not yet told if it heard our whole clock; else it walked with us, and
        the streams' watcher looks at the clock the walk taught."""
        if whole:
            self.heads_seen = None
        else:
            self._clock_moved.set()
        self.poke()

    async def _presence(self, event: PeerPresence) -> None:
        """A peer's PRESENCE (node/gossip/presence.py): to the hub, or dropped with its
        reason; the peer is kept either way."""
        key = self.peer.key
        try:
            found = judge_frame(
                event.payload, event.offered, key, trio.current_time(), self.presence_in
            )
            judge_access(found, key, await self.presence.access_of(self.service, found.doc))
        except PresenceRefused as refused:
            self.presence.drop(refused)
            log.debug("presence dropped", peer=feed_text(key), reason=str(refused.reason))
            return
        self.presence.put(found, trio.current_time())

    def _tell_presence(self, presence: Presence, access: Access) -> None:
        """Our author's presence (the hub calls this): to the peer if it offered presence and
        may see the document, within our sending rate."""
        if not self.connection.peer_offered_presence or not may_tell(self.peer.key, access):
            return
        if len(self._outgoing) >= PRESENCE_QUEUED:  # a peer not reading: presence can wait
            return
        if self.presence_out.take(trio.current_time()):
            self._send_soon(self.connection.presence(encode_presence(presence)))

    async def _watch_suspects(self, seen: int) -> None:
        """Whenever the store moves, ask the peer for any new suspect's other branch."""
        while True:
            await self.service.wait_changed(seen)
            seen = self.service.version
            await self.suspects.read(self.service)
            self._act_soon(self.policy.suspects_moved())

    async def _watch_streams(self) -> None:
        """Tell the policy the time every tick while it has feeds to judge (its peer shows
        them ahead of us, or it probes them: node.gossip.stream_plan), and carry out what it
        decides; otherwise wait for the peer's clock to move, or `FULL_LOOK` seconds (a
        proof that cuts our feed back puts us behind unannounced)."""
        while True:
            actions, busy = self.policy.tick(trio.current_time())
            if busy:
                self._act_soon(actions)
                await trio.sleep(self.plan.tick)
                continue
            self._clock_moved = trio.Event()
            with trio.move_on_after(FULL_LOOK):
                await self._clock_moved.wait()

    def _send_soon(self, data: bytes) -> None:
        """Queue bytes for `_send_outgoing`: the storer must never wait on the network."""
        if data:
            self._outgoing.append(data)
            self._outgoing_added.set()

    async def _send_outgoing(self) -> None:
        while True:
            while not self._outgoing:
                self._outgoing_added = trio.Event()
                await self._outgoing_added.wait()
            data = b"".join(self._outgoing)
            self._outgoing.clear()
            await self._send(data)

    async def _stored(self, raws: list[bytes], results: list[IngestResult]) -> None:
        """The inbox stored a batch: the policy judges it and grants its credit back."""
        before = self.policy.accepted
        actions = self.policy.stored(len(raws), results, trio.current_time())
        self.peer.received += self.policy.accepted - before
        self._act_soon(actions)

    async def _take_evidence(self, proofs: list[list[bytes]]) -> None:
        """The proofs of consecutive EVIDENCE frames (node/gossip/inbox.py), the ones about feeds we
        carry applied in one transaction; their credit comes back."""
        carried = self.policy.proofs_taken(proofs)
        outcomes = await self.service.add_evidences(carried) if carried else []
        self._act_soon(self.policy.proofs_stored(proofs, outcomes))

    # -- writing -------------------------------------------------------------

    async def _write(self) -> None:
        self.service.watch(self.poke)  # every change of the store wakes us, as a poke does
        try:
            while True:
                self._poke = trio.Event()
                if self.service.scope is not self.scope_seen:
                    self._rescoped()
                await self._send_evidence()
                await self._send_clock_changes()
                await self._pump()
                await self._poke.wait()
        finally:
            self.service.unwatch(self.poke)

    def _rescoped(self) -> None:
        """Our scope changed: the policy asks for what we carry now and stops what we no
        longer carry; the walk starts again and every head is looked at once."""
        self.scope_seen = self.service.scope
        self.heads_seen = None  # what we advertise changed: look at every feed once
        self._act_soon(self.policy.rescoped(trio.current_time()))
        self.resume = None

    async def _send_evidence(self) -> None:
        """Proofs the peer has not had from us nor sent us, about feeds we carry and its
        clock names, while credit lasts: those of `proofs_due`, then those kept since we last
        looked, read by their numbers (never every kept proof)."""
        due = self.policy.proofs_due
        while due:
            feed = next(iter(due))
            messages = await self.service.read(
                lambda store, feed: store.feeds.proof_against(feed), feed
            )
            if messages is not None and not await self._offer(messages):
                return  # the rest when credit comes back (it pokes us)
            due.discard(feed)
        version = self.service.evidence_version
        while version != self.evidence_seen:
            page = await self.service.read(
                lambda store, after: store.feeds.proofs_after(after, PAGE), self.proofs_read
            )
            for proof in page:
                if not await self._offer(proof.messages, about=proof.author):
                    return
                self.proofs_read = proof.number
            if len(page) < PAGE:
                self.evidence_seen = version

    async def _offer(self, messages: list, *, about: bytes | None = None) -> bool:
        """Send one proof if the policy says so; False while the credit does not cover it."""
        actions = self.policy.offer_proof(messages, self.connection.send_credit, about=about)
        if actions is None:
            return False
        await self._act(actions)
        return True

    async def _send_clock_changes(self) -> None:
        """The heads the policy tells the peer, of the feeds whose head moved since we last
        looked (node/service/head_changes.py)."""
        if not self.walker.may_note:
            return  # the walk tells the peer our clock first (and no table moves meanwhile)
        heads = self.service.heads
        moved = heads.since(self.heads_seen)
        self.heads_seen = heads.cursor()
        await self._act(self.policy.clock_changes(moved))

    async def _pump(self) -> None:
        """Send what subscriptions lack, in our processed (causal) order, while credit lasts."""
        policy = self.policy
        subscriptions = policy.subscriptions
        while self.connection.send_credit > 0 and policy.lacking():
            if self.resume is None:
                self.resume = await self.service.read(
                    lambda store, wants: store.feeds.replication_start(wants),
                    dict(subscriptions),  # a copy: the event loop may change it meanwhile
                )
            asked = dict(subscriptions)  # what the batch is read for
            batch = await self.service.read(
                lambda store, *page: store.feeds.next_batch(*page),
                asked,
                self.resume,
                min(self.connection.send_credit, self.batch),
                self.connection.max_frame - 1024,
            )
            self.resume = batch.resume
            if not batch.raws:
                return
            await self._send(self.connection.messages(batch.raws))
            policy.sent(batch.sent, asked)
            self.peer.sent += len(batch.raws)
            self.traffic.sent += len(batch.raws)


class _PeerLeft(Exception):
    """The peer said goodbye."""


_LOST = (trio.BrokenResourceError, trio.ClosedResourceError, OSError)


async def gossip(
    secure: SecureStream, service: StoreService, peer: PeerState, **options
) -> str | None:
    """Run one connection to its end; returns why it ended (None for a clean goodbye)."""
    session = GossipSession(secure, service, peer, **options)
    try:
        await session.run()
    except Exception as error:  # sorted below; anything unexpected is re-raised
        if not only(error, (_PeerLeft, RemoteProtocolError, *_LOST)):
            raise
        broken = [leaf for leaf in leaves(error) if isinstance(leaf, RemoteProtocolError)]
        if broken:
            reason = "; ".join(str(leaf) for leaf in broken)
            log.warning("peer dropped", peer=feed_text(secure.peer), reason=reason)
            return reason
        lost = [leaf for leaf in leaves(error) if isinstance(leaf, _LOST)]
        return f"connection lost: {lost[0]}" if lost else None
    finally:
        with trio.CancelScope(shield=True):
            await secure.aclose()
    return None
