"""The gossip session's decisions on their own (node/gossip/policy.py): a sans-IO machine
driven with plain data (what the node holds as a `Held`, the peer's clock as dicts, ingest
results as values) on a fake clock: no network, no store, no trio; and the dealing of
witnesses (node/gossip/witness_fetch.py) within the wire's bounds."""

from __future__ import annotations

import pytest

from tanglenode.node.gossip.policy import (
    FULL_LOOK,
    CheckProof,
    Drop,
    Elsewhere,
    GossipPolicy,
    Grant,
    Held,
    Refused,
    SendClock,
    SendEvidence,
    SendWant,
    Store,
    Wake,
)
from tanglenode.node.gossip.proof_rate import REFUSED, ProofRate
from tanglenode.node.gossip.stream_plan import STOP_AFTER, SWITCH_AFTER, StreamPlan
from tanglenode.node.gossip.witness_fetch import ASK_WAIT, PATIENCE, WitnessFetch
from tanglenode.protocol.errors import Reason
from tanglenode.protocol.evidence import InvalidProof
from tanglenode.protocol.gossip import DEFAULT_MAX_FEEDS, MAX_ASK, MAX_ASKING, GossipConnection
from tanglenode.storage.feeds.ingest import IngestResult, Outcome
from tests.factories import Feed

F, G = b"f" * 32, b"g" * 32
TAG, OTHER = b"t" * 16, b"o" * 16


def policies(*names: str, held: Held | None = None, **options) -> list[GossipPolicy]:
    """One policy per named peer, sharing the node's holdings and stream plan, each its own
    owner (what `Elsewhere` names)."""
    held = held or Held()
    plan = StreamPlan(salt=b"us")
    made = []
    for name in names:
        policy = GossipPolicy(held, plan, name.encode(), **options)
        policy.owner = name
        plan.sessions.add(policy)
        made.append(policy)
    return made


def wants(actions: list) -> list[dict[bytes, int]]:
    return [action.wants for action in actions if isinstance(action, SendWant)]


def elsewhere(actions: list) -> dict[str, list[dict[bytes, int]]]:
    """Owner -> the WANTs sent at that other session."""
    out: dict[str, list] = {}
    for action in actions:
        if isinstance(action, Elsewhere):
            out.setdefault(action.policy.owner, []).extend(wants(action.actions))
    return out


# -- the peer's clock and what we ask ------------------------------------------------------


def test_the_first_peer_ahead_streams_a_feed_and_the_second_only_reads_its_heads():
    held = Held(clock={F: 3}, tags={F: TAG})
    a, b = policies("a", "b", held=held)
    assert wants(a.peer_clock_changed({F: (10, OTHER)}, 0.0)) == [{F: 3}]
    assert wants(b.peer_clock_changed({F: (12, OTHER)}, 0.0)) == []
    assert a.plan.streamer(F) is a and a.view(F).shown == 10
    # A CLOCK note with a higher head asks nothing more: the subscription pushes the rest.
    assert wants(a.peer_clock_changed({F: (20, OTHER)}, 1.0)) == []


def test_a_head_at_our_seq_with_another_tag_asks_for_its_message_there():
    held = Held(clock={F: 5}, tags={F: TAG})
    (a,) = policies("a", held=held)
    assert wants(a.peer_clock_changed({F: (5, OTHER)}, 0.0)) == [{F: 4}]
    assert a.plan.streamer(F) is None  # a fork want claims nothing


def test_a_suspected_fork_the_peer_reaches_is_asked_from_its_seq_unless_it_holds_ours():
    held = Held(clock={F: 9, G: 4}, tags={F: TAG, G: TAG}, suspects={F: 6, G: 4}, own_feed=G)
    (a,) = policies("a", held=held)  # G is our own: a head equal to ours is not streamed
    assert wants(a.peer_clock_changed({F: (7, OTHER), G: (4, TAG)}, 0.0)) == [{F: 5}]


def test_feeds_not_carried_and_invalid_feeds_held_to_their_end_are_not_asked_for():
    held = Held(clock={G: 4}, tags={G: TAG}, invalid={G: 5}, carried={G})
    (a,) = policies("a", held=held)
    assert wants(a.peer_clock_changed({F: (3, TAG), G: (9, OTHER)}, 0.0)) == []


def test_a_clock_past_the_feed_bound_drops_the_peer_and_a_known_proof_is_due():
    (a,) = policies("a", max_feeds=2)
    assert a.peer_clock_changed({F: (1, TAG), G: (1, TAG)}, 0.0) is not None
    three = {bytes([n]) * 32: (1, TAG) for n in range(3)}
    assert isinstance(a.peer_clock_changed(three, 0.0)[0], Drop)
    held = Held(clock={F: 2}, tags={F: TAG}, invalid={F: 3})
    (b,) = policies("b", held=held, max_feeds=DEFAULT_MAX_FEEDS)
    assert Wake() in b.peer_clock_changed({F: (1, TAG)}, 0.0) and b.proofs_due == {F}


def test_each_feed_is_wanted_once_and_again_only_to_go_back():
    (a,) = policies("a")
    assert a.want({F: 5}) == [SendWant({F: 5})]
    assert a.want({F: 5}) == [] and a.want({F: 7}) == []
    assert a.want({F: 2}) == [SendWant({F: 2})]


# -- stalls: the plan's judgement carried out ----------------------------------------------


def test_a_silent_streamer_is_stopped_and_struck_and_the_feed_goes_to_the_other_peer():
    held = Held(clock={F: 0}, tags={})
    silent, honest = policies("silent", "honest", held=held)
    silent.peer_clock_changed({F: (50, TAG)}, 0.0)
    honest.peer_clock_changed({F: (50, TAG)}, 0.0)
    now, moved = 0.0, []
    while not moved:  # each session ticks; nothing arrives from the streamer
        now += silent.plan.tick
        assert now < 10 * SWITCH_AFTER, "the stall was never switched"
        for policy in (silent, honest):
            actions, busy = policy.tick(now)
            assert busy
            moved += [(policy.owner, want) for want in wants(actions)]
            moved += [(owner, w) for owner, ws in elsewhere(actions).items() for w in ws]
    assert now <= SWITCH_AFTER + 2 * silent.plan.tick
    assert sorted(moved) == [("honest", {F: 0}), ("silent", {F: STOP_AFTER})]
    assert silent.plan.barred(F, silent, now) and silent.asked[F] == STOP_AFTER


def test_a_challenger_that_delivers_takes_the_feed_at_once_when_its_batch_is_stored():
    feed = Feed("author")
    message, k = feed.append({"n": 0}), feed.public
    held = Held(clock={k: 0}, tags={})
    slow, fast = policies("slow", "fast", held=held)
    slow.peer_clock_changed({k: (300, TAG)}, 0.0)
    fast.peer_clock_changed({k: (300, TAG)}, 0.0)
    now, raced = 0.0, {}
    while not raced:  # the streamer trickles: one message every 1.9 s
        now += slow.plan.tick
        assert now < 10 * SWITCH_AFTER, "the trickler was never raced"
        held.clock[k] = slow.delivered[k] = slow.accepted = int(now / 1.9)
        for policy in (slow, fast):
            actions, _busy = policy.tick(now)
            raced.update(elsewhere(actions))
            if wants(actions):
                raced[policy.owner] = wants(actions)
    assert raced == {"fast": [{k: held.clock[k]}]} and slow.plan.probers(k) == [fast]
    accepted = [IngestResult(Outcome.ACCEPTED, message.id, message=message)] * 256
    actions = fast.stored(256, accepted, now + 0.01)  # it proves its claim: it streams
    assert Grant(256) in actions and slow.plan.streamer(k) is fast
    assert elsewhere(actions) == {"slow": [{k: STOP_AFTER}]}


def test_a_session_that_ends_hands_its_feeds_to_the_peer_showing_the_highest_head():
    held = Held(clock={F: 4}, tags={F: TAG})
    a, b, c = policies("a", "b", "c", held=held)
    a.peer_clock_changed({F: (9, OTHER)}, 0.0)
    b.peer_clock_changed({F: (7, OTHER)}, 0.0)
    c.peer_clock_changed({F: (8, OTHER)}, 0.0)
    a.plan.sessions.discard(a)
    assert elsewhere(a.ended(1.0)) == {"c": [{F: 4}]} and a.plan.streamer(F) is c


def test_a_peer_showing_nothing_ahead_has_nothing_to_judge_until_the_full_look():
    held = Held(clock={F: 4}, tags={F: TAG})
    (a,) = policies("a", held=held)
    a.peer_clock_changed({F: (4, TAG)}, 0.0)
    assert a.tick(0.0) == ([], False)
    a.peer_clock[F] = 6  # a proof cut nothing, but the clock moved unannounced
    assert a.tick(1.0) == ([], False)  # not looked for before FULL_LOOK
    assert a.tick(FULL_LOOK)[1]


# -- credit, messages and proofs -----------------------------------------------------------


def test_messages_of_feeds_not_carried_drop_the_peer_unless_asked_for_and_their_credit_returns():
    carried, dropped = Feed("carried"), Feed("dropped")
    for feed in (carried, dropped):
        feed.append({"n": 0})
    held = Held(carried={carried.public, dropped.public})
    (a,) = policies("a", held=held)
    raws = [carried.messages[0].raw, dropped.messages[0].raw]
    assert a.messages(raws) == [Store(raws)]
    a.want({dropped.public: 0})
    held.carried = {carried.public}  # the scope left it out after we asked
    assert a.messages(raws) == [Grant(1), Store(raws[:1])]
    (b,) = policies("b", held=held)
    (drop,) = b.messages(raws)
    assert isinstance(drop, Drop) and "never asked for" in drop.reason


def test_a_stored_batch_grants_its_credit_back_and_an_invalid_message_drops_the_peer():
    feed = Feed("x")
    message = feed.append({"n": 0})
    (a,) = policies("a")
    ok = IngestResult(Outcome.ACCEPTED, message.id, message=message)
    assert a.stored(3, [ok], 0.0) == [Grant(3)]
    assert a.delivered == {feed.public: 1} and a.accepted == 1
    bad = IngestResult(Outcome.REJECTED, message.id, Reason.BAD_SIGNATURE, "no", message)
    (drop,) = a.stored(1, [bad], 0.0)
    assert isinstance(drop, Drop) and "invalid message" in drop.reason


def test_a_chain_mismatch_asks_below_and_forgives_the_rest_of_that_branch():
    feed = Feed("x")
    for n in range(6):
        feed.append({"n": n})
    (a,) = policies("a")
    m4, m5 = feed.messages[3], feed.messages[4]
    parted = IngestResult(Outcome.REJECTED, m4.id, Reason.CHAIN_MISMATCH, "", m4)
    assert a.stored(1, [parted], 0.0) == [Grant(1), SendWant({feed.public: 2})]
    after = IngestResult(Outcome.REJECTED, m5.id, Reason.MISSING_PREVIOUS, "", m5)
    assert a.stored(1, [after], 0.0) == [Grant(1)]


def test_two_messages_at_one_seq_in_one_connection_drop_the_peer():
    one, two = Feed("x"), Feed("x")
    first, second = one.append({"n": 0}), two.append({"n": 1})
    (a,) = policies("a")
    fork = IngestResult(Outcome.FORK, first.id, message=first)
    assert a.stored(1, [fork], 0.0) == [Grant(1)]
    (drop,) = a.stored(1, [IngestResult(Outcome.FORK, second.id, message=second)], 0.0)
    assert isinstance(drop, Drop) and "two messages for seq 1" in drop.reason


def test_proofs_within_the_rate_are_checked_and_past_it_refused_with_their_credit_back():
    (a,) = policies("a", proof_rate=ProofRate(rate=0.5, burst=2, now=0.0))
    proof = [b"one", b"two"]
    assert a.proof(proof, 0.0) == [CheckProof(proof)] == a.proof(proof, 0.0)
    refused = a.proof(proof, 0.1)
    assert isinstance(refused[0], Refused) and refused[0].first and refused[1] == Grant(2)
    assert refused[0].reason.startswith(REFUSED)
    assert not a.proof(proof, 0.2)[0].first  # logged once a connection
    assert a.proof(proof, 2.5) == [CheckProof(proof)]  # a token came back at 0.5 a second


def test_proofs_taken_are_never_echoed_and_one_that_proves_nothing_drops_the_peer():
    mine, other = Feed("mine"), Feed("other")
    pm = [mine.append({"n": 0}).raw, Feed("mine").append({"n": 1}).raw]
    po = [other.append({"n": 0}).raw, Feed("other").append({"n": 1}).raw]
    (a,) = policies("a", held=Held(carried={mine.public}))
    assert a.proofs_taken([pm, po]) == [pm] and len(a.proofs_sent) == 2
    assert a.proofs_stored([pm, po], [None]) == [Grant(4)]
    grant, drop = a.proofs_stored([pm], [InvalidProof("no")])
    assert grant == Grant(2) and isinstance(drop, Drop)


def test_a_proof_goes_once_to_a_peer_holding_its_feed_and_waits_for_credit():
    feed = Feed("forked")
    proof = [feed.append({"n": 0}), Feed("forked").append({"n": 1})]
    held = Held(clock={feed.public: 1}, tags={feed.public: TAG})
    (a,) = policies("a", held=held)
    assert a.offer_proof(proof, 10, about=feed.public) == []  # the peer holds nothing of it
    a.peer_clock_changed({feed.public: (1, OTHER)}, 0.0)
    assert a.offer_proof(proof, 1, about=feed.public) is None  # two messages, one credit
    (sent,) = a.offer_proof(proof, 2, about=feed.public)
    assert isinstance(sent, SendEvidence) and sent.raws == [m.raw for m in proof]
    assert a.offer_proof(proof, 2) == []  # it had it from us
    (b,) = policies("b", held=held)
    b.proofs_taken([[m.raw for m in proof]])  # it sent us this one: never echoed
    assert b.offer_proof(proof, 2) == []


def test_subscriptions_lack_what_we_hold_until_sent_and_a_new_want_wins_over_a_batch():
    held = Held(clock={F: 5, G: 2}, tags={F: TAG, G: TAG})
    (a,) = policies("a", held=held)
    assert not a.lacking()
    a.peer_wants({F: 0, G: 2})
    assert a.lacking()
    asked = dict(a.subscriptions)
    a.peer_wants({F: 1})  # while the batch was read
    a.sent({F: 5}, asked)
    assert a.subscriptions[F] == 1 and a.lacking()
    a.sent({F: 5}, dict(a.subscriptions))
    assert not a.lacking()


# -- what we tell the peer -----------------------------------------------------------------


def test_a_head_is_told_once_and_not_when_the_peer_told_us_the_same_but_the_first_of_a_feed():
    held = Held(clock={F: 3, G: 2}, tags={F: TAG, G: TAG})
    (a,) = policies("a", held=held)
    ours = a.hello()
    assert ours == {F: (3, TAG), G: (2, TAG)}
    a.reconciled(ours, {}, 0.0)  # the walk ended: the peer knows our clock, it holds nothing
    a.peer_clock_changed({F: (5, OTHER)}, 0.0)
    held.clock[F], held.tags[F] = 5, OTHER  # we caught up to the head it told us
    held.clock[b"n" * 32], held.tags[b"n" * 32] = 1, TAG  # a feed new to us
    held.clock[G] = 3
    assert a.clock_changes(None) == [SendClock({b"n" * 32: (1, TAG), G: (3, TAG)})]
    assert a.clock_changes(None) == []


def test_a_head_the_peer_sent_us_is_not_told_back_to_it():
    carol = Feed("carol")
    messages = [carol.append({"n": n}) for n in range(3)]
    held = Held(clock={carol.public: 1}, tags={carol.public: messages[0].id[:16]})
    (a,) = policies("a", held=held)
    a.reconciled(a.hello(), {}, 0.0)  # it knows we hold carol's first
    a.stored(1, [IngestResult(Outcome.ACCEPTED, messages[1].id, message=messages[1])], 0.0)
    held.clock[carol.public], held.tags[carol.public] = 2, messages[1].id[:16]
    assert a.peer_clock[carol.public] == 2  # it holds what it sent
    assert a.clock_changes(None) == []
    held.clock[carol.public], held.tags[carol.public] = 3, messages[2].id[:16]  # not from it
    assert a.clock_changes(None) == [SendClock({carol.public: (3, messages[2].id[:16])})]


def test_a_peer_that_does_not_walk_hears_every_head_and_a_walked_one_only_what_moved():
    held = Held(clock={F: 3, G: 2}, tags={F: TAG, G: TAG})
    legacy, walked = policies("a", "b", held=held)
    legacy.hello()
    assert legacy.clock_changes(None) == [SendClock({F: (3, TAG), G: (2, TAG)})]
    ours = walked.hello()
    actions = walked.reconciled(ours, {F: (5, OTHER), G: (2, TAG)}, 0.0)
    # as a HELLO's clock: each feed streamed from our head (F: it is ahead; G: live)
    assert wants(actions) == [{F: 3, G: 2}]
    assert walked.peer_clock == {F: 5, G: 2}
    assert walked.clock_changes(None) == []  # it knows our clock already
    held.clock[G] = 3
    assert walked.clock_changes(None) == [SendClock({G: (3, TAG)})]


def test_a_head_told_in_clock_before_the_walk_ended_stands():
    held = Held(clock={F: 3}, tags={F: TAG})
    (a,) = policies("a", held=held)
    ours = a.hello()
    a.peer_clock_changed({F: (6, OTHER)}, 0.0)
    a.reconciled(ours, {F: (4, TAG)}, 0.0)
    assert a.peer_clock[F] == 6 and a.peer_tags[F] == OTHER


def test_a_feed_leaving_the_scope_is_stopped_and_one_coming_back_asked_again():
    held = Held(clock={F: 2, G: 1}, tags={F: TAG, G: TAG})
    (a,) = policies("a", held=held)
    a.peer_clock_changed({F: (5, OTHER), G: (1, TAG)}, 0.0)
    a.peer_wants({G: 0})
    held.carried = {G}
    assert wants(a.rescoped(1.0)) == [{F: STOP_AFTER}, {G: 1}] and a.plan.streamer(F) is None
    assert a.subscriptions == {G: 0}
    held.carried = None
    assert wants(a.rescoped(2.0)) == [{F: 2, G: 1}] and a.plan.streamer(F) is a


@pytest.mark.parametrize("hello", [True, False])
def test_the_peer_clock_wakes_the_writer_for_its_credit_or_a_due_proof(hello):
    (a,) = policies("a")
    assert (Wake() in a.peer_clock_changed({F: (1, TAG)}, 0.0, hello=hello)) is hello


# -- witnesses: who is asked, and when they are given up -----------------------------------


def entries(count: int) -> list:
    return [(F, n, bytes([n % 256, n // 256]) * 8) for n in range(1, count + 1)]


def test_each_witness_is_asked_of_one_session_at_a_time_and_never_twice_of_one():
    fetch = WitnessFetch()
    wanted = entries(3)
    fetch.update(1, wanted, 0.0)
    gone, candidates = fetch.deal("a", ["a", "b"], 0.0)
    assert gone == [] and candidates == wanted
    fetch.asked("a", candidates, 0.0)
    assert fetch.deal("b", ["a", "b"], 1.0) == ([], [])  # asked of a meanwhile
    fetch.unheld("a", wanted[:1])
    assert fetch.deal("b", ["a", "b"], 1.0)[1] == wanted[:1]
    assert wanted[0] not in fetch.candidates("a")  # a refused it: never asked again
    fetch.answered("a", wanted[1:2])
    assert fetch.deal("b", ["a", "b"], ASK_WAIT + 0.5)[1] == [wanted[0], wanted[2]]


def test_a_witness_is_given_up_once_every_session_refused_it_or_patience_ran_out():
    fetch = WitnessFetch()
    wanted = entries(2)
    fetch.update(1, wanted, 0.0)
    assert fetch.deal("a", [], 100.0)[0] == []  # nobody connected: nothing given up
    fetch.asked("a", wanted[:1], 0.0)
    fetch.unheld("a", wanted[:1])
    assert fetch.deal("a", ["a"], 1.0)[0] == wanted[:1]  # every session refused it
    assert fetch.deal("b", ["a", "b"], 1.0)[0] == []
    fetch.asked("b", wanted, 1.0)  # b never answers: refused after the ask wait
    assert fetch.deal("a", ["a", "b"], 1.0 + ASK_WAIT + 0.1)[0] == wanted[:1]
    assert fetch.deal("a", ["a", "b"], PATIENCE + 0.1)[0] == wanted
    fetch.update(2, wanted[1:], PATIENCE + 0.2)  # the store gave the first up
    assert wanted[0] not in fetch.first_seen


def test_asks_stay_within_the_wire_bounds_and_never_share_a_tag():
    connection = GossipConnection(64)
    wanted = entries(400)
    twin = (G, 1, wanted[0][2])  # another message named by an ask's tag
    chosen = connection.may_ask([*wanted[:10], twin])
    assert len(chosen) == 10 and twin not in chosen
    asked = 0
    while batch := connection.may_ask(wanted[asked:]):
        assert len(batch) <= MAX_ASK
        connection.ask(batch)
        asked += len(batch)
    assert asked == MAX_ASKING
