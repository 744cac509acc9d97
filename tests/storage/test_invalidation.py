"""Forks make feeds invalid the same way on every node, and a forker frames nobody
(docs/PROCESSING.md)."""

import random

import pytest

from tanglenode.protocol.errors import InvalidMessage, Reason
from tanglenode.protocol.evidence import InvalidProof, ProofKind, check_proof
from tanglenode.protocol.message import TangleLink
from tanglenode.storage.feeds.ingest import Outcome
from tanglenode.storage.views.timelines import SPACETIME
from tests.factories import Feed, break_signature, keypair


def state(store):
    """Everything that must agree between honest nodes."""
    timelines = {
        name: store.timelines.timeline(name) for name, _root, _tangle in store.timelines.held()
    }
    joined = {  # the joined order, where the store keeps that optional view
        name: store.timelines.timeline(store.timelines.timeline_name(root, tangle, "joined"))
        for name, root, tangle in store.timelines.held()
        if root is not None
        and store.ctx.views.keeps("joined-order")
        and store.timelines.timeline_version(store.timelines.timeline_name(root, tangle, "joined"))
    }
    counts = [  # a tangle whose members all left keeps an empty timeline: left out, as above
        (t.root, t.name, t.messages, t.joined)
        for t in store.tangles.tangle_page(limit=1000)[0]
        if t.messages
    ]
    tips = {
        (root, tangle): store.tangles.tangle_tips(root, tangle)
        for _name, root, tangle in store.timelines.held()
        if root is not None
    }
    return {
        "feeds": [(f.author, f.head_seq, f.head_id, f.invalid_from) for f in store.feeds.held()],
        "messages": list(store.feeds.iter_raw()),
        "timelines": {name: entries for name, entries in timelines.items() if entries},
        "joined": {name: entries for name, entries in joined.items() if entries},
        "tips": {key: value for key, value in tips.items() if value},
        "tangles": counts,
        "evidence": sorted(proof.id for proof in store.feeds.evidence()),
    }


def deliver(store, raws):
    """Ingest until nothing more is accepted (as repeated gossip rounds would)."""
    while True:
        results = store.writes.ingest(raws)
        if not any(result.outcome is Outcome.ACCEPTED for result in results):
            return


def exchange(stores):
    """Every store learns every other store's proofs."""
    for _round in range(len(stores)):
        for giver in stores:
            for proof in giver.feeds.evidence():
                for taker in stores:
                    taker.writes.add_evidence([message.raw for message in proof.messages])


def framing(label: str = ""):
    """The framing attack of docs/PROCESSING.md: throwaway mallory:1 reaches honest carol,
    whose post names it; mallory then signs a second first message that names carol's post.
    Returns (mallory, carol, m1, post, m1_twin)."""
    mallory, carol = Feed(f"{label}mallory"), Feed(f"{label}carol")
    m1 = mallory.append({"n": 1})
    post = carol.append({"text": "hello"}, timeframe={mallory.public: m1})
    twin = Feed(mallory.keypair)
    m1_twin = twin.append({"n": "other 1"}, timeframe={carol.public: post})
    return mallory, carol, m1, post, m1_twin


def test_a_message_naming_another_branch_cuts_only_the_forker_in_any_order(open_store):
    mallory, carol, m1, post, m1_twin = framing()
    later = carol.append({"text": "still here"})
    everything = [m1.raw, post.raw, m1_twin.raw, later.raw]
    stores = []
    for seed in range(6):
        store = open_store(f"s{seed}")
        shuffled = everything[:]
        random.Random(seed).shuffle(shuffled)
        for raw in shuffled:  # one at a time: every arrival order of the attack
            deliver(store, [raw])
        deliver(store, shuffled)  # what came too early, sent again (as gossip asks again)
        stores.append(store)
    exchange(stores)
    first = state(stores[0])
    assert all(state(store) == first for store in stores[1:])
    assert stores[0].feeds.invalid_feeds() == {mallory.public: 1}  # carol is whole
    assert {f.author: f.head_seq for f in stores[0].feeds.held()} == {
        mallory.public: 0,
        carol.public: 2,
    }
    processed = {(feed, seq) for _index, feed, seq in stores[0].feeds.processed()}
    assert {(carol.public, 1), (carol.public, 2)} <= processed
    assert all(
        store.feeds.stalls() == [] and store.feeds.suspected_forks() == [] for store in stores
    )
    assert all(store.feeds.check().ok for store in stores)


def test_a_message_and_one_it_names_prove_nothing(open_store):
    _mallory, _carol, m1, post, m1_twin = framing()
    store = open_store()
    deliver(store, [m1.raw, post.raw])
    with pytest.raises(InvalidProof):
        store.writes.add_evidence([m1_twin.raw, post.raw])  # what cut carol under format 1
    assert store.feeds.invalid_feeds() == {}


def test_a_branch_named_before_the_proof_is_a_suspected_fork_until_the_proof(open_store):
    mallory, _carol, m1, post, m1_twin = framing()
    bob = Feed("bob")
    b1 = bob.append({"text": "I saw m1"}, timeframe={mallory.public: m1})
    for label, first in [("held", [m1_twin.raw]), ("processed", [m1_twin.raw, post.raw])]:
        # mallory:1 held with the other tag: unprocessed (it waits on carol's post, which
        # waits on m1), or processed once that wait is gone (here: never, so the same)
        store = open_store(label)
        deliver(store, first)
        deliver(store, [b1.raw])
        suspects = {
            (s.feed, s.seq, s.by_feed, s.named_tag, s.held_tag)
            for s in store.feeds.suspected_forks()
        }
        assert (mallory.public, 1, bob.public, m1.id[:16], m1_twin.id[:16]) in suspects
        stalls = {(s.feed, s.needs_feed, s.needs_seq, s.needs_tag) for s in store.feeds.stalls()}
        assert (bob.public, mallory.public, 1, m1.id[:16]) in stalls
        deliver(store, [m1.raw])  # the other branch arrives: the proof, and bob goes on
        assert store.feeds.invalid_feeds() == {mallory.public: 1}
        assert store.feeds.suspected_forks() == [] and store.feeds.stalls() == []
        processed = {(feed, seq) for _index, feed, seq in store.feeds.processed()}
        assert (bob.public, 1) in processed
        assert store.feeds.check().ok


def test_a_fork_found_late_removes_the_branch_from_every_timeline(open_store):
    alice, carol = Feed("alice"), Feed("carol")
    root = alice.root("chat", {"n": 1})
    alice.append({"n": 2}, tangles={"chat": TangleLink(root.id, (root.id,))})
    third = alice.append({"n": 3}, tangles={"chat": TangleLink(root.id, (alice.messages[1].id,))})
    reply = carol.append(
        {"reply": 1},
        tangles={"chat": TangleLink(root.id, (third.id,))},
        timeframe={alice.public: 3},
    )
    twin = Feed(alice.keypair)
    twin.messages = alice.messages[:1]
    other = twin.append({"n": "other 2"})
    late, early = open_store("late"), open_store("early")
    deliver(late, [m.raw for m in alice.messages] + [reply.raw])
    assert late.tangles.tangle_tips(root.id, "chat") == [reply.id]
    (result,) = late.writes.ingest([other.raw])
    assert result.outcome is Outcome.FORK
    deliver(early, [root.raw, other.raw, alice.messages[1].raw, third.raw, reply.raw])
    assert state(late) == state(early)
    assert late.feeds.invalid_feeds() == {alice.public: 2}
    # The reply stays, pending on the removed message: the root is the only tip again.
    assert late.tangles.tangle_tips(root.id, "chat") == [root.id]
    assert late.timelines.timeline(late.timelines.timeline_name(root.id, "chat", "joined")) == [
        (0, root.id)
    ]
    # Both rank 0 now (the reply's one link is gone), so they sort by id (docs/TIMELINES.md).
    assert late.timelines.timeline(late.timelines.timeline_name(root.id, "chat")) == sorted(
        [(0, root.id), (0, reply.id)]
    )
    assert late.feeds.check().ok and early.feeds.check().ok


def test_one_proof_per_feed_the_lowest_wins_and_the_rest_is_dropped(open_store):
    alice = Feed("alice")
    for n in range(5):
        alice.append({"n": n})
    branch = Feed(alice.keypair)
    branch.messages = alice.messages[:1]
    for n in range(4):
        branch.append({"branch": n})
    store = open_store()
    deliver(store, [m.raw for m in alice.messages])
    store.writes.add_evidence([alice.messages[4].raw, branch.messages[4].raw])  # a fork at seq 5
    assert store.feeds.invalid_feeds() == {alice.public: 5}
    store.writes.add_evidence(
        [alice.messages[1].raw, branch.messages[1].raw]
    )  # the same fork, at 2
    assert store.feeds.invalid_feeds() == {alice.public: 2}
    (proof,) = store.feeds.evidence()
    assert {m.seq for m in proof.messages} == {2}
    assert store.feeds.statistics()["evidence"] == 2
    variants = [Feed(alice.keypair) for _ in range(3)]
    for variant in variants:
        variant.messages = alice.messages[:1]
        variant.append({"variant": id(variant)})
    results = store.writes.ingest([variant.messages[1].raw for variant in variants])
    assert {(r.outcome, r.reason) for r in results} == {(Outcome.REJECTED, Reason.FORKED_FEED)}
    assert store.feeds.statistics()["evidence"] == 2
    assert store.writes.add_evidence([alice.messages[1].raw, branch.messages[1].raw]) == (
        "known",
        {},
    )
    assert store.feeds.check().ok


def test_evidence_that_proves_nothing_is_refused(open_store):
    alice, bob = Feed("alice"), Feed("bob")
    a1, a2 = alice.append(), alice.append()
    b1 = bob.append(timeframe={alice.public: 1})
    store = open_store()
    with pytest.raises(InvalidProof):
        store.writes.add_evidence([a1.raw, a2.raw])  # one author, two seqs
    with pytest.raises(InvalidProof):
        store.writes.add_evidence([a1.raw, b1.raw])  # two authors
    with pytest.raises(InvalidProof):
        store.writes.add_evidence([a1.raw])
    twin = Feed(alice.keypair).append({"other": 1})
    with pytest.raises(InvalidProof):
        store.writes.add_evidence([a1.raw, twin.raw, b1.raw])  # a fork and one more
    with pytest.raises(InvalidMessage):
        store.writes.add_evidence([break_signature(twin.raw), a1.raw])
    assert store.feeds.invalid_feeds() == {} and store.feeds.evidence() == []


def test_a_proof_is_made_of_headers_whatever_content_comes_beside_them(open_store):
    """A fork proof reads headers only: garbled content beside an intact header proves the
    fork all the same (the content dropped), and the proof keeps the two headers alone."""
    alice = Feed("alice")
    a1 = alice.append({"n": 1})
    twin = Feed(alice.keypair).append({"other": 1})
    garbled = twin.raw[:-1] + bytes([twin.raw[-1] ^ 1])
    store = open_store()
    assert store.writes.add_evidence([garbled, a1.raw]) == ("new", {alice.public: 1})
    (proof,) = store.feeds.evidence()
    assert proof.messages == sorted(
        [a1.without_content(), twin.without_content()], key=lambda m: m.id
    )
    assert all(not m.has_content for m in proof.messages)
    # The same proof with the content intact is the one already held.
    assert store.writes.add_evidence([twin.raw, a1.raw]) == ("known", {})


def forks_of_one_seq(count: int):
    """`count` different first messages of one feed, and the proofs of each pair with the
    first, in ascending proof id."""
    alice = Feed("alice")
    first = alice.append({"n": 1})
    others = [Feed(alice.keypair).append({"n": f"other {n}"}) for n in range(count - 1)]
    proofs = sorted((check_proof([first, other]) for other in others), key=lambda p: p.id)
    return alice, first, proofs


def test_two_proofs_that_cut_a_feed_at_one_seq_every_node_keeps_the_lower_id(open_store):
    alice, _first, (low, high) = forks_of_one_seq(3)
    high_first, low_first = open_store("high-first"), open_store("low-first")
    deliver(high_first, [m.raw for m in high.messages])
    deliver(low_first, [m.raw for m in low.messages])
    assert [p.id for p in high_first.feeds.evidence()] == [high.id]
    exchange([high_first, low_first])
    assert state(high_first) == state(low_first)
    assert high_first.feeds.invalid_feeds() == {alice.public: 1}
    assert [p.id for p in high_first.feeds.evidence()] == [low.id]
    assert high_first.feeds.check().ok and low_first.feeds.check().ok


def test_a_proof_that_only_ties_is_new_once_and_then_known(open_store):
    alice, _first, (low, high) = forks_of_one_seq(3)
    store = open_store()
    assert store.writes.add_evidence([m.raw for m in high.messages]) == ("new", {alice.public: 1})
    # It cuts nothing more, but replaces the kept proof: new, to be passed on.
    assert store.writes.add_evidence([m.raw for m in low.messages]) == ("new", {})
    assert store.writes.add_evidence([m.raw for m in low.messages]) == ("known", {})
    assert store.writes.add_evidence([m.raw for m in high.messages]) == ("known", {})
    assert [proof.kind for proof in store.feeds.evidence()] == [ProofKind.FORK]
    assert store.feeds.check().ok


def test_a_reference_to_a_cut_message_does_not_hold_finality_back_for_ever(open_store):
    # carol:1 named alice:2 before alice forked at 2. The reference stays pending, but
    # alice:2 will be refused for good, so it cannot raise carol:1: finality goes on.
    alice, carol = Feed("alice"), Feed("carol")
    alice.append({"n": 1})
    alice.append({"n": 2})
    carol.append({"c": 1}, timeframe={alice.public: 2})
    for n in range(2, 5):
        carol.append({"c": n})
    twin = Feed(alice.keypair)
    twin.messages = alice.messages[:1]
    twin.append({"other": 2})
    store = open_store()
    deliver(store, [m.raw for m in alice.messages + carol.messages])
    deliver(store, [twin.messages[1].raw])
    assert store.feeds.invalid_feeds() == {alice.public: 2}
    # Everything is final: only carol can still write, above her head.
    assert store.timelines.spacetime_final() == len(store.timelines.timeline(SPACETIME)) == 5
    # A reference to a message that may still come bounds as before.
    dave = Feed("dave")
    dave.append({"d": 1}, timeframe={carol.public: 6})
    deliver(store, [dave.messages[0].raw])
    assert store.timelines.spacetime_final() == 0  # dave:1 ranks 0 and waits for carol:6
    assert store.feeds.check().ok


def test_a_suspicion_does_not_depend_on_which_branch_came_first(open_store):
    """h1 names x2a; the forker's x2b, at the same seq, names h1. Whichever of h1 and x2b
    arrives first, h1 waits for a proof, reported as a suspected fork, not silently."""
    x, h = Feed("order-x"), Feed("order-h")
    x1, x2a = x.append({"n": 1}), x.append({"n": "2a"})
    h1 = h.append({"h": 1}, timeframe={x.public: x2a})
    twin = Feed(x.keypair)
    twin.messages = [x1]
    x2b = twin.append({"n": "2b"}, timeframe={h.public: h1})
    reports = []
    for label, order in [("h1-first", [x1, h1, x2b]), ("x2b-first", [x1, x2b, h1])]:
        store = open_store(label)
        for message in order:
            store.writes.ingest([message.raw])
        reports.append(
            (
                [
                    (s.feed, s.needs_feed, s.needs_seq, s.needs_tag, s.suspected)
                    for s in store.feeds.stalls()
                ],
                [(s.feed, s.seq, s.by_feed) for s in store.feeds.suspected_forks()],
            )
        )
        store.writes.ingest([x2a.raw])  # the other branch: the proof
        assert store.feeds.invalid_feeds() == {x.public: 2} and store.feeds.stalls() == []
    assert (
        reports[0]
        == reports[1]
        == (
            [(h.public, x.public, 2, x2a.id[:16], True)],
            [(x.public, 2, h.public)],
        )
    )


def test_a_head_only_a_cut_message_named_is_named_again(open_store):
    """g1 was named by the forker's x1 alone; once x1 is cut, our next message names g1,
    as a node that saw the proof first does."""
    g, x = Feed("cut-head-g"), Feed("cut-head-x")
    g1 = g.append({"g": 1})
    x1 = x.append({"x": 1}, timeframe={g.public: g1})
    x1b = Feed(x.keypair).append({"x": "1b"})
    named = []
    for label, batches in [("late", [[g1, x1], [x1b]]), ("early", [[g1, x1b], [x1]])]:
        store = open_store(label, keypair=keypair(f"cut-head-{label}"))
        for batch in batches:
            store.writes.ingest([m.raw for m in batch])
        assert store.feeds.invalid_feeds() == {x.public: 1}
        named.append(store.writes.publish({"p": 1}).named())
    assert named[0] == named[1] == {g.public: (1, g1.id[:16])}
