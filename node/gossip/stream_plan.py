"""Which connected peer streams each feed to us: every new message received once, and no
peer able to hold a feed back.

Theory of operation
-------------------
Without a plan every session subscribes to every feed its peer is ahead on,
and each peer then pushes each new message: a node with k peers receives
each message k times. The plan (one per store service, shared by its
sessions: `service.shared(StreamPlan)`) gives each feed one *streamer*, the session that
holds the feed's open subscription (WANT); the other sessions only read
the feed's heads in their peers' CLOCK notes, as epidemic broadcast trees
(EBT) and Plumtree do.

The plan is a pure policy core, as iroh-gossip's `proto` is: it holds no
store state and reads no clock; each call is told the time (`now`) and
what each live session shows (`PeerView`: its peer's head, what of the feed
it delivered, what it delivered in all), and `review` answers with the
subscriptions to start and end (`Stream`, `Stop`), which the gossip session
carries out (node/gossip/session.py). A streamer is judged against what the other
peers show they could deliver, never against a rate of our own choosing
(a slow honest link is not a fault while nobody does better):

- **Claiming.** A session whose peer shows a feed ahead of us (or at our
  head) streams it at once if nobody does (`claim`): with honest peers the
  first to show a feed streams it, with no wait. A barred peer claims only
  when every peer showing the feed is barred (there is nobody else).
- **Owing.** Every head a live peer shows beyond what we hold is owed from
  the moment it is first shown (`Debt`: marks of (when, head)); holding it
  pays it. Progress pays only what it reaches, so a streamer sending one
  message every 1.9 s owes ever older heads.
- **Racing.** When the oldest owed head waited a grace (`switch_after`),
  or the streamer's deliveries come late on average (more than half the
  grace after a peer first showed them), while the streamer sent us fewer
  than `PROVEN` messages in its last full grace that other peers vouched
  for (had shown us), of any feed (one busy catching us up is not raced on
  a feed it has not reached yet; it may hold a feed back only while it
  sends us that much of others, and what it mints does not count), and the
  last race is at least the race wait ago (a grace, doubled after each
  race the streamer kept, back once we caught up), the peer showing
  the highest head (not barred; after a lost race, every such peer at
  once) is asked for the feed beside the streamer: a *challenger*. A
  streamer that has nothing we lack (its peer shows no more than we hold)
  rests meanwhile (told to stop: no copies), and streams again the moment
  its peer shows something we lack, so a challenger that trickles holds
  nothing back.
- **Winning.** A challenger that *proves* its claim (we hold all it
  showed, or it delivered `PROVEN` messages of it) having delivered at
  least what the streamer did since the race began, or that delivered more
  than a working streamer when the grace ran out, streams the feed; the
  streamer and the other challengers stop, unblamed. Beside a resting
  streamer a challenger may go on delivering unproven (it may be the only
  source), so long as it delivers something every grace.
- **Strikes.** A peer that showed heads and delivered nothing at all (of
  any feed) for a grace, as streamer or challenger, is *struck*: told to
  stop and barred (by its key, so reconnecting does not clear it) from
  streaming or challenging for that feed for `FAILED_FOR` seconds,
  doubled at each further strike up to `MAX_BAR`. A silent streamer's feed
  goes to every other peer showing more at once, the first to prove it
  streaming. Strikes are bounded in number: expired ones are forgotten
  first, then single ones, so a peer struck on many throwaway feeds does
  not clear its record on the one that matters.
- **Leaving.** When a session ends, each feed it streamed goes to another
  session (`release` returns them, the caller picks the peer that shows
  the highest head, one not barred if there is one), from our own seq, so
  nothing is lost. A feed that leaves the scope is dropped (`drop`). A
  streamer told to stop gets a WANT after `STOP_AFTER`, which an honest
  peer of any version reads as "nothing more".

Ties between equal heads go to the peer key that ranks first by a hash
with our own key (`rank`), so no peer can grind a key that wins ties on
every node. With `once` off every session streams every feed it is
behind on, as before the plan: the flooding baseline `tangled sim --flood`
compares against.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field

SWITCH_AFTER = 2.0  # seconds of grace: the race wait, and what silence is
PROVEN = 256  # messages a challenger delivers (unless its whole claim is fewer) to prove it
LATE = 0.5  # of the grace: a streamer whose deliveries come later on average is raced
STOP_AFTER = (1 << 63) - 1  # a WANT after this seq asks for nothing: the subscription ends
FAILED_FOR = 30.0  # seconds a first strike bars a peer from streaming the feed
MAX_BAR = 3600.0  # the longest bar, however many strikes
MAX_RACE_WAIT = 64.0  # seconds between races at most, however many the streamer kept
MAX_MARKS = 16  # heads remembered per debt (the newest takes later heads on)
MAX_STRIKES = 65_536  # (feed, peer) strikes remembered at most
STALE = 4  # ticks without a review (nobody ahead) after which what is owed starts afresh


@dataclass(frozen=True, slots=True)
class PeerView:
    """What one session shows of a feed: its peer's head, the messages of the feed it
    delivered that we stored (this connection), and the new messages it delivered in all."""

    shown: int
    delivered: int = 0
    total: int = 0


@dataclass(frozen=True, slots=True)
class Stream:
    """Subscribe to the feed at `session`, from the seq we hold."""

    session: Hashable


@dataclass(frozen=True, slots=True)
class Stop:
    """End the feed's subscription at `session`."""

    session: Hashable


Act = Stream | Stop


@dataclass(slots=True)
class Debt:
    """Heads shown that we lack, oldest first, each as (when, head): each owed from its own
    moment, so a head paid late never buys the next one a fresh wait."""

    marks: deque[tuple[float, int]] = field(default_factory=deque)

    @property
    def target(self) -> int:
        return self.marks[-1][1] if self.marks else 0

    def owe(self, head: int, now: float) -> None:
        if head <= self.target:
            return
        if len(self.marks) >= MAX_MARKS:  # the newest mark takes the head on, keeping its time
            self.marks[-1] = (self.marks[-1][0], head)
        else:
            self.marks.append((now, head))

    def settle(self, have: int, now: float) -> list[float]:
        """What we hold pays every mark up to it: how long each waited."""
        waited = []
        while self.marks and self.marks[0][1] <= have:
            waited.append(now - self.marks.popleft()[0])
        return waited

    def age(self, now: float) -> float:
        """How long the oldest unpaid head has been owed (0: none)."""
        return now - self.marks[0][0] if self.marks else 0.0


@dataclass(slots=True)
class Challenger:
    """`session`, asked for the feed beside the streamer, claiming `claim`; `delivered` and
    `total` are its counts then, `checked` when it was last not silent."""

    session: Hashable
    claim: int
    delivered: int
    total: int
    checked: float


@dataclass(slots=True)
class _Feed:
    streamer: Hashable | None = None
    owed: Debt = field(default_factory=Debt)  # every head shown beyond what we hold
    own: Debt = field(default_factory=Debt)  # those the streamer's own peer showed
    silent_total: int = -1  # the streamer's total when its oldest own head was shown
    challengers: list[Challenger] = field(default_factory=list)
    race_since: float = 0.0
    race_streamer_delivered: int = 0  # the streamer's delivered count when the race began
    race_wait: float = SWITCH_AFTER
    last_race: float = float("-inf")
    escalated: bool = False  # a challenger failed: every other peer is asked at once
    resting: bool = False  # the streamer was told to stop while challengers are asked
    lateness: float = 0.0  # how long after first shown the streamer's deliveries came, on average
    work_since: float = float("-inf")  # the streamer's last full grace began then,
    work_total: int = 0  # with its credit then
    working: bool = False  # it sent PROVEN vouched messages in its last full grace
    held: int = 0  # what we held at the last review
    reviewed: float = float("-inf")

    @property
    def idle(self) -> bool:
        return self.streamer is None and not self.challengers


@dataclass(slots=True)
class _Strikes:
    count: int
    until: float


def peer_key(session: Hashable) -> Hashable:
    """Whom a strike bars: the session's peer (`peer_key`), else the session itself."""
    return getattr(session, "peer_key", session)


@dataclass
class StreamPlan:
    """Feed -> the session that streams it, what it owes, who challenges it; who is barred."""

    switch_after: float = SWITCH_AFTER
    once: bool = True  # False: every session streams every feed (flooding, for comparison)
    salt: bytes = b""  # our own key: ties between equal heads are ranked by a hash with it
    sessions: set = field(default_factory=set)  # the live sessions, which may stream
    feeds: dict[bytes, _Feed] = field(default_factory=dict)
    strikes: dict[tuple[bytes, Hashable], _Strikes] = field(default_factory=dict)
    challenging: dict[Hashable, set[bytes]] = field(default_factory=dict)  # session -> feeds
    credit: dict[Hashable, int] = field(default_factory=dict)  # session -> vouched messages

    @property
    def tick(self) -> float:
        """How often the sessions review the feeds they are behind on."""
        return self.switch_after / 8

    # -- reading ---------------------------------------------------------------------------

    def streamer(self, feed: bytes) -> Hashable | None:
        state = self.feeds.get(feed)
        return state.streamer if state else None

    def probers(self, feed: bytes) -> list[Hashable]:
        """The challengers of `feed`, asked beside its streamer."""
        state = self.feeds.get(feed)
        return [challenger.session for challenger in state.challengers] if state else []

    def probing(self, session: Hashable) -> list[bytes]:
        """The feeds `session` challenges for."""
        return list(self.challenging.get(session, ()))

    def barred(self, feed: bytes, session: Hashable, now: float) -> bool:
        strikes = self.strikes.get((feed, peer_key(session)))
        return strikes is not None and now < strikes.until

    def due(self, feed: bytes, now: float, *, delivered: bool = False) -> bool:
        """Whether `review` would judge `feed` now (not judged this tick already)."""
        state = self.feeds.get(feed)
        return self.once and (state is None or delivered or now - state.reviewed >= self.tick / 2)

    def rank(self, session: Hashable) -> bytes:
        """Among equal heads, the session whose rank is highest wins."""
        key = peer_key(session)
        raw = key if isinstance(key, bytes) else repr(key).encode()
        return hashlib.blake2b(raw, key=self.salt[:64], digest_size=8).digest()

    # -- changing --------------------------------------------------------------------------

    def claim(self, feed: bytes, session: Hashable, now: float) -> bool:
        """`session` streams `feed` if nobody does; whether it does now."""
        if not self.once:
            return True
        state = self.feeds.get(feed)
        if state is not None and state.streamer is not None:
            return state.streamer is session
        if self.barred(feed, session, now):
            return False  # the review gives it a barred peer only if nobody else shows it
        self.take(feed, session)
        return True

    def take(self, feed: bytes, session: Hashable) -> None:
        """`session` streams `feed` from now on (a hand-over: nobody is blamed)."""
        state = self.feeds.setdefault(feed, _Feed())
        state.streamer, state.resting = session, False
        state.own, state.silent_total, state.lateness = Debt(), -1, 0.0
        state.work_since, state.working = float("-inf"), False
        self._end_challenge(feed, state, session)

    def strike(self, feed: bytes, session: Hashable, now: float) -> None:
        """`session`'s peer failed `feed`: barred from it for longer at each strike."""
        key = (feed, peer_key(session))
        before = self.strikes.pop(key, None)
        count = before.count + 1 if before else 1
        doubled = FAILED_FOR * 2 ** min(count - 1, 32)  # MAX_BAR long before 2**32
        self.strikes[key] = _Strikes(count, now + min(MAX_BAR, doubled))
        if len(self.strikes) > MAX_STRIKES:
            self._forget_strikes(now)

    def _forget_strikes(self, now: float) -> None:
        """Down to seven eighths of the bound at once: expired strikes first, then single
        ones, then the oldest."""
        keep = MAX_STRIKES * 7 // 8
        self.strikes = {key: s for key, s in self.strikes.items() if now < s.until}
        for key in [key for key, s in self.strikes.items() if s.count == 1]:
            if len(self.strikes) <= keep:
                break
            del self.strikes[key]
        while len(self.strikes) > keep:
            del self.strikes[next(iter(self.strikes))]

    def release(self, session: Hashable) -> list[bytes]:
        """`session` ended: the feeds it streamed, now streamed by nobody (its challenges
        end)."""
        streamed = [feed for feed, state in self.feeds.items() if state.streamer is session]
        for feed in streamed + self.probing(session):
            self.drop(feed, session)
        self.challenging.pop(session, None)
        self.credit.pop(session, None)
        return streamed

    def drop(self, feed: bytes, session: Hashable) -> None:
        """`session` no longer streams or challenges for `feed` (the feed left the scope)."""
        state = self.feeds.get(feed)
        if state is None:
            return
        self._end_challenge(feed, state, session)
        if state.streamer is session:
            state.streamer, state.resting = None, False
            state.own, state.silent_total = Debt(), -1
        if state.idle:
            del self.feeds[feed]

    # -- judging ---------------------------------------------------------------------------

    def review(
        self,
        feed: bytes,
        have: int,
        now: float,
        views: Mapping[Hashable, PeerView],
        *,
        delivered: bool = False,
    ) -> list[tuple[Hashable, Act]]:
        """Judge `feed`, of which we hold `have`, by what each live session shows (`views`):
        the subscriptions to start and end. Reviewing one feed more than once a tick (the
        sessions each review the feeds they are behind on) changes nothing, unless a
        challenger just `delivered` (so the streamer it replaces stops at once)."""
        if not self.due(feed, now, delivered=delivered):
            return []
        state = self.feeds.get(feed)
        if state is None:
            state = self.feeds[feed] = _Feed()
        elif now - state.reviewed > STALE * self.tick:  # nobody was ahead meanwhile: what
            state.owed, state.own = Debt(), Debt()  # was shown then is shown afresh now
            state.silent_total, state.escalated = -1, False
        state.reviewed = now
        acts: list[Act] = []
        if state.streamer is not None and state.streamer not in views:
            state.streamer, state.resting = None, False
        ahead = {s: view.shown for s, view in views.items() if view.shown > have}
        self._account(state, have, now, ahead, views)
        self._judge_challengers(feed, state, have, now, views, acts)
        if state.streamer is not None:
            self._judge_streamer(feed, state, have, now, views, ahead, acts)
        elif not state.challengers and ahead:
            best = self._best(feed, ahead, now) or self._best(feed, ahead, now, barred=True)
            self.take(feed, best)
            acts.append(Stream(best))
        if not ahead and not state.challengers:
            state.race_wait, state.escalated = self.switch_after, False  # caught up
        if state.idle:
            del self.feeds[feed]
        return [(act.session, act) for act in acts]

    def _account(self, state: _Feed, have, now, ahead, views) -> None:
        """Pay what we hold, owe what is shown; how late the streamer's deliveries came; what
        of it other peers vouched for (showed), credited to the streamer."""
        streamer = state.streamer
        if streamer is not None and have > state.held:
            others = max((v.shown for s, v in views.items() if s is not streamer), default=0)
            vouched = min(have, others) - state.held
            if vouched > 0:
                self.credit[streamer] = self.credit.get(streamer, 0) + vouched
        state.held = have
        for waited in state.owed.settle(have, now):
            if state.streamer is not None and not state.challengers:
                state.lateness = 0.75 * state.lateness + 0.25 * waited
        if ahead:
            state.owed.owe(max(ahead.values()), now)
        state.own.settle(have, now)
        if state.streamer is not None:
            before = state.own.target
            state.own.owe(ahead.get(state.streamer, 0), now)
            if not state.own.marks:
                state.silent_total = -1
            elif before <= have or state.silent_total < 0:  # a new oldest own head
                state.silent_total = views[state.streamer].total

    def _silent(self, state: _Feed, now: float, views) -> bool:
        """Whether the streamer showed heads we lack a grace ago and sent nothing since."""
        return (
            state.own.age(now) >= self.switch_after
            and views[state.streamer].total == state.silent_total
        )

    def _judge_challengers(self, feed, state: _Feed, have, now, views, acts: list[Act]) -> None:
        """A challenger that proved its claim, or outdid a working streamer by the grace,
        streams (the streamer and the others stop, unblamed); one silent for a grace is
        struck; one whose claim reached us another way, or that lost, ends."""
        streamer = state.streamer
        kept = views[streamer].delivered - state.race_streamer_delivered if streamer else 0
        winners = []
        for challenger in list(state.challengers):
            view = views.get(challenger.session)
            if view is None:
                self._end_challenge(feed, state, challenger.session)
                continue
            sent = view.delivered - challenger.delivered
            proved = sent > 0 and (have >= challenger.claim or sent >= PROVEN)
            if view.total > challenger.total:
                challenger.total, challenger.checked = view.total, now
            overtime = now - state.race_since >= self.switch_after
            if proved and sent >= kept:
                winners.append((sent, self.rank(challenger.session), challenger))
            elif now - challenger.checked >= self.switch_after:  # silent a grace
                self.strike(feed, challenger.session, now)
                state.escalated = True
                self._stop_challenger(feed, state, challenger, acts)
            elif have >= challenger.claim:  # what it showed came another way
                self._stop_challenger(feed, state, challenger, acts)
            elif overtime and not state.resting:  # beside a working streamer: more, or out
                if sent > kept:
                    winners.append((sent, self.rank(challenger.session), challenger))
                else:
                    self._stop_challenger(feed, state, challenger, acts)
                    state.race_wait = min(MAX_RACE_WAIT, 2 * state.race_wait)
        if winners:
            winner = max(winners, key=lambda entry: entry[:2])[2]
            if streamer is not None and not state.resting:
                acts.append(Stop(streamer))
            for other in state.challengers:
                if other is not winner:
                    acts.append(Stop(other.session))
            self.take(feed, winner.session)
            for other in list(state.challengers):
                self._end_challenge(feed, state, other.session)

    def _judge_streamer(self, feed, state: _Feed, have, now, views, ahead, acts) -> None:
        """A silent streamer is struck and every other peer showing more asked at once; a
        resting one streams again once its peer shows what we lack; a race starts when what
        is owed waited the race wait, or the streamer's deliveries come late."""
        streamer = state.streamer
        own = ahead.get(streamer, 0)
        if state.resting and (not state.challengers or own):
            acts.append(Stream(streamer))
            state.resting = False
        others = {s: h for s, h in ahead.items() if s is not streamer}
        asked = {challenger.session for challenger in state.challengers}
        fresh = {s: h for s, h in others.items() if s not in asked}
        free = sorted(
            (s for s in fresh if not self.barred(feed, s, now)), key=self.rank, reverse=True
        )
        if not state.resting and own and self._silent(state, now, views):
            self.strike(feed, streamer, now)
            if not free and not state.challengers:
                state.own, state.silent_total = Debt(), -1  # nobody else: it keeps the feed
                return
            acts.append(Stop(streamer))
            state.streamer, state.resting = None, False
            self._race(feed, state, free, fresh, now, views, acts)
            return
        if state.challengers or not free or now - state.last_race < state.race_wait:
            return
        if self._working(state, now):
            return  # what it sends us meanwhile is worth the wait
        late = state.lateness > LATE * self.switch_after
        if state.owed.age(now) >= self.switch_after or late:
            if not state.escalated:
                free = [max(free, key=lambda s: (fresh[s], self.rank(s)))]
            if not own and not state.resting:  # it has nothing we lack: it rests meanwhile
                acts.append(Stop(streamer))
                state.resting = True
            self._race(feed, state, free, fresh, now, views, acts)
            state.lateness = 0.0

    def _working(self, state: _Feed, now: float) -> bool:
        """Whether the streamer sent us `PROVEN` messages that other peers vouched for (had
        shown us), of any feed, in its last full grace: a peer busy catching us up is not
        raced on a feed it has not reached yet, and what it mints itself does not count."""
        credit = self.credit.get(state.streamer, 0)
        if now - state.work_since >= self.switch_after:
            state.working = credit - state.work_total >= PROVEN
            state.work_since, state.work_total = now, credit
        return state.working

    def _race(self, feed, state: _Feed, sessions, heads, now, views, acts: list[Act]) -> None:
        state.race_since, state.last_race = now, now
        streamer = state.streamer
        state.race_streamer_delivered = views[streamer].delivered if streamer else 0
        for session in sessions:
            view = views[session]
            challenger = Challenger(session, heads[session], view.delivered, view.total, now)
            state.challengers.append(challenger)
            self.challenging.setdefault(session, set()).add(feed)
            acts.append(Stream(session))

    def _stop_challenger(self, feed, state: _Feed, challenger: Challenger, acts) -> None:
        acts.append(Stop(challenger.session))
        self._end_challenge(feed, state, challenger.session)

    def _end_challenge(self, feed: bytes, state: _Feed, session: Hashable) -> None:
        state.challengers = [c for c in state.challengers if c.session is not session]
        feeds = self.challenging.get(session)
        if feeds is not None:
            feeds.discard(feed)
            if not feeds:
                del self.challenging[session]

    def _best(
        self, feed: bytes, heads: Mapping[Hashable, int], now: float, *, barred: bool = False
    ) -> Hashable | None:
        """The session showing the highest head of `feed` among those not barred from it
        (`barred`: among all of them, for when every one is); ties by `rank`."""
        pool = [s for s in heads if barred or not self.barred(feed, s, now)]
        if not pool:
            return None
        return max(pool, key=lambda s: (heads[s], self.rank(s)))
