"""What one gossip session decides, as a sans-IO state machine: events and the time go in,
actions come out.

Theory of operation
-------------------
`protocol/gossip.py` turns a peer's bytes into events and checks the wire's
rules; this module decides what the node does about them, and
`node/gossip/session.py` (the adapter) only reads frames, asks the store, feeds
this machine and carries out what it answers. It is modelled on
iroh-gossip's `proto`: a `GossipPolicy` per session holds everything the
session knows of its peer (its clock and head tags, what we asked of it,
what it subscribed to, what it delivered, the proofs it had from us, the
variants it sent); each method is one event, told the time (`now`) where
time matters, and returns a list of actions, plain data:

- `SendWant(wants)`, `SendClock(changes)`, `SendEvidence(raws)`, `Grant(n)`:
  a frame to send;
- `Store(raws)`, `CheckProof(raws)`: what the peer sent goes to the inbox
  (node/gossip/inbox.py), to be verified and stored, or checked as a proof;
- `Refused(reason, first)`: a proof over the peer's rate (node/gossip/proof_rate.py)
  was not taken (the adapter counts it, and logs the first);
- `Wake()`: the session's writer has something to send (proofs due);
- `Drop(reason)`: the peer broke a rule of ours; the adapter ends the
  connection with that reason, and carries out nothing after it;
- `Elsewhere(policy, actions)`: actions for another session of the node
  (the stream plan moved a feed there); the adapter hands them to whoever
  carries out that policy's actions (`policy.owner`).

What the machine reads of the node is what it holds (`Holdings`: our clock
and head tags, the feeds we carry, the invalid feeds' ends, our own feed,
the suspected forks' lowest seqs), read at the moment of each event and
never written; tests give it a plain `Held`. The node's `StreamPlan`
(node/gossip/stream_plan.py, shared by the sessions, itself a pure core) decides
which session streams each feed; the policies are its sessions.

The events, and what each decides (docs/PEERS.md has the why):

- `reconciled(ours, theirs, now)`: the session's walk (protocol/reconcile.py)
  ended: the peer knows our clock as it was, and its clock is taken as a
  HELLO's.
- `peer_clock(changes, now)` (HELLO or CLOCK): more than `max_feeds` feeds
  drops the peer; a feed we hold a proof about is due to it; we WANT every
  feed it is ahead on from our head if the plan lets this session stream
  it, one seq lower where its head has our seq and another tag (a fork),
  and from the lowest suspected seq where it reaches a suspect.
- `peer_wants(wants)`: a subscription for every feed we advertise and carry.
- `messages(raws)`: those of feeds we carry are stored; one of a feed we
  never asked for and do not carry drops the peer; credit comes back for
  the rest.
- `proof(raws, now)`: checked within the rate, else refused and its credit
  granted back.
- `stored(count, results, now)`: a rejection an honest peer cannot cause
  drops it, as do two messages at one (feed, seq); a chain that does not
  meet ours asks for the peer's message at our head's seq; what it
  delivered is counted for the plan, a challenger's delivery judged at
  once; the batch's credit comes back.
- `proofs_taken(proofs)` / `proofs_stored(proofs, outcomes)`: the proofs of
  feeds we carry are applied, never echoed back; one that proves nothing
  drops the peer.
- `tick(now)` (time passed): the plan judges the feeds this peer shows
  ahead of us or probes (node/gossip/stream_plan.py), and each session streams or
  stops where it says; the whole clock is looked through every `FULL_LOOK`
  seconds (a proof that cuts our feed back puts us behind unannounced).
- `clock_changes(moved)`: the heads to tell the peer in CLOCK.
- `offer_proof(messages, credit)`: a proof we keep goes to the peer unless it
  had it from us or sent it us, or (read among the new ones) it is about a
  feed the peer does not hold or we do not carry; not while the credit does
  not cover it (the writer waits for credit).
- `sent(sent, asked)`, `lacking()`: how far each subscription was sent, and
  whether any lacks what we hold (the writer reads the next batch).
- `suspects_moved()`: WANT the other branch of each new suspected fork.
- `rescoped()`: ask for what we carry now, stop what we no longer do.
- `ended(now)`: the feeds this session streamed go to the session showing
  the highest head of each (one not barred, if any).

Adding a gossip rule is adding (or changing) the event method that decides
it here, with its test in tests/node/test_gossip_policy.py on plain data;
node/gossip/session.py changes only for a new kind of action or a new store read.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from tanglenode.node.gossip.proof_rate import REFUSED, ProofRate
from tanglenode.node.gossip.stream_plan import STOP_AFTER, PeerView, Stream, StreamPlan
from tanglenode.protocol.errors import InvalidMessage, Reason
from tanglenode.protocol.evidence import InvalidProof
from tanglenode.protocol.gossip import DEFAULT_MAX_FEEDS, Clock
from tanglenode.protocol.identity import feed_text, message_id, tag_of
from tanglenode.protocol.message import author_of
from tanglenode.storage.feeds.ingest import IngestResult, Outcome

VARIANTS_REMEMBERED = 4096  # (feed, seq) of refused messages kept per connection
FULL_LOOK = 4.0  # seconds between looks through the peer's whole clock for feeds behind
# An honest peer can cause these: it holds what a proof condemns, another branch, or a
# feed we blocked after asking it for the feed.
_FORGIVEN = {Reason.FORKED_FEED, Reason.CHAIN_MISMATCH, Reason.BLOCKED_FEED}


# -- actions -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SendWant:
    """WANT these feeds after these seqs."""

    wants: dict[bytes, int]


@dataclass(frozen=True, slots=True)
class SendClock:
    """CLOCK: these heads changed."""

    changes: Clock


@dataclass(frozen=True, slots=True)
class SendEvidence:
    """EVIDENCE: one proof's messages."""

    raws: list[bytes]


@dataclass(frozen=True, slots=True)
class Grant:
    """CREDIT: the peer may send `n` more messages."""

    n: int


@dataclass(frozen=True, slots=True)
class Store:
    """A MESSAGES frame's messages of feeds we carry, to the inbox."""

    raws: list[bytes]


@dataclass(frozen=True, slots=True)
class CheckProof:
    """An EVIDENCE frame's proof, to the inbox."""

    raws: list[bytes]


@dataclass(frozen=True, slots=True)
class Refused:
    """A proof was refused for `reason`; `first`: the first this connection (log it)."""

    reason: str
    first: bool


@dataclass(frozen=True, slots=True)
class Wake:
    """The writer has something to send."""


@dataclass(frozen=True, slots=True)
class Drop:
    """End the connection: the peer broke a rule of ours."""

    reason: str


@dataclass(frozen=True, slots=True)
class Elsewhere:
    """Actions for another session's policy."""

    policy: GossipPolicy
    actions: list[Action]


Action = (
    SendWant
    | SendClock
    | SendEvidence
    | Grant
    | Store
    | CheckProof
    | Refused
    | Wake
    | Drop
    | Elsewhere
)


# -- what the node holds -------------------------------------------------------------------


class Holdings(Protocol):
    """What the machine reads of the node, never writes."""

    @property
    def clock(self) -> Mapping[bytes, int]: ...
    @property
    def tags(self) -> Mapping[bytes, bytes]: ...
    @property
    def invalid(self) -> Mapping[bytes, int]: ...
    @property
    def own_feed(self) -> bytes | None: ...
    @property
    def suspects(self) -> Mapping[bytes, int]: ...
    def carries(self, feed: bytes) -> bool: ...


@dataclass
class Held:
    """`Holdings` as plain data (tests; `carried` None: every feed)."""

    clock: dict[bytes, int] = field(default_factory=dict)
    tags: dict[bytes, bytes] = field(default_factory=dict)
    invalid: dict[bytes, int] = field(default_factory=dict)
    own_feed: bytes | None = None
    suspects: dict[bytes, int] = field(default_factory=dict)
    carried: set[bytes] | None = None

    def carries(self, feed: bytes) -> bool:
        return self.carried is None or feed in self.carried


# -- the machine ---------------------------------------------------------------------------


class GossipPolicy:
    """One session's decisions about its peer (see the module's theory of operation)."""

    def __init__(
        self,
        held: Holdings,
        plan: StreamPlan,
        peer_key: bytes,
        *,
        peer_clock: dict[bytes, int] | None = None,
        max_feeds: int = DEFAULT_MAX_FEEDS,
        proof_rate: ProofRate | None = None,
        owner: Any = None,
    ) -> None:
        self.held = held
        self.plan = plan
        self.peer_key = peer_key  # whom the plan's strikes bar: the peer, across connections
        self.owner = owner  # whoever carries out this policy's actions (the session)
        self.max_feeds = max_feeds
        self.peer_clock = {} if peer_clock is None else peer_clock  # feed -> its head's seq
        self.peer_tags: dict[bytes, bytes] = {}  # feed -> tag of the peer's head
        self.advertised: Clock = {}  # our clock as the peer last heard it
        self.asked: dict[bytes, int] = {}  # feed -> `after` of the last WANT we sent
        self.subscriptions: dict[bytes, int] = {}  # feed -> last seq sent
        # Each proof the peer had from us, or sent us, as the set of its message ids.
        self.proofs_sent: set[frozenset[bytes]] = set()
        self.proofs_due: set[bytes] = set()  # feeds the peer's clock named that we hold a
        # proof about: their proofs go out next
        self.proof_rate = proof_rate or ProofRate()  # what the peer may deliver
        self.variants: dict[tuple[bytes, int], bytes] = {}  # refused (feed, seq) -> id
        self.parted: dict[bytes, int] = {}  # feed -> the lowest seq of the peer's that did not
        # chain to ours (chain-mismatch): its later messages there miss their previous
        self.delivered: dict[bytes, int] = {}  # feed -> its messages from the peer we stored
        self.accepted = 0  # the new messages from the peer we stored
        self.ahead: set[bytes] = set()  # feeds its clock showed ahead of ours
        self.looked = float("-inf")  # when `tick` last looked through the whole clock

    # -- what the plan reads --------------------------------------------------------------

    def view(self, feed: bytes) -> PeerView:
        """What this session shows the plan of `feed`."""
        return PeerView(self.peer_clock.get(feed, 0), self.delivered.get(feed, 0), self.accepted)

    def peer_holds(self, feed: bytes) -> bool:
        """Whether the peer holds any of `feed`, as far as this connection shows: its clock
        names it, or it asked us for it (a peer does not tell a head equal to the one we told
        it, so one that got the feed from us, or caught up elsewhere, may never name it)."""
        return feed in self.peer_clock or feed in self.subscriptions

    def streamable(self, feed: bytes) -> bool:
        """Whether we may stream `feed` from a peer at all: one we carry, and not an invalid
        feed we hold all the valid messages of."""
        held = self.held
        if not held.carries(feed):
            return False
        end = held.invalid.get(feed)
        return end is None or held.clock.get(feed, 0) < end - 1

    # -- events ---------------------------------------------------------------------------

    def hello(self) -> Clock:
        """The session starts: our clock (the feeds we carry), as the walk reconciles it with
        the peer's (protocol/reconcile.py). HELLO itself tells nothing: a peer that does not
        reconcile hears every head in CLOCK (`clock_changes(None)`), as not yet told."""
        self.advertised = {}
        return self.our_clock()

    def our_clock(self) -> Clock:
        """Our clock as we tell it: the feeds we carry, each `(seq, tag)`."""
        held = self.held
        tags, carries = held.tags, held.carries
        return {feed: (seq, tags[feed]) for feed, seq in held.clock.items() if carries(feed)}

    def reconciled(self, ours: Clock, theirs: Clock, now: float) -> list:
        """The walk ended: the peer knows `ours` (our clock when it opened) and we know its
        clock, `theirs`, taken as its HELLO's would be (a head it told since in CLOCK
        stands)."""
        for feed, head in ours.items():
            self.advertised.setdefault(feed, head)
        told = self.peer_clock
        fresh = {feed: head for feed, head in theirs.items() if feed not in told}
        return self.peer_clock_changed(fresh, now, hello=True)

    def peer_clock_changed(self, changes: Clock, now: float, *, hello: bool = False) -> list:
        """The peer's HELLO clock (`hello`) or a CLOCK's changes."""
        clock = self.peer_clock
        new_feeds = sum(feed not in clock for feed in changes)
        if len(clock) + new_feeds > self.max_feeds:
            return [Drop(f"its clock names more than {self.max_feeds} feeds")]
        held = self.held
        invalid, carries, ours = held.invalid, held.carries, held.clock
        for feed, (seq, tag) in changes.items():
            if feed not in clock and feed in invalid and carries(feed):
                self.proofs_due.add(feed)  # it holds a feed we hold a proof about
            clock[feed] = seq
            self.peer_tags[feed] = tag
            if seq > ours.get(feed, 0):
                self.ahead.add(feed)
        # Its credit (HELLO) lets proofs held back for want of it go now.
        actions: list[Action] = [Wake()] if self.proofs_due or hello else []
        return [*actions, *self.want(self.wants_of(changes, now))]

    def peer_wants(self, wants: Mapping[bytes, int]) -> list:
        """The peer's WANT: a subscription for each feed we advertised and carry."""
        held = self.held
        ours, carries, invalid = held.clock, held.carries, held.invalid
        for feed, after in wants.items():
            if feed in ours and carries(feed):  # an honest peer wants what we advertised
                self.subscriptions[feed] = after
                if feed in invalid:
                    self.proofs_due.add(feed)  # it is about to hold the feed
        return [Wake()]

    def messages(self, raws: list[bytes]) -> list:
        """A MESSAGES frame. One of a feed we never asked for and do not carry is a push of
        what we did not want: the peer is dropped. One of a feed we asked for before our
        scope left it out is not stored, its credit granted back."""
        carries, kept = self.held.carries, []
        for raw in raws:
            author = author_of(raw)
            if author is None or carries(author):
                kept.append(raw)  # a malformed one: the store refuses it with its reason
            elif author not in self.asked:
                return [
                    Drop(
                        f"pushed messages of {feed_text(author)}, a feed we never asked for "
                        "and do not carry"
                    )
                ]
        actions: list[Action] = []
        if len(kept) < len(raws):
            actions.append(Grant(len(raws) - len(kept)))
        if kept:
            actions.append(Store(kept))
        return actions

    def proof(self, raws: list[bytes], now: float) -> list:
        """An EVIDENCE frame: checked within the peer's proof rate, else refused (not
        checked nor stored, its credit granted back, the peer kept)."""
        rate = self.proof_rate
        if rate.take(now):
            return [CheckProof(raws)]
        reason = f"{REFUSED}: more than {rate.burst} proofs at once or {rate.rate:g} a second"
        return [Refused(reason, rate.refused == 1), Grant(len(raws))]

    def proofs_taken(self, proofs: list[list[bytes]]) -> list[list[bytes]]:
        """The inbox hands on consecutive proofs: those about feeds we carry are to be
        applied. Each is marked had from the peer first (by its message ids, which name it
        as its id does), so the store's new evidence never echoes it back."""
        self.proofs_sent.update(frozenset(message_id(raw) for raw in raws) for raws in proofs)
        carries = self.held.carries
        # A proof about a feed we do not carry is not ours to keep or pass on.
        return [raws for raws in proofs if any(carries(author_of(raw) or b"") for raw in raws)]

    def proofs_stored(self, proofs: list[list[bytes]], outcomes: Iterable[object]) -> list:
        """What the store made of them: their credit comes back; one that proves nothing
        drops the peer (one we hold already changes nothing)."""
        actions: list[Action] = [Grant(sum(len(raws) for raws in proofs))]
        for outcome in outcomes:
            if isinstance(outcome, InvalidMessage | InvalidProof):
                actions.append(Drop(f"sent evidence that proves nothing: {outcome}"))
                break
        return actions

    def stored(self, count: int, results: list[IngestResult], now: float) -> list:
        """The inbox stored a batch of `count` messages: judge what became of them, count
        what the peer delivered, grant the credit back."""
        descend: dict[bytes, int] = {}
        for result in results:
            if result.outcome is Outcome.REJECTED and not self._forgiven(result):
                return [Drop(f"sent an invalid message: {result.reason}: {result.detail}")]
            if (twice := self._note_variant(result)) is not None:
                return [twice]
            if result.reason is Reason.CHAIN_MISMATCH and result.message:
                # Its branch and ours differ at or below our head: ask for its message there.
                author, seq = result.message.author, result.message.seq
                descend[author] = max(seq - 2, 0)
                self.parted[author] = min(seq, self.parted.get(author, seq))
                if len(self.parted) > VARIANTS_REMEMBERED:
                    del self.parted[next(iter(self.parted))]
        accepted = [result for result in results if result.outcome is Outcome.ACCEPTED]
        authors = set()
        peer_clock, peer_tags = self.peer_clock, self.peer_tags
        for result in accepted:  # what the stream plan credits this peer with
            if result.message is not None:
                author, seq = result.message.author, result.message.seq
                self.delivered[author] = self.delivered.get(author, 0) + 1
                authors.add(author)
                if seq >= peer_clock.get(author, 0):  # it holds what it sent: no need to
                    peer_clock[author], peer_tags[author] = seq, tag_of(result.id)  # tell it
        self.accepted += len(accepted)
        actions: list[Action] = []
        probed = [feed for feed in authors if self in self.plan.probers(feed)]
        if probed:  # a probe that proves its claim streams at once: the overlap ends
            actions += self.review(probed, now, delivered=True)
        actions.append(Grant(count))
        actions += self.want(descend)
        return actions

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

    def _note_variant(self, result: IngestResult) -> Drop | None:
        """Drop a peer that sends two messages for one (feed, seq): an honest one holds one."""
        if result.message is None or result.outcome not in (Outcome.FORK, Outcome.REJECTED):
            return None
        if result.outcome is Outcome.REJECTED and result.reason is not Reason.FORKED_FEED:
            return None
        key = (result.message.author, result.message.seq)
        earlier = self.variants.setdefault(key, result.id)
        if earlier != result.id:
            return Drop(f"sent two messages for seq {key[1]} of one feed")
        if len(self.variants) > VARIANTS_REMEMBERED:
            del self.variants[next(iter(self.variants))]
        return None

    def offer_proof(
        self, messages: list, credit: int, *, about: bytes | None = None
    ) -> list | None:
        """A proof we keep (its messages, each with its `id` and `raw`), with `credit`
        messages the peer lets us send: `[SendEvidence]` when it goes to the peer (marked
        had), `[]` when it does not (the peer had it from us or sent it us; or, `about` its
        feed when read among the new ones, the peer does not hold the feed or we do not carry
        it), None while the credit does not cover it (the rest waits for credit)."""
        if about is not None and not (self.peer_holds(about) and self.held.carries(about)):
            return []
        key = frozenset(message.id for message in messages)
        if key in self.proofs_sent:
            return []
        if len(messages) > credit:
            return None
        self.proofs_sent.add(key)
        return [SendEvidence([message.raw for message in messages])]

    def lacking(self) -> bool:
        """Whether a subscription lacks messages we hold."""
        ours = self.held.clock
        return any(ours.get(feed, 0) > sent for feed, sent in self.subscriptions.items())

    def sent(self, sent: Mapping[bytes, int], asked: Mapping[bytes, int]) -> None:
        """A batch read for the subscriptions `asked` went out, each feed's up to `sent`:
        unless a WANT changed a subscription meanwhile (it starts where the peer said)."""
        subscriptions = self.subscriptions
        for feed, seq in sent.items():
            if subscriptions.get(feed) == asked.get(feed):
                subscriptions[feed] = seq

    def suspects_moved(self) -> list:
        """The store's suspected forks changed: ask for any new suspect's other branch."""
        clock, tags = self.peer_clock, self.peer_tags
        heads = {f: (clock[f], tags[f]) for f in self.held.suspects if f in tags and f in clock}
        return self.want(self.suspect_wants(heads))

    def clock_changes(self, moved: Collection[bytes] | None) -> list:
        """The heads to tell the peer, of the feeds whose head moved (`moved`; None: look
        at every feed): those that changed since we last told it, unless it told us the same
        head (but the first head of a feed we never told it of: its proofs find us by it), or
        it streams the feed from us short of the head (the head's message goes to it)."""
        held = self.held
        clock, tags, carries = held.clock, held.tags, held.carries
        peer_clock, peer_tags, advertised = self.peer_clock, self.peer_tags, self.advertised
        subscriptions = self.subscriptions
        changes = {}
        for feed in clock if moved is None else moved:
            if feed not in clock:
                continue  # a proof cut it back to nothing: there is no head to tell
            head = (clock[feed], tags[feed])
            told = advertised.get(feed)
            if told is not None and subscriptions.get(feed, STOP_AFTER) < head[0]:
                continue  # it streams the feed from us: the head goes to it itself
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
        if not changes:
            return []
        advertised.update(changes)
        return [SendClock(changes)]

    def rescoped(self, now: float) -> list:
        """Our scope changed: ask the peer for what we carry now (from its clock), and stop
        its subscriptions and ours of what we no longer carry."""
        held = self.held
        carries, invalid = held.carries, held.invalid
        # The proofs we pass on are those of the feeds we carry: of the feeds the peer holds.
        peer_held = self.peer_clock.keys() | self.subscriptions.keys()
        self.proofs_due.update(f for f in peer_held if f in invalid and carries(f))
        actions: list[Action] = []
        for feed in [f for f, after in self.asked.items() if after != STOP_AFTER]:
            if not carries(feed):  # it left our scope: this peer stops pushing it
                self.plan.drop(feed, self)
                actions += self.stop_streaming(feed)
        clock, tags = self.peer_clock, self.peer_tags
        heads = {f: (clock[f], tags[f]) for f in clock if f in tags and carries(f)}
        actions += self.stream(self.wants_of(heads, now))  # whatever we asked of it before
        for feed in [feed for feed in self.subscriptions if not carries(feed)]:
            del self.subscriptions[feed]
        return actions

    def tick(self, now: float) -> tuple[list, bool]:
        """Time passed: the plan judges the feeds this session has a say on. Also whether it
        has any (else the session waits for the peer's clock to move, or `FULL_LOOK`)."""
        if now - self.looked >= FULL_LOOK:
            ours = self.held.clock
            self.ahead = {f for f, seq in self.peer_clock.items() if seq > ours.get(f, 0)}
            self.looked = now
        feeds = self.reviewable()
        return (self.review(feeds, now), True) if feeds else ([], False)

    def reviewable(self) -> list[bytes]:
        """The feeds this session has a say on: those its peer shows ahead of us, those it
        probes."""
        ours, clock, streamable = self.held.clock, self.peer_clock, self.streamable
        self.ahead = {f for f in self.ahead if clock.get(f, 0) > ours.get(f, 0)}
        return [f for f in self.ahead if streamable(f)] + self.plan.probing(self)

    def review(self, feeds: Iterable[bytes], now: float, *, delivered: bool = False) -> list:
        """Let the plan judge `feeds` and turn its `Stream` and `Stop` into WANTs, each at
        the session it names (node/gossip/stream_plan.py), from our seq."""
        plan, ours = self.plan, self.held.clock
        policies = list(plan.sessions)
        actions: list[Action] = []
        for feed in feeds:
            if not plan.due(feed, now, delivered=delivered):
                continue  # another session judged it this tick
            have = ours.get(feed, 0)
            views = {policy: policy.view(feed) for policy in policies}
            for policy, act in plan.review(feed, have, now, views, delivered=delivered):
                if isinstance(act, Stream):
                    done = policy.stream({feed: have})
                else:
                    done = policy.stop_streaming(feed)
                actions += done if policy is self else [Elsewhere(policy, done)]
        return actions

    def ended(self, now: float) -> list:
        """This session ended: each feed it streamed goes to the session whose peer showed
        the highest head of it (one not barred if any; ties by rank), asked from our seq."""
        plan, ours = self.plan, self.held.clock
        actions: list[Action] = []
        for feed in plan.release(self):
            if not self.streamable(feed):
                continue
            holders = [p for p in plan.sessions if p.peer_clock.get(feed, 0) > 0]
            if not holders:
                continue
            trusted = [p for p in holders if not plan.barred(feed, p, now)]
            best = max(trusted or holders, key=lambda p: (p.peer_clock.get(feed, 0), plan.rank(p)))
            plan.take(feed, best)
            actions.append(Elsewhere(best, best.stream({feed: ours.get(feed, 0)})))
        return actions

    # -- wants ----------------------------------------------------------------------------

    def wants_of(self, heads: Clock, now: float) -> dict[bytes, int]:
        """What to ask for, given the peer's `heads`: what it has beyond us (if the plan
        lets this session stream it), and its side of any fork it shows, of the feeds we
        carry."""
        held = self.held
        ours, tags, carries, me = held.clock, held.tags, held.carries, held.own_feed
        wants: dict[bytes, int] = {}
        for feed, (seq, tag) in heads.items():
            if not carries(feed):
                continue
            have = ours.get(feed, 0)
            if seq == have and have and tag != tags.get(feed):
                wants[feed] = have - 1  # its message at our head's seq is another
            elif (
                (seq > have or (seq == have and seq and feed != me))  # ours: only if behind
                and self.streamable(feed)
                and self.plan.claim(feed, self, now)
            ):
                wants[feed] = have  # we stream it from this peer (node.gossip.stream_plan)
        for feed, after in self.suspect_wants(heads).items():
            wants[feed] = min(after, wants.get(feed, after))
        return wants

    def suspect_wants(self, heads: Clock) -> dict[bytes, int]:
        """For each feed of `heads` (the peer's) with a suspected fork the peer's head
        reaches: its messages from the lowest suspected seq on, unless its head is the very
        message we hold there (same seq, same tag)."""
        held = self.held
        ours, tags, invalid, lowest = held.clock, held.tags, held.invalid, held.suspects
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

    def want(self, wants: dict[bytes, int]) -> list:
        """WANT each feed once; again only to go back (a subscription then pushes the rest)."""
        asked = self.asked
        wants = {feed: after for feed, after in wants.items() if after < asked.get(feed, after + 1)}
        if not wants:
            return []
        asked.update(wants)
        return [SendWant(wants)]

    def stream(self, wants: dict[bytes, int]) -> list:
        """Subscribe to these feeds here (the plan made us their streamer), from these seqs,
        whatever we asked before."""
        if not wants:
            return []
        self.asked.update(wants)
        return [SendWant(wants)]

    def stop_streaming(self, feed: bytes) -> list:
        """Another session streams `feed` now: end its subscription on this peer."""
        self.asked[feed] = STOP_AFTER
        return [SendWant({feed: STOP_AFTER})]
