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
what each live session shows (`PeerView`), and `review` answers with the
subscriptions to start and end (`Stream`, `Stop`), which the gossip session
carries out (node/gossip.py). Its rules:

- **Claiming.** A session whose peer shows a feed ahead of us (or at our
  head) subscribes at once if no live session streams it yet (`claim`):
  with honest peers the first to show a feed streams it, with no wait.
- **Owing.** A streamer whose own peer showed more than we hold owes it
  (`Debt`): after a grace of `switch_after` seconds it must have delivered
  at `floor_rate` messages a second until the head it showed is ours.
  Progress does not restart the time, so a peer that sends one message
  every 1.9 s fails as one that sends none does. Time the streamer waits
  on us (its messages received and not yet stored: `PeerView.busy`) is not
  counted: a long honest catch-up through a store slower than the floor
  is not blamed. A streamer that falls short is *struck* and the feed goes
  to the session whose peer shows the highest head (one not barred).
- **Probing.** What other peers show beyond the streamer's own peer (a
  quiet feed the streamer has nothing more of, or a streamer that shows a
  little at a time) is owed too, by the same grace and floor: an honest
  streamer relays it as its own peer gets it. Unpaid, it is not the
  streamer's fault (its peer may not have it), so nobody is struck: the
  peer showing the highest head is asked for the feed beside the streamer
  (after a failed probe, every other peer at once: a crowd of liars costs
  two graces at most), and believed only when it delivers: once it has
  delivered all it claimed, or `PROVEN` messages of it, it is the streamer
  and the old one is told to stop, unblamed (among several probes, the one
  that delivered most). A probe that owes its claim past the same grace and floor is
  struck and ended; one whose claim reached us another way ends unblamed.
- **Strikes.** Each strike bars the peer (by its key, so reconnecting
  does not clear it: `peer_key`) from streaming or probing that feed for
  `FAILED_FOR` seconds, doubled at each further strike up to `MAX_BAR`: a
  peer that claims heads it never sends costs each feed one grace, then
  ever rarer ones. Strikes are bounded in number (the oldest forgotten).
- **Leaving.** When a session ends, each feed it streamed goes to another
  session (`release` returns them, the caller picks the peer that shows
  the highest head, one not barred if there is one), from our own seq, so
  nothing is lost. A feed that leaves the scope is dropped (`drop`).
  A streamer told to stop gets a WANT after `STOP_AFTER`, which an honest
  peer of any version reads as "nothing more".

With `once` off every session streams every feed it is behind on, as
before the plan: the flooding baseline `tangled sim --flood` compares
against.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field

SWITCH_AFTER = 2.0  # seconds of grace before a streamer must show its rate
FLOOR_RATE = 100.0  # messages a second a streamer owes after the grace, while not waiting on us
PROVEN = 256  # messages a probe delivers (unless its whole claim is fewer) to stream the feed
STOP_AFTER = (1 << 63) - 1  # a WANT after this seq asks for nothing: the subscription ends
FAILED_FOR = 30.0  # seconds a first strike bars a peer from streaming the feed
MAX_BAR = 3600.0  # the longest bar, however many strikes
STALE = 4  # ticks without a review (nobody ahead) after which debts start afresh
MAX_MARKS = 16  # heads remembered per debt (the newest takes later heads on)
MAX_STRIKES = 65_536  # (feed, peer) strikes remembered at most, the oldest forgotten


@dataclass(frozen=True, slots=True)
class PeerView:
    """What one session shows of a feed: its peer's head, the messages of the feed it
    delivered that we stored (this connection), and whether we are storing what it sent."""

    shown: int
    delivered: int = 0
    busy: bool = False


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
    """Heads shown that we lacked, oldest first, each as (when, seq, what we held then, the
    time excused by then): each is owed from its own moment, so a debt paid late never
    buys the next one a fresh grace, and one shown long ago is not forgiven by a later
    one. Time the one owing waited on us (`busy`) is `excused`."""

    checked: float
    marks: deque[tuple[float, int, int, float]] = field(default_factory=deque)
    excused: float = 0.0

    @property
    def target(self) -> int:
        return self.marks[-1][1] if self.marks else 0

    def owe(self, seq: int, have: int, now: float) -> None:
        """A head `seq` shown now, while we hold `have`."""
        if seq <= max(have, self.target):
            return
        if len(self.marks) >= MAX_MARKS:  # the newest mark takes the head on, keeping its time
            when, _seq, base, excused = self.marks.pop()
            self.marks.append((when, seq, base, excused))
        else:
            self.marks.append((now, seq, have, self.excused))

    def settle(self, have: int) -> None:
        """What we hold now pays every mark up to it."""
        while self.marks and self.marks[0][1] <= have:
            self.marks.popleft()

    def overdue(self, have: int, now: float, busy: bool, grace: float, rate: float) -> bool:
        """Whether what we hold falls short of the oldest unpaid mark: all of it, or at
        least `rate` messages a second after its `grace`, time waiting on us not counted."""
        if busy:
            self.excused += now - self.checked
        self.checked = now
        if not self.marks:
            return False
        when, seq, base, excused = self.marks[0]
        counted = now - when - (self.excused - excused) - grace
        return counted > 0 and have - base < min(seq - base, rate * counted)


def owing(seq: int, have: int, now: float) -> Debt:
    debt = Debt(now)
    debt.owe(seq, have, now)
    return debt


@dataclass(slots=True)
class Probe:
    """`session` asked for the feed beside the streamer, owing `debt`; `delivered` is what
    it had delivered of the feed then."""

    session: Hashable
    debt: Debt
    delivered: int


@dataclass(slots=True)
class _Feed:
    streamer: Hashable | None = None
    debt: Debt | None = None  # what the streamer's own peer showed and we lack
    outshown: Debt | None = None  # what other peers show beyond the streamer's own peer
    probes: list[Probe] = field(default_factory=list)
    reviewed: float = float("-inf")
    escalated: bool = False  # a probe failed while behind: ask every other peer at once
    paused: bool = False  # the streamer was told to stop while probes are asked

    @property
    def idle(self) -> bool:
        return self.streamer is None and not self.probes


@dataclass(slots=True)
class _Strikes:
    count: int
    until: float


def peer_key(session: Hashable) -> Hashable:
    """Whom a strike bars: the session's peer (`peer_key`), else the session itself."""
    return getattr(session, "peer_key", session)


@dataclass
class StreamPlan:
    """Feed -> the session that streams it, what it owes, who probes it; who is barred."""

    switch_after: float = SWITCH_AFTER
    floor_rate: float = FLOOR_RATE
    once: bool = True  # False: every session streams every feed (flooding, for comparison)
    sessions: set = field(default_factory=set)  # the live sessions, which may stream
    feeds: dict[bytes, _Feed] = field(default_factory=dict)
    strikes: dict[tuple[bytes, Hashable], _Strikes] = field(default_factory=dict)

    @property
    def tick(self) -> float:
        """How often the sessions review the feeds they are behind on."""
        return self.switch_after / 8

    def streamer(self, feed: bytes) -> Hashable | None:
        state = self.feeds.get(feed)
        return state.streamer if state else None

    def probers(self, feed: bytes) -> list[Hashable]:
        state = self.feeds.get(feed)
        return [probe.session for probe in state.probes] if state else []

    def probing(self, session: Hashable) -> list[bytes]:
        return [
            feed
            for feed, state in self.feeds.items()
            if any(probe.session is session for probe in state.probes)
        ]

    def barred(self, feed: bytes, session: Hashable, now: float) -> bool:
        strikes = self.strikes.get((feed, peer_key(session)))
        return strikes is not None and now < strikes.until

    def claim(self, feed: bytes, session: Hashable, now: float) -> bool:
        """`session` streams `feed` if nobody does; whether it does now."""
        if not self.once:
            return True
        if self.barred(feed, session, now):
            return False
        state = self.feeds.setdefault(feed, _Feed())
        if state.streamer is None:
            state.streamer, state.debt, state.outshown, state.paused = session, None, None, False
        return state.streamer is session

    def take(self, feed: bytes, session: Hashable) -> None:
        """`session` streams `feed` from now on (a hand-over: nobody is blamed)."""
        state = self.feeds.setdefault(feed, _Feed())
        state.streamer, state.debt, state.outshown, state.paused = session, None, None, False
        state.probes = [probe for probe in state.probes if probe.session is not session]

    def strike(self, feed: bytes, session: Hashable, now: float) -> None:
        """`session`'s peer failed `feed`: barred from it for longer at each strike."""
        key = (feed, peer_key(session))
        before = self.strikes.pop(key, None)
        count = before.count + 1 if before else 1
        self.strikes[key] = _Strikes(count, now + min(MAX_BAR, FAILED_FOR * 2 ** (count - 1)))
        while len(self.strikes) > MAX_STRIKES:
            del self.strikes[next(iter(self.strikes))]

    def due(self, feed: bytes, now: float, *, delivered: bool = False) -> bool:
        """Whether `review` would judge `feed` now (not judged this tick already)."""
        state = self.feeds.get(feed)
        return self.once and (state is None or delivered or now - state.reviewed >= self.tick / 2)

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
        sessions each review the feeds they are behind on) changes nothing, unless a probe
        just `delivered` (so the streamer it replaces stops at once)."""
        if not self.due(feed, now, delivered=delivered):
            return []
        state = self.feeds.get(feed)
        if state is None:
            state = self.feeds[feed] = _Feed()
        elif now - state.reviewed > STALE * self.tick:  # nobody was ahead meanwhile: what
            state.debt = state.outshown = None  # was shown then is shown afresh now
            state.escalated = False
        state.reviewed = now
        acts: list[Act] = []
        if state.streamer is not None and state.streamer not in views:
            state.streamer, state.debt, state.paused = None, None, False
        self._judge_probe(feed, state, have, now, views, acts)
        if state.streamer is not None:
            self._resume(state, have, views, acts)
        ahead = {s: view.shown for s, view in views.items() if view.shown > have}
        if not ahead:
            state.debt = state.outshown = None
            state.escalated = False
        elif state.streamer is not None:
            self._judge_streamer(feed, state, have, now, views, ahead, acts)
        elif not state.probes:
            best = self._best(feed, ahead, now)
            if best is not None:
                self.take(feed, best)
                acts.append(Stream(best))
        if state.idle:
            del self.feeds[feed]
        return [(act.session, act) for act in acts]

    def _judge_probe(self, feed, state: _Feed, have, now, views, acts: list[Act]) -> None:
        """A probe that proved its claim streams the feed (the streamer and the other probes
        stop, unblamed); one whose claim reached us another way ends; one past its grace
        and floor is struck."""
        proved = []
        for probe in list(state.probes):
            view = views.get(probe.session)
            if view is None:
                state.probes.remove(probe)
                continue
            sent = view.delivered - probe.delivered
            if sent and (have >= probe.debt.target or sent >= PROVEN):
                proved.append((sent, _order(probe.session), probe))
            elif have >= probe.debt.target:
                acts.append(Stop(probe.session))
                state.probes.remove(probe)
            elif probe.debt.overdue(have, now, view.busy, self.switch_after, self.floor_rate):
                self.strike(feed, probe.session, now)
                acts.append(Stop(probe.session))
                state.probes.remove(probe)
                state.escalated = True
        if proved:
            winner = max(proved, key=lambda entry: entry[:2])[2]
            others = [probe.session for probe in state.probes if probe is not winner]
            streamer = None if state.paused else state.streamer
            acts.extend(Stop(session) for session in [streamer, *others] if session)
            state.streamer, state.debt, state.outshown = winner.session, winner.debt, None
            state.probes, state.paused = [], False

    def _resume(self, state: _Feed, have, views, acts: list[Act]) -> None:
        """A streamer paused for probes streams again once they ended, or once its own
        peer shows what we lack (a probe that trickles holds nothing back)."""
        streamer = state.streamer
        if state.paused and (not state.probes or views[streamer].shown > have):
            acts.append(Stream(streamer))
            state.paused = False

    def _judge_streamer(self, feed, state: _Feed, have, now, views, ahead, acts) -> None:
        """A streamer past its grace and floor on what its own peer showed is struck, and
        every other peer showing more (not barred, not probing already) is asked at once:
        the first to prove its claim streams, so a crowd of silent claimers costs one grace,
        not one each. What anyone showed, unpaid by the same grace and floor, has the peer
        showing most asked beside the streamer, which is not struck (its peer may lack it);
        once such a probe failed, every other peer at once."""
        streamer = state.streamer
        busy = views[streamer].busy
        if state.debt is None:
            state.debt = Debt(now)
        if state.outshown is None:
            state.outshown = Debt(now)
        own, shown = state.debt, state.outshown
        own.settle(have)
        own.owe(ahead.get(streamer, 0), have, now)
        shown.settle(have)
        shown.owe(max(ahead.values()), have, now)
        probing = {probe.session for probe in state.probes}
        others = {s: h for s, h in ahead.items() if s is not streamer and s not in probing}
        free = sorted((s for s in others if not self.barred(feed, s, now)), key=_order)
        if own.overdue(have, now, busy, self.switch_after, self.floor_rate):
            self.strike(feed, streamer, now)
            if not free and not probing:
                state.debt = None  # nobody else to ask: it keeps the feed, owing afresh
                return
            if not state.paused:
                acts.append(Stop(streamer))
            state.streamer, state.debt, state.outshown, state.paused = None, None, None, False
        elif (
            shown.overdue(have, now, busy, self.switch_after, self.floor_rate)
            and not state.probes
            and free
        ):
            if not state.escalated:  # the likeliest first: honest catch-ups cost one copy
                free = [max(free, key=lambda s: (others[s], _order(s)))]
            if not state.paused:  # it has nothing they show: it rests while they are asked
                acts.append(Stop(streamer))
                state.paused = True
        else:
            return
        for session in free:
            debt = owing(others[session], have, now)
            state.probes.append(Probe(session, debt, views[session].delivered))
            acts.append(Stream(session))

    def _best(self, feed: bytes, heads: Mapping[Hashable, int], now: float) -> Hashable | None:
        """The session showing the highest head of `feed` among those not barred from it
        (the lowest peer key among equals, so every node picks alike)."""
        free = [s for s in heads if not self.barred(feed, s, now)]
        if not free:
            return None
        return max(free, key=lambda s: (heads[s], _order(s)))

    def release(self, session: Hashable) -> list[bytes]:
        """`session` ended: the feeds it streamed, now streamed by nobody (its probes end)."""
        streamed = []
        for feed in list(self.feeds):
            if self.feeds[feed].streamer is session:
                streamed.append(feed)
            self.drop(feed, session)
        return streamed

    def drop(self, feed: bytes, session: Hashable) -> None:
        """`session` no longer streams or probes `feed` (the feed left the scope)."""
        state = self.feeds.get(feed)
        if state is None:
            return
        state.probes = [probe for probe in state.probes if probe.session is not session]
        if state.streamer is session:
            state.streamer, state.debt, state.outshown, state.paused = None, None, None, False
        if state.idle:
            del self.feeds[feed]


def _order(session: Hashable) -> list[int]:
    """Among equal heads, the lowest peer key first (max picks the highest of this)."""
    key = peer_key(session)
    return [-byte for byte in key] if isinstance(key, bytes) else [0]
