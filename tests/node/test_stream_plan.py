"""The stream plan's rules on their own (node/gossip/stream_plan.py): a pure core driven on plain
virtual time, with honest and adversarial streamers; and the log of heads that moved
(node/service/head_changes.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from tanglenode.node.gossip.stream_plan import (
    FAILED_FOR,
    SWITCH_AFTER,
    PeerView,
    Stop,
    Stream,
    StreamPlan,
)
from tanglenode.node.service.head_changes import HeadChanges

F = b"f" * 32


def test_the_first_claim_streams_and_a_barred_peer_cannot_claim():
    plan = StreamPlan()
    assert plan.claim(F, "a", 0) and not plan.claim(F, "b", 0) and plan.claim(F, "a", 0)
    assert plan.release("a") == [F] and plan.streamer(F) is None
    plan.strike(F, "b", 0)
    assert not plan.claim(F, "b", 1) and plan.claim(F, "c", 1)


def until_acts(plan: StreamPlan, have: int, views: dict, now: float = 0.0):
    """Review every tick until the plan acts: when, and what it does."""
    while not (acts := plan.review(F, have, now, views)):
        now += plan.tick
        assert now < 600, "the plan never acted"
    return now, acts


def test_progress_does_not_restart_the_wait_a_trickling_streamer_is_raced_and_loses():
    plan = StreamPlan()
    plan.claim(F, "trickler", 0)
    have, now, acts = 0, 0.0, []
    while not acts:  # it shows 200 and sends one every 1.9 s; an honest peer shows 200
        now += plan.tick
        have = int(now / 1.9)
        views = {"trickler": PeerView(200, have, have), "honest": PeerView(200)}
        acts = plan.review(F, have, now, views)
    assert now <= SWITCH_AFTER + 2 * plan.tick
    assert acts == [("honest", Stream("honest"))] and plan.probers(F) == ["honest"]
    views = {"trickler": PeerView(200, have, have), "honest": PeerView(200, 200 - have, 200)}
    assert plan.review(F, 200, now + plan.tick, views) == [("trickler", Stop("trickler"))]
    assert plan.streamer(F) == "honest" and not plan.strikes  # it sent something: not struck


def test_a_streamer_that_sends_nothing_for_a_grace_is_struck_and_every_other_peer_asked():
    plan = StreamPlan()
    plan.claim(F, "silent", 0)
    views = {"silent": PeerView(50), "a": PeerView(50), "b": PeerView(40), "c": PeerView(0)}
    when, acts = until_acts(plan, 0, views)
    assert SWITCH_AFTER <= when <= SWITCH_AFTER + plan.tick
    assert acts[0] == ("silent", Stop("silent")) and plan.barred(F, "silent", when)
    assert sorted(name for name, act in acts[1:] if isinstance(act, Stream)) == ["a", "b"]


def test_a_slow_sole_holder_is_never_struck_and_a_barred_sole_holder_still_streams():
    plan = StreamPlan()
    plan.claim(F, "slow", 0)
    for step in range(1, 2400):  # 300 s at 40 messages a second, nobody else has it
        now = step * plan.tick
        have = int(now * 40)
        assert plan.review(F, have, now, {"slow": PeerView(50_000, have, have)}) == []
    assert plan.streamer(F) == "slow" and not plan.strikes
    plan = StreamPlan()
    plan.strike(F, "only", 0)
    assert not plan.claim(F, "only", 1)
    assert plan.review(F, 0, 1.0, {"only": PeerView(10)}) == [("only", Stream("only"))]


def test_two_slow_honest_peers_never_leave_the_feed_idle_nor_strike_each_other():
    plan = StreamPlan()
    plan.claim(F, "a", 0)
    have, delivered, streaming = 0, {"a": 0, "b": 0}, {"a"}
    for step in range(1, 4800):  # 600 s; each delivers this feed at 40 a second
        now = step * plan.tick
        for name in sorted(streaming):
            sent = 10 if step % 1 == 0 else 0
            fresh = max(0, min(sent, 24_000 - have))
            delivered[name] += fresh
            have += fresh
        views = {n: PeerView(24_000, delivered[n], delivered[n]) for n in ("a", "b")}
        for name, act in plan.review(F, have, now, views):
            (streaming.add if isinstance(act, Stream) else streaming.discard)(name)
        assert streaming, f"nobody streams at {now}"
    assert have >= 24_000 * 0.95 and not plan.strikes


def test_a_claim_on_a_quiet_feed_is_believed_only_when_the_claimer_delivers():
    plan = StreamPlan()
    plan.claim(F, "honest", 0)
    quiet = {"honest": PeerView(10), "liar": PeerView(1_010)}
    asked, acts = until_acts(plan, 10, quiet)
    # Asked beside the streamer, which has nothing more and rests meanwhile.
    assert acts == [("honest", Stop("honest")), ("liar", Stream("liar"))]
    assert SWITCH_AFTER <= asked <= SWITCH_AFTER + plan.tick
    assert plan.streamer(F) == "honest" and plan.probers(F) == ["liar"]
    ended, acts = until_acts(plan, 10, quiet, asked + plan.tick)
    assert acts == [("liar", Stop("liar")), ("honest", Stream("honest"))]
    assert plan.barred(F, "liar", ended) and ended <= asked + SWITCH_AFTER + plan.tick
    assert plan.streamer(F) == "honest" and not plan.probers(F)


def test_a_resting_streamer_whose_peer_shows_something_new_streams_again_at_once():
    plan = StreamPlan()
    plan.claim(F, "honest", 0)
    asked, _acts = until_acts(plan, 10, {"honest": PeerView(10), "liar": PeerView(1_010)})
    news = {"honest": PeerView(11), "liar": PeerView(1_010)}  # its peer got a new message
    assert plan.review(F, 10, asked + plan.tick, news) == [("honest", Stream("honest"))]
    assert plan.probers(F) == ["liar"]  # the challenge goes on, judged on its own


def test_a_claimer_that_delivers_streams_and_the_resting_streamer_stays_stopped():
    plan = StreamPlan()
    plan.claim(F, "honest", 0)
    views = {"honest": PeerView(10), "newer": PeerView(12)}
    asked, acts = until_acts(plan, 10, views)
    assert acts == [("honest", Stop("honest")), ("newer", Stream("newer"))]
    views = {"honest": PeerView(10), "newer": PeerView(12, 2, 2)}
    assert plan.review(F, 12, asked + plan.tick, views) == []
    assert plan.streamer(F) == "newer" and not plan.strikes


def test_a_streamer_whose_deliveries_come_late_is_raced():
    plan = StreamPlan()
    plan.claim(F, "late", 0)
    step, raced = 0, None
    while raced is None and step < 400:  # a message every 2 s; it relays each 1.9 s late
        step += 1
        now = step * plan.tick
        published = int(now / 2.0)
        have = int(max(0.0, now - 1.9) / 2.0)
        views = {"late": PeerView(have, have, have), "quick": PeerView(published)}
        if acts := plan.review(F, have, now, views):
            raced = now
            assert ("quick", Stream("quick")) in acts
    assert raced is not None and raced < 20  # never a head two graces old: still raced


def test_a_record_of_strikes_survives_a_flood_of_strikes_on_throwaway_feeds():
    plan = StreamPlan()
    for n in range(7):
        plan.strike(F, "liar", n)
    for n in range(70_000):
        plan.strike(n.to_bytes(32, "big"), "liar", 10.0)
    assert plan.barred(F, "liar", 1_000.0) and len(plan.strikes) <= 65_536


def test_each_strike_bars_a_peer_twice_as_long_and_reconnecting_does_not_clear_it():
    @dataclass(frozen=True)
    class Session:
        peer_key: bytes
        n: int

    plan = StreamPlan()
    liar = Session(b"liar", 1)
    plan.strike(F, liar, 0)
    assert plan.barred(F, Session(b"liar", 2), FAILED_FOR - 1)  # a new connection, same peer
    assert not plan.barred(F, liar, FAILED_FOR)
    plan.strike(F, liar, FAILED_FOR)
    assert plan.barred(F, liar, FAILED_FOR + 2 * FAILED_FOR - 1)
    assert not plan.barred(F, liar, FAILED_FOR + 2 * FAILED_FOR)


def test_flooding_streams_every_feed_from_every_session_and_never_switches():
    plan = StreamPlan(once=False)
    assert plan.claim(F, "a", 0) and plan.claim(F, "b", 0)
    assert plan.review(F, 0, 100.0, {"a": PeerView(5), "b": PeerView(9)}) == []


# -- the plan on virtual time against adversarial streamers --------------------------------

DT = 0.05  # the simulation's step


@dataclass
class Peer:
    """A simulated peer of one feed: what it holds, what it shows, how it sends."""

    name: str
    kind: str  # honest, silent, trickle, liar, inching, floor
    holds: int
    latency: float = 0.05  # one way, honest peers
    rate: float = 4_000.0  # messages a second, honest peers
    subscribed: float | None = None  # since when it streams (or probes) to us
    delivered: int = 0
    sent_at: float = 0.0

    def shows(self, have: int) -> int:
        if self.kind == "liar":
            return self.holds + 1_000
        if self.kind == "inching":
            return min(self.holds, have + 1)
        return self.holds

    def sends(self, have: int, now: float) -> int:
        """How many of the next messages it sends us in this step."""
        if self.subscribed is None or have >= self.holds or self.kind == "silent":
            return 0
        if self.kind in ("honest", "liar"):
            if now - self.subscribed < 2 * self.latency:
                return 0
            return min(self.holds - have, max(1, int(self.rate * DT)))
        if self.kind == "floor":  # nothing for the grace, then a hundred a second
            return 5 if now - self.subscribed >= SWITCH_AFTER else 0
        if now - self.sent_at >= 1.9:  # trickle, inching: one every 1.9 s
            self.sent_at = now
            return 1
        return 0


@dataclass
class Run:
    plan: StreamPlan
    peers: list[Peer]
    have: int = 0
    now: float = 0.0
    copies: int = 0
    log: list = field(default_factory=list)

    def views(self) -> dict[str, PeerView]:
        return {p.name: PeerView(p.shows(self.have), p.delivered, p.delivered) for p in self.peers}

    def carry_out(self, acts) -> None:
        by_name = {p.name: p for p in self.peers}
        for name, act in acts:
            peer = by_name[name]
            peer.subscribed = self.now if isinstance(act, Stream) else None
            self.log.append((self.now, name, type(act).__name__))

    def until_done(self, want: int, limit: float) -> float:
        """Claims in the peers' order at time 0, then steps and reviews; when we hold
        `want` (or the limit passed)."""
        for peer in self.peers:
            if peer.shows(0) > 0 and self.plan.claim(F, peer.name, 0.0):
                peer.subscribed = 0.0
        next_review = 0.0
        while self.have < want and self.now < limit:
            self.now = round(self.now + DT, 6)
            start = self.have  # every subscribed peer sends what follows it: a copy each
            for peer in self.peers:
                sent = peer.sends(start, self.now)
                new = max(0, start + sent - self.have)
                peer.delivered += new
                self.have += new
                self.copies += sent
            if self.now >= next_review:
                next_review = self.now + self.plan.tick
                self.carry_out(self.plan.review(F, self.have, self.now, self.views()))
        return self.now


adversary = st.sampled_from(["silent", "trickle", "liar", "inching", "floor"])


@settings(max_examples=60, deadline=None)
@given(
    total=st.integers(1, 3_000),
    adversaries=st.lists(adversary, min_size=1, max_size=4),
    honest_at=st.integers(0, 4),
    latency=st.sampled_from([0.01, 0.05, 0.1]),
)
def test_an_honest_peer_delivers_within_the_grace_whatever_the_adversaries_claim(
    total, adversaries, honest_at, latency
):
    peers = [Peer(f"bad{n}-{kind}", kind, total) for n, kind in enumerate(adversaries)]
    honest = Peer("honest", "honest", total, latency=latency)
    peers.insert(min(honest_at, len(peers)), honest)  # claims in this order
    plan = StreamPlan()
    run = Run(plan, peers)
    done = run.until_done(total, limit=60.0)
    bound = 2 * SWITCH_AFTER + 4 * plan.tick + 4 * latency + total / honest.rate
    assert run.have >= total and done <= bound + DT, (done, bound, run.log)
    assert not plan.barred(F, "honest", done)


@settings(max_examples=40, deadline=None)
@given(
    total=st.integers(1, 3_000),
    count=st.integers(1, 5),
    latency=st.sampled_from([0.01, 0.05, 0.1]),
)
def test_among_honest_peers_only_the_first_streams_with_no_wait_and_no_strike(
    total, count, latency
):
    peers = [Peer(f"honest{n}", "honest", total, latency=latency) for n in range(count)]
    plan = StreamPlan()
    run = Run(plan, peers)
    done = run.until_done(total, limit=60.0)
    assert done <= 2 * latency + total / peers[0].rate + 2 * DT  # about two round trips
    assert not plan.strikes and all(p.delivered == 0 for p in peers[1:])
    assert run.copies == total  # each message once


def test_a_slow_honest_streamer_beside_a_fast_one_hands_over_unblamed():
    slow = Peer("slow", "honest", 6_000, rate=100.0)  # under PROVEN a grace
    plan = StreamPlan()
    run = Run(plan, [slow, Peer("fast", "honest", 6_000)])
    done = run.until_done(6_000, limit=60.0)
    assert plan.streamer(F) == "fast" and not plan.strikes and done < 2 * SWITCH_AFTER + 3


def test_a_cursor_sees_each_head_that_moved_after_it_once():
    heads = HeadChanges(keep=4)
    start = heads.cursor()
    heads.moved(b"a")
    heads.moved(b"b")
    middle = heads.cursor()
    heads.moved(b"a")
    assert heads.since(start) == {b"a", b"b"}
    assert heads.since(middle) == {b"a"}
    assert heads.since(heads.cursor()) == set()
    assert heads.since(None) is None  # never looked: every feed


def test_a_cursor_too_old_or_from_before_a_reset_reads_every_feed():
    heads = HeadChanges(keep=2)
    old = heads.cursor()
    for feed in (b"a", b"b", b"c", b"d", b"e"):
        heads.moved(feed)
    assert heads.since(old) is None  # the log no longer reaches back to it
    recent = heads.cursor()
    heads.moved(b"f")
    assert heads.since(recent) == {b"f"}
    heads.reset()  # the whole clock was read again
    assert heads.since(recent) is None
    assert heads.since(heads.cursor()) == set()


def test_a_peer_struck_over_and_over_is_barred_for_the_longest_bar_never_an_overflow():
    from tanglenode.node.gossip.stream_plan import MAX_BAR, peer_key

    plan = StreamPlan()
    session = object()
    for count in range(1, 3000):
        plan.strike(F, session, float(count))
    barred = plan.strikes[(F, peer_key(session))]
    assert barred.count == 2999 and barred.until == 2999.0 + MAX_BAR
