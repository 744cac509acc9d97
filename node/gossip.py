"""One gossip connection: the sans-IO `GossipConnection` driven over a `SecureStream`.

Theory of operation
-------------------
Four tasks share the connection (the reader, the writer, the inbox and
the sender of grants):

- the reader turns the peer's frames into actions: its clock (HELLO, then
  CLOCK changes) goes into its `PeerState`, and for every feed where it is
  ahead of us we send WANT (from our highest seq); a WANT starts a
  subscription; MESSAGES and EVIDENCE go to the `Inbox` (node.inbox), a
  pipeline that checks the next batch's signatures (in the node's
  verifying process) while it stores the previous one through the store's
  full validation, or a proof through the store's proof check; each stored
  batch is reported back here (`_stored`), and we grant that many credits
  back, so the window refills only as fast as we store. Those grants, and
  the WANTs a stored batch calls for, go out from a task of their own
  (`_send_outgoing`): storing never waits on the network;
- the writer wakes whenever the store changes or the reader pokes it. It
  sends every proof the peer has not had from us nor sent us about a
  feed its clock names or it asked for (docs/PEERS.md, "Evidence travels"),
  the new ones read by number, never all we keep; CLOCK for feeds whose
  head changed since it last told the peer,
  then what the subscriptions lack in our processed order (causal, so the
  peer's spacetime sees few references to messages still to come; see
  `storage.feeds.replication`), in batches, as far as the credit allows. After
  catching up, a subscription stays open, so new messages are pushed live.

Witnesses, messages of feeds we do not carry that the causal processor
reads to learn what they imply (storage/feeds/witnesses.py), are asked for
and answered by a task of the session's own (node/witness_fetch.py).

Forks are looked for, not just stumbled on: where the peer's head has our
seq but another tag, we ask for its message at that seq (the two make a
proof); where its next message does not chain to our head (chain-mismatch),
we ask for its message at our head's seq. Each proof cuts the feed back
one step lower on both sides until the branches meet, so both nodes end at
the seq where the fork began.

Suspected forks are fetched the same way. Where the store holds one (a
message names (feed, seq) by a tag other than that of the message held
there: storage.feeds.processor), each session asks its peer, if the peer's clock
reaches that seq, for the feed's messages from that seq on: a peer holding
the other branch sends the message named, and with ours it makes the
proof that settles the suspicion. The store's suspects are read once per
store version for all the node's sessions (`SuspectWatch`), by a task of
each session's own (`_watch_suspects`), so the writer never waits on it.

What a peer may cost us is bounded: what it sent and we have not stored
stays within the credit we granted and the inbox's byte bound (past it we
stop reading), its clock names at most `max_peer_feeds` feeds (more drops
it, with that reason), it is dropped for
sending two different messages at one (feed, seq) in one connection (an
honest peer holds one), and everything about it but its `PeerState` summary
is freed when the connection ends.

Every frame in or out is counted for `/metrics` (node/counters.py): its
bytes and messages, under the peer's key while the session runs, whose
`PeerState` gives its lag at scrape time.

A message the store rejects for any reason but `forked-feed` or
`chain-mismatch` (which an honest peer that holds what a proof condemns
can cause), or `missing-previous` for a feed past the seq where the peer's
branch did not chain to ours (the rest of that branch), means the peer is
broken or hostile: `PeerMisbehaved` ends the connection with the reason,
and only this one.
"""

from __future__ import annotations

import structlog
import trio

from tanglenode.node.counters import PeerTraffic
from tanglenode.node.failures import leaves, only
from tanglenode.node.inbox import MAX_BATCH, Inbox, Kind
from tanglenode.node.peers import PeerState
from tanglenode.node.proof_rate import REFUSED, ProofRate
from tanglenode.node.service import StoreService
from tanglenode.node.stream_plan import STOP_AFTER, PeerView, Stream, StreamPlan
from tanglenode.node.transport import SecureStream
from tanglenode.node.witness_fetch import WitnessExchange
from tanglenode.protocol.errors import InvalidMessage, Reason, RemoteProtocolError
from tanglenode.protocol.evidence import InvalidProof
from tanglenode.protocol.gossip import (
    DEFAULT_MAX_FEEDS,
    Clock,
    GossipConnection,
    PeerAsks,
    PeerClock,
    PeerCredit,
    PeerEvidence,
    PeerHello,
    PeerMessages,
    PeerUnheld,
    PeerWants,
    PeerWitnesses,
)
from tanglenode.protocol.identity import feed_text, message_id
from tanglenode.protocol.message import author_of
from tanglenode.storage.feeds.ingest import IngestResult, Outcome

log = structlog.get_logger("gossip")

WINDOW = 8192  # messages a peer may send before we grant more (four store batches)
BATCH = 1024  # messages per MESSAGES frame at most (and at most one frame's bytes)
# An honest peer can cause these: it holds what a proof condemns, another branch, or a
# feed we blocked after asking it for the feed.
_FORGIVEN = {Reason.FORKED_FEED, Reason.CHAIN_MISMATCH, Reason.BLOCKED_FEED}
PAGE = 256  # kept proofs read at once by a session's writer
VARIANTS_REMEMBERED = 4096  # (feed, seq) of refused messages kept per connection
FULL_LOOK = 4.0  # seconds between looks through the peer's whole clock for feeds behind


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
    ) -> None:
        self.secure = secure
        self.service = service
        self.peer = peer
        self.batch = batch
        self.max_peer_feeds = max_peer_feeds
        self.connection = GossipConnection(window, max_feeds=max_peer_feeds)
        self.advertised: Clock = {}  # our clock as the peer last heard it
        self.peer_tags: dict[bytes, bytes] = {}  # feed -> tag of the peer's head
        self.asked: dict[bytes, int] = {}  # feed -> `after` of the last WANT we sent
        self.subscriptions: dict[bytes, int] = {}  # feed -> last seq sent
        self.resume: int | None = None  # where the walk of our processed order goes on
        # Each proof the peer had from us, or sent us, as the set of its message ids
        # (which names it as its id does: a proof's kind follows from its messages).
        self.proofs_sent: set[frozenset[bytes]] = set()
        self.evidence_seen = -1  # the service's evidence version we last looked at proofs for
        # The number of the last kept proof we looked at (storage/feeds/proof_order.py):
        # those kept before the session are sent by `proofs_due`, later ones are read after it.
        self.proofs_read = service.proofs_known
        self.proofs_due: set[bytes] = set()  # feeds the peer's clock named that we hold a
        # proof about: their proofs go out next
        self.proof_rate = ProofRate(**(proof_rate or {}))  # what the peer may deliver
        self.variants: dict[tuple[bytes, int], bytes] = {}  # refused (feed, seq) -> id
        self.parted: dict[bytes, int] = {}  # feed -> the lowest seq of the peer's that did not
        # chain to ours (chain-mismatch): its later messages there miss their previous
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
        self.delivered: dict[bytes, int] = {}  # feed -> its messages from the peer we stored
        self.accepted = 0  # the new messages from the peer we stored
        self._clock_moved = trio.Event()  # set when the peer's clock changes
        self._ahead: set[bytes] = set()  # feeds its clock showed ahead of ours
        self.witnesses = WitnessExchange(
            self, service, self.connection, self._send, self.plan.sessions
        )

    def _our_clock(self) -> Clock:
        """Our heads of the feeds we carry: a peer learns of no other feed through us."""
        tags, carries = self.service.tags, self.service.scope.carries
        return {
            feed: (seq, tags[feed]) for feed, seq in self.service.clock.items() if carries(feed)
        }

    async def run(self) -> None:
        self.service.verifier.want()  # its messages are checked in a worker process
        self.advertised = self._our_clock()
        self.heads_seen = self.service.heads.cursor()  # HELLO tells every head up to here
        self.plan.sessions.add(self)
        try:
            await self._run()
        finally:
            self.plan.sessions.discard(self)
            self._hand_over(self.plan.release(self))

    async def _run(self) -> None:
        with self.service.counters.session(self.peer) as self.traffic:
            await self._send(self.connection.hello(self.advertised))
            seen = self.service.version
            await self.suspects.read(self.service)  # known before the peer's clock is read
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._read)
                nursery.start_soon(self.inbox.run)
                nursery.start_soon(self._send_outgoing)
                nursery.start_soon(self._watch_suspects, seen)
                nursery.start_soon(self._watch_streams)
                nursery.start_soon(self.witnesses.run)
                await self._write()

    async def _send(self, data: bytes) -> None:
        """Every frame we send goes out here, counted."""
        self.traffic.bytes_out += len(data)
        self.peer.bytes_out += len(data)
        await self.secure.send_all(data)

    def poke(self) -> None:
        self._poke.set()

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
        if isinstance(event, PeerHello | PeerClock):
            changes = event.clock if isinstance(event, PeerHello) else event.changes
            new_feeds = sum(feed not in self.peer.clock for feed in changes)
            if len(self.peer.clock) + new_feeds > self.max_peer_feeds:
                raise PeerMisbehaved(f"its clock names more than {self.max_peer_feeds} feeds")
            invalid, carries = self.service.invalid, self.service.scope.carries
            ours = self.service.clock
            for feed, (seq, tag) in changes.items():
                if feed not in self.peer.clock and feed in invalid and carries(feed):
                    self.proofs_due.add(feed)  # it holds a feed we hold a proof about
                self.peer.clock[feed] = seq
                self.peer_tags[feed] = tag
                if seq > ours.get(feed, 0):
                    self._ahead.add(feed)
            self._clock_moved.set()
            if self.proofs_due:
                self.poke()
            if isinstance(event, PeerHello):
                self.poke()  # its credit: proofs held back for want of it can go now
            await self._want(changes)
        elif isinstance(event, PeerWants):
            ours, carries = self.service.clock, self.service.scope.carries
            for feed, after in event.wants.items():
                if feed in ours and carries(feed):  # an honest peer wants what we advertised
                    self.subscriptions[feed] = after
                    if feed in self.service.invalid:
                        self.proofs_due.add(feed)  # it is about to hold the feed
            self.resume = None  # the new subscriptions may start earlier in the walk
            self.poke()
        elif isinstance(event, PeerCredit):
            self.poke()
        elif isinstance(event, PeerMessages):
            self.traffic.received += len(event.raws)
            raws = self._in_scope(event.raws)
            if len(raws) < len(event.raws):  # their credit comes back: we store none of them
                self._send_soon(self.connection.grant(len(event.raws) - len(raws)))
            if raws:
                await self.inbox.put(Kind.MESSAGES, raws)
        elif isinstance(event, PeerEvidence):
            if self.proof_rate.take():
                await self.inbox.put(Kind.EVIDENCE, event.raws)
            else:
                self._refuse_proof(event.raws)
        elif isinstance(event, PeerAsks):
            await self.witnesses.answer(event.entries)
        elif isinstance(event, PeerWitnesses):
            await self.witnesses.take(event.answered)
        elif isinstance(event, PeerUnheld):
            self.witnesses.unheld(event.entries)

    def _in_scope(self, raws: list[bytes]) -> list[bytes]:
        """The messages of feeds we carry. One of a feed we never asked for is a push of what
        we did not want: the peer is dropped. One of a feed we asked for before our scope
        left it out is not stored."""
        carries, kept = self.service.scope.carries, []
        for raw in raws:
            author = author_of(raw)
            if author is None or carries(author):
                kept.append(raw)  # a malformed one: the store refuses it with its reason
            elif author not in self.asked:
                raise PeerMisbehaved(
                    f"pushed messages of {feed_text(author)}, a feed we never asked for "
                    "and do not carry"
                )
        return kept

    async def _want(self, heads: Clock) -> None:
        await self._send_wants(self._wants_of(heads))

    def _wants_of(self, heads: Clock) -> dict[bytes, int]:
        """What to ask for, given the peer's `heads`: what it has beyond us, and its side of
        any fork it shows, of the feeds we carry."""
        ours, tags = self.service.clock, self.service.tags
        carries, me = self.service.scope.carries, self.service.own_feed
        wants: dict[bytes, int] = {}
        for feed, (seq, tag) in heads.items():
            if not carries(feed):
                continue
            have = ours.get(feed, 0)
            if seq == have and have and tag != tags.get(feed):
                wants[feed] = have - 1  # its message at our head's seq is another
            elif (
                (seq > have or (seq == have and seq and feed != me))  # ours: only if behind
                and self._streamable(feed)
                and self.plan.claim(feed, self, trio.current_time())
            ):
                wants[feed] = have  # we stream it from this peer (node.stream_plan)
        for feed, after in self._suspect_wants(heads).items():
            wants[feed] = min(after, wants.get(feed, after))
        return wants

    def _streamable(self, feed: bytes) -> bool:
        """Whether we may stream `feed` from a peer at all: one we carry, and not an invalid
        feed we hold all the valid messages of."""
        service = self.service
        if not service.scope.carries(feed):
            return False
        end = service.invalid.get(feed)
        return end is None or service.clock.get(feed, 0) < end - 1

    def _suspect_wants(self, heads: Clock) -> dict[bytes, int]:
        """For each feed of `heads` (the peer's) with a suspected fork the peer's head
        reaches: its messages from the lowest suspected seq on, unless its head is the very
        message we hold there (same seq, same tag)."""
        ours, tags, invalid = self.service.clock, self.service.tags, self.service.invalid
        lowest = self.suspects.lowest
        few, many = (heads, lowest) if len(heads) < len(lowest) else (lowest, heads)
        wants: dict[bytes, int] = {}
        for feed in [feed for feed in few if feed in many]:
            seq, (peer_seq, peer_tag) = lowest[feed], heads[feed]
            if feed in invalid and invalid[feed] <= seq:
                continue  # a proof settled it since the suspects were read
            if peer_seq < seq or (peer_seq == seq == ours.get(feed) and peer_tag == tags[feed]):
                continue  # the peer holds nothing there, or what we hold
            wants[feed] = seq - 1
        return wants

    async def _watch_suspects(self, seen: int) -> None:
        """Whenever the store moves, ask the peer for any new suspect's other branch."""
        while True:
            await self.service.wait_changed(seen)
            seen = self.service.version
            lowest = await self.suspects.read(self.service)
            clock, tags = self.peer.clock, self.peer_tags
            heads = {f: (clock[f], tags[f]) for f in lowest if f in tags and f in clock}
            self._send_soon(self._want_frame(self._suspect_wants(heads)))

    async def _watch_streams(self) -> None:
        """Every tick while this peer shows a feed ahead of us, or we probe it for one, let
        the plan judge those feeds (node.stream_plan) and carry out what it decides: each
        session subscribes or stops where the plan says, from our seq. The feeds it shows
        ahead are kept as its CLOCK notes come (`_ahead`), and looked for in its whole clock
        only every `FULL_LOOK` seconds (a proof that cuts our feed back puts us behind
        unannounced), so a tick costs what is behind, not the clock's size."""
        looked = float("-inf")
        while True:
            if trio.current_time() - looked >= FULL_LOOK:
                ours = self.service.clock
                self._ahead = {f for f, seq in self.peer.clock.items() if seq > ours.get(f, 0)}
                looked = trio.current_time()
            feeds = self._reviewable()
            if feeds:
                self._review(feeds)
                await trio.sleep(self.plan.tick)
                continue
            self._clock_moved = trio.Event()
            with trio.move_on_after(FULL_LOOK):
                await self._clock_moved.wait()

    def _reviewable(self) -> list[bytes]:
        """The feeds this session has a say on: those its peer shows ahead of us, those it
        probes."""
        ours, clock, streamable = self.service.clock, self.peer.clock, self._streamable
        self._ahead = {f for f in self._ahead if clock.get(f, 0) > ours.get(f, 0)}
        return [f for f in self._ahead if streamable(f)] + self.plan.probing(self)

    def _review(self, feeds: list[bytes], *, delivered: bool = False) -> None:
        plan, ours, now = self.plan, self.service.clock, trio.current_time()
        sessions = list(plan.sessions)
        for feed in feeds:
            if not plan.due(feed, now, delivered=delivered):
                continue  # another session judged it this tick
            have = ours.get(feed, 0)
            views = {session: session.view(feed) for session in sessions}
            for session, act in plan.review(feed, have, now, views, delivered=delivered):
                if isinstance(act, Stream):
                    session.stream({feed: have})
                else:
                    session.stop_streaming(feed)

    @property
    def peer_key(self) -> bytes:
        """Whom the plan's strikes bar: the peer, across its connections."""
        return self.peer.key

    def view(self, feed: bytes) -> PeerView:
        """What this session shows the plan of `feed`."""
        return PeerView(self.peer.clock.get(feed, 0), self.delivered.get(feed, 0), self.accepted)

    def stream(self, wants: dict[bytes, int]) -> None:
        """Subscribe to these feeds here (the plan made us their streamer), from these seqs,
        whatever we asked before."""
        if wants:
            self.asked.update(wants)
            self._send_soon(self.connection.want(wants))

    def stop_streaming(self, feed: bytes) -> None:
        """Another session streams `feed` now: end its subscription on this peer."""
        self.asked[feed] = STOP_AFTER
        self._send_soon(self.connection.want({feed: STOP_AFTER}))

    def _hand_over(self, feeds: list[bytes]) -> None:
        """This session ended: each feed it streamed goes to the session whose peer showed
        the highest head of it (the lowest peer key among equals), asked from our seq."""
        ours, plan = self.service.clock, self.plan
        for feed in feeds:
            if not self._streamable(feed):
                continue
            holders = [s for s in plan.sessions if s.peer.clock.get(feed, 0) > 0]
            now = trio.current_time()
            trusted = [s for s in holders if not plan.barred(feed, s, now)]
            if not holders:
                continue
            best = max(trusted or holders, key=lambda s: (s.peer.clock.get(feed, 0), plan.rank(s)))
            plan.take(feed, best)
            best.stream({feed: ours.get(feed, 0)})

    async def _send_wants(self, wants: dict[bytes, int]) -> None:
        await self._send(self._want_frame(wants))

    def _want_frame(self, wants: dict[bytes, int]) -> bytes:
        """WANT each feed once; again only to go back (a subscription then pushes the rest)."""
        asked = self.asked
        wants = {feed: after for feed, after in wants.items() if after < asked.get(feed, after + 1)}
        if not wants:
            return b""
        self.asked.update(wants)
        return self.connection.want(wants)

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
        """The inbox stored a batch: check what became of it, grant its credit back."""
        descend: dict[bytes, int] = {}
        for result in results:
            if result.outcome is Outcome.REJECTED and not self._forgiven(result):
                raise PeerMisbehaved(f"sent an invalid message: {result.reason}: {result.detail}")
            self._note_variant(result)
            if result.reason is Reason.CHAIN_MISMATCH and result.message:
                # Its branch and ours differ at or below our head: ask for its message there.
                author, seq = result.message.author, result.message.seq
                descend[author] = max(seq - 2, 0)
                self.parted[author] = min(seq, self.parted.get(author, seq))
                if len(self.parted) > VARIANTS_REMEMBERED:
                    del self.parted[next(iter(self.parted))]
        accepted = [result for result in results if result.outcome is Outcome.ACCEPTED]
        for result in accepted:  # what the stream plan credits this peer with
            if result.message is not None:
                author = result.message.author
                self.delivered[author] = self.delivered.get(author, 0) + 1
        self.accepted += len(accepted)
        self.peer.received += len(accepted)
        authors = {result.message.author for result in accepted if result.message is not None}
        probed = [feed for feed in authors if self in self.plan.probers(feed)]
        if probed:  # a probe that proves its claim streams at once: the overlap ends
            self._review(probed, delivered=True)
        self._send_soon(self.connection.grant(len(raws)))
        self._send_soon(self._want_frame(descend))

    def _forgiven(self, result: IngestResult) -> bool:
        """A refusal an honest peer can cause: it holds what a proof condemns, or another
        branch, whose next messages (past the first that did not chain) miss their previous."""
        if result.reason in _FORGIVEN:
            return True
        message = result.message
        return (
            result.reason is Reason.MISSING_PREVIOUS
            and message is not None
            and message.seq > self.parted.get(message.author, message.seq)
        )

    def _note_variant(self, result: IngestResult) -> None:
        """Drop a peer that sends two messages for one (feed, seq): an honest one holds one."""
        if result.message is None or result.outcome not in (Outcome.FORK, Outcome.REJECTED):
            return
        if result.outcome is Outcome.REJECTED and result.reason is not Reason.FORKED_FEED:
            return
        key = (result.message.author, result.message.seq)
        earlier = self.variants.setdefault(key, result.id)
        if earlier != result.id:
            raise PeerMisbehaved(f"sent two messages for seq {key[1]} of one feed")
        if len(self.variants) > VARIANTS_REMEMBERED:
            del self.variants[next(iter(self.variants))]

    def _refuse_proof(self, raws: list[bytes]) -> None:
        """A proof over the peer's rate (node/proof_rate.py): not checked nor stored, its
        credit granted back, the reason logged once a connection and counted."""
        self.peer.proofs_refused += 1
        if self.proof_rate.refused == 1:
            log.warning(
                "proofs refused",
                peer=feed_text(self.peer.key),
                reason=f"{REFUSED}: more than {self.proof_rate.burst} proofs at once or "
                f"{self.proof_rate.rate:g} a second",
            )
        self._send_soon(self.connection.grant(len(raws)))

    async def _take_evidence(self, proofs: list[list[bytes]]) -> None:
        """The proofs of consecutive EVIDENCE frames (node/inbox.py), the ones about feeds we
        carry applied in one transaction; their credit comes back."""
        carried = []
        for raws in proofs:
            # Marked before the store takes it: its new evidence version wakes our writer,
            # which must not echo the proof back to the peer that sent it.
            self.proofs_sent.add(frozenset(message_id(raw) for raw in raws))
            # A proof about a feed we do not carry is not ours to keep or pass on (an
            # honest peer that carries it sends it): only its credit comes back.
            if any(self.service.scope.carries(author_of(raw) or b"") for raw in raws):
                carried.append(raws)
        outcomes = await self.service.add_evidences(carried) if carried else []
        self._send_soon(self.connection.grant(sum(len(raws) for raws in proofs)))
        for outcome in outcomes:  # one we hold already changes nothing
            if isinstance(outcome, InvalidMessage | InvalidProof):
                raise PeerMisbehaved(f"sent evidence that proves nothing: {outcome}")

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
        """Our scope changed: ask the peer for what we carry now (from its clock), and stop
        sending it what we no longer carry."""
        self.scope_seen = scope = self.service.scope
        self.heads_seen = None  # what we advertise changed: look at every feed once
        # The proofs we pass on are those of the feeds we carry: of the feeds the peer holds.
        invalid = self.service.invalid
        held = self.peer.clock.keys() | self.subscriptions.keys()
        self.proofs_due.update(f for f in held if f in invalid and scope.carries(f))
        for feed in [f for f, after in self.asked.items() if after != STOP_AFTER]:
            if not scope.carries(feed):  # it left our scope: this peer stops pushing it
                self.plan.drop(feed, self)
                self.stop_streaming(feed)
        clock, tags = self.peer.clock, self.peer_tags
        heads = {f: (clock[f], tags[f]) for f in clock if f in tags and scope.carries(f)}
        self.stream(self._wants_of(heads))  # whatever we asked of it before
        for feed in [feed for feed in self.subscriptions if not scope.carries(feed)]:
            del self.subscriptions[feed]
        self.resume = None

    async def _send_evidence(self) -> None:
        """Proofs the peer has not had from us nor sent us, about feeds we carry and its
        clock names, while credit lasts: those of `proofs_due`, then those kept since we last
        looked, read by their numbers (never every kept proof)."""
        while self.proofs_due:
            feed = next(iter(self.proofs_due))
            messages = await self.service.read(
                lambda store, feed: store.feeds.proof_against(feed), feed
            )
            if messages is not None and not await self._send_proof(messages):
                return  # the rest when credit comes back (it pokes us)
            self.proofs_due.discard(feed)
        version = self.service.evidence_version
        while version != self.evidence_seen:
            page = await self.service.read(
                lambda store, after: store.feeds.proofs_after(after, PAGE), self.proofs_read
            )
            carries = self.service.scope.carries
            for proof in page:
                wanted = self._peer_holds(proof.author) and carries(proof.author)
                if wanted and not await self._send_proof(proof.messages):
                    return
                self.proofs_read = proof.number
            if len(page) < PAGE:
                self.evidence_seen = version

    def _peer_holds(self, feed: bytes) -> bool:
        """Whether the peer holds any of `feed`, as far as this connection shows: its clock
        names it, or it asked us for it (a peer does not tell a head equal to the one we told
        it, so one that got the feed from us, or caught up elsewhere, may never name it)."""
        return feed in self.peer.clock or feed in self.subscriptions

    async def _send_proof(self, messages: list) -> bool:
        """Send one proof unless the peer had it; False when the credit does not cover it."""
        key = frozenset(message.id for message in messages)
        if key in self.proofs_sent:
            return True
        raws = [message.raw for message in messages]
        if len(raws) > self.connection.send_credit:
            return False
        await self._send(self.connection.evidence(raws))
        self.proofs_sent.add(key)
        return True

    async def _send_clock_changes(self) -> None:
        """Heads that changed since we last told the peer, unless it told us the same head
        (but the first head of a feed we never told it of: its proofs find us by it): those
        of the feeds whose head moved since we last looked (node/head_changes.py)."""
        service = self.service
        moved = service.heads.since(self.heads_seen)
        self.heads_seen = service.heads.cursor()
        clock, tags, carries = service.clock, service.tags, service.scope.carries
        peer_clock, peer_tags, advertised = self.peer.clock, self.peer_tags, self.advertised
        changes = {}
        for feed in clock if moved is None else moved:
            if feed not in clock:
                continue  # a proof cut it back to nothing: there is no head to tell
            head = (clock[feed], tags[feed])
            told = advertised.get(feed)
            if (
                carries(feed)
                and head != told
                and (
                    told is None  # the first we hold of it: the peer learns we hold the feed
                    or head[0] > peer_clock.get(feed, 0)
                    or head[1] != peer_tags.get(feed)
                )
            ):
                changes[feed] = head
        if changes:
            self.advertised.update(changes)
            await self._send(self.connection.clock(changes))

    async def _pump(self) -> None:
        """Send what subscriptions lack, in our processed (causal) order, while credit lasts."""
        while self.connection.send_credit > 0 and any(
            self.service.clock.get(feed, 0) > sent for feed, sent in self.subscriptions.items()
        ):
            if self.resume is None:
                self.resume = await self.service.read(
                    lambda store, wants: store.feeds.replication_start(wants),
                    dict(self.subscriptions),  # a copy: the event loop may change it meanwhile
                )
            asked = dict(self.subscriptions)  # what the batch is read for
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
            for feed, sent in batch.sent.items():  # unless a WANT changed it meanwhile
                if self.subscriptions.get(feed) == asked.get(feed):
                    self.subscriptions[feed] = sent
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
