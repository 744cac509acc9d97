"""Forks and timeframe cycles make feeds invalid the same way on every node (docs/PROCESSING.md)."""

import random

import pytest

from tanglenode.protocol.errors import InvalidMessage, Reason
from tanglenode.protocol.evidence import InvalidProof, ProofKind, check_proof
from tanglenode.protocol.message import TangleLink
from tanglenode.storage.ingest import Outcome
from tanglenode.storage.timelines import SPACETIME
from tests.factories import Feed


def state(store):
    """Everything that must agree between honest nodes."""
    timelines = {name: store.timeline(name) for name, _root, _tangle in store.timelines()}
    joined = {
        name: store.timeline(store.timeline_name(root, tangle, "joined"))
        for name, root, tangle in store.timelines()
        if root is not None and store.timeline_version(store.timeline_name(root, tangle, "joined"))
    }
    tips = {
        (root, tangle): store.tangle_tips(root, tangle)
        for _name, root, tangle in store.timelines()
        if root is not None
    }
    return {
        "feeds": [(f.author, f.head_seq, f.head_id, f.invalid_from) for f in store.feeds()],
        "messages": list(store.iter_raw()),
        "timelines": {name: entries for name, entries in timelines.items() if entries},
        "joined": {name: entries for name, entries in joined.items() if entries},
        "tips": {key: value for key, value in tips.items() if value},
        "evidence": sorted(proof.id for proof in store.evidence()),
    }


def deliver(store, raws):
    """Ingest until nothing more is accepted (as repeated gossip rounds would)."""
    while True:
        results = store.ingest(raws)
        if not any(result.outcome is Outcome.ACCEPTED for result in results):
            return


def exchange(stores):
    """Every store learns every other store's proofs."""
    for _round in range(len(stores)):
        for giver in stores:
            for proof in giver.evidence():
                for taker in stores:
                    taker.add_evidence([message.raw for message in proof.messages])


def two_way_cycle(label: str = ""):
    """alice:1 claims bob:1 processed, bob:1 claims alice:1: a loop of two."""
    alice, bob = Feed(f"{label}alice"), Feed(f"{label}bob")
    a1 = alice.append({"n": 1}, timeframe={bob.public: 1})
    b1 = bob.append({"n": 1}, timeframe={alice.public: 1})
    return alice, bob, a1, b1


def test_a_cycle_delivered_in_opposite_orders_invalidates_both_feeds_on_both_nodes(open_store):
    alice, bob, a1, b1 = two_way_cycle()
    one, two = open_store("one"), open_store("two")
    assert [r.outcome for r in one.ingest([a1.raw])] == [Outcome.ACCEPTED]
    (closing,) = one.ingest([b1.raw])
    assert (closing.outcome, closing.reason) == (Outcome.CYCLE, Reason.TIMEFRAME_CYCLE)
    two.ingest([b1.raw])
    two.ingest([a1.raw])
    assert state(one) == state(two)
    assert one.invalid_feeds() == {alice.public: 1, bob.public: 1}
    assert one.timeline(SPACETIME) == [] and list(one.iter_raw()) == []
    (proof,) = one.evidence()
    assert proof.kind is ProofKind.CYCLE and {m.id for m in proof.messages} == {a1.id, b1.id}
    assert one.get(a1.id) == a1  # shown from the evidence
    later = alice.append({"n": 2})
    ((outcome, reason),) = [(r.outcome, r.reason) for r in one.ingest([later.raw])]
    assert (outcome, reason) == (Outcome.REJECTED, Reason.FORKED_FEED)
    assert one.check().ok and two.check().ok


def test_a_longer_cycle_cuts_each_feed_at_its_lowest_message_on_the_loop(open_store):
    alice, bob, carol = Feed("alice"), Feed("bob"), Feed("carol")
    alice.append({"n": 1})
    alice.append({"n": 2}, timeframe={bob.public: 2})  # needs bob:2, which needs alice:4
    alice.append({"n": 3})
    alice.append({"n": 4})
    bob.append({"n": 1})
    bob.append({"n": 2}, timeframe={alice.public: 4})
    carol.append({"reply": 1}, timeframe={alice.public: 1, bob.public: 1})
    carol.append({"waits": 1}, timeframe={alice.public: 3})  # names a message to be cut
    everything = [m.raw for feed in (alice, bob, carol) for m in feed.messages]
    stores = []
    for seed in range(4):
        store = open_store(f"s{seed}")
        shuffled = everything[:]
        random.Random(seed).shuffle(shuffled)
        deliver(store, shuffled)
        stores.append(store)
    exchange(stores)
    first = state(stores[0])
    assert all(state(store) == first for store in stores[1:])
    assert stores[0].invalid_feeds() == {alice.public: 2, bob.public: 2}
    assert {f.author: f.head_seq for f in stores[0].feeds()} == {
        alice.public: 1,
        bob.public: 1,
        carol.public: 2,
    }
    # carol:2 named alice:3, which will never exist: it is processed once alice:1 is.
    processed = {(feed, seq) for _index, feed, seq in stores[0].processed()}
    assert (carol.public, 2) in processed and (alice.public, 2) not in processed
    assert all(store.check().ok for store in stores)


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
    assert late.tangle_tips(root.id, "chat") == [reply.id]
    (result,) = late.ingest([other.raw])
    assert result.outcome is Outcome.FORK
    deliver(early, [root.raw, other.raw, alice.messages[1].raw, third.raw, reply.raw])
    assert state(late) == state(early)
    assert late.invalid_feeds() == {alice.public: 2}
    # The reply stays, pending on the removed message: the root is the only tip again.
    assert late.tangle_tips(root.id, "chat") == [root.id]
    assert late.timeline(late.timeline_name(root.id, "chat", "joined")) == [(0, root.id)]
    assert [entry[1] for entry in late.timeline(late.timeline_name(root.id, "chat"))] == sorted(
        [root.id, reply.id], key=lambda i: (i != root.id, i)
    )
    assert late.check().ok and early.check().ok


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
    store.add_evidence([alice.messages[4].raw, branch.messages[4].raw])  # a fork at seq 5
    assert store.invalid_feeds() == {alice.public: 5}
    store.add_evidence([alice.messages[1].raw, branch.messages[1].raw])  # the same fork, at 2
    assert store.invalid_feeds() == {alice.public: 2}
    (proof,) = store.evidence()
    assert {m.seq for m in proof.messages} == {2}
    assert store.statistics()["evidence"] == 2
    variants = [Feed(alice.keypair) for _ in range(3)]
    for variant in variants:
        variant.messages = alice.messages[:1]
        variant.append({"variant": id(variant)})
    results = store.ingest([variant.messages[1].raw for variant in variants])
    assert {(r.outcome, r.reason) for r in results} == {(Outcome.REJECTED, Reason.FORKED_FEED)}
    assert store.statistics()["evidence"] == 2
    assert store.add_evidence([alice.messages[1].raw, branch.messages[1].raw]) == ("known", {})
    assert store.check().ok


def test_evidence_that_proves_nothing_is_refused(open_store):
    alice, bob = Feed("alice"), Feed("bob")
    a1, a2 = alice.append(), alice.append()
    b1 = bob.append(timeframe={alice.public: 1})
    store = open_store()
    with pytest.raises(InvalidProof):
        store.add_evidence([a1.raw, a2.raw])  # one author, two seqs
    with pytest.raises(InvalidProof):
        store.add_evidence([a1.raw, b1.raw])  # b needs a, a does not need b
    with pytest.raises(InvalidProof):
        store.add_evidence([a1.raw])
    forged = bytearray(two_way_cycle()[2].raw)
    forged[-1] ^= 1
    with pytest.raises(InvalidMessage):
        store.add_evidence([bytes(forged), two_way_cycle()[3].raw])
    assert store.invalid_feeds() == {} and store.evidence() == []


def test_two_proofs_that_cut_a_feed_at_one_seq_every_node_keeps_the_lower_id(open_store):
    # Found by tests/property/test_invalidation_convergence.py: alice:1 is both on a cycle
    # with bob:1 and forked. Which proof of "alice from 1" a node kept depended on which it
    # met first, so after the exchange one node kept both proofs and the other only one.
    alice, bob, a1, b1 = two_way_cycle()
    twin = Feed(alice.keypair)
    other = twin.append({"n": "other 1"})
    cycle_first, fork_first = open_store("cycle-first"), open_store("fork-first")
    deliver(cycle_first, [a1.raw, b1.raw, other.raw])
    deliver(fork_first, [a1.raw, other.raw])
    deliver(fork_first, [b1.raw])  # alice is cut already: no cycle to close here
    (cycle,) = cycle_first.evidence()
    (fork,) = fork_first.evidence()
    assert (cycle.kind, fork.kind) == (ProofKind.CYCLE, ProofKind.FORK)
    exchange([cycle_first, fork_first])
    assert state(cycle_first) == state(fork_first)
    assert cycle_first.invalid_feeds() == {alice.public: 1, bob.public: 1}
    kept = sorted(proof.id for proof in cycle_first.evidence())
    # The cycle stays for bob; for alice the lower id of the two.
    assert kept == sorted({cycle.id, min(fork.id, cycle.id)})
    assert cycle_first.check().ok and fork_first.check().ok


def test_a_proof_that_only_ties_is_new_once_and_then_known(open_store):
    alice, bob, a1, b1 = two_way_cycle()
    cycle = check_proof([a1, b1])
    for label in range(100):  # a fork of alice:1 whose proof id sorts before the cycle's
        other = Feed(alice.keypair).append({"n": f"other {label}"})
        if check_proof([a1, other]).id < cycle.id:
            break
    store = open_store()
    assert store.add_evidence([a1.raw, b1.raw]) == ("new", {alice.public: 1, bob.public: 1})
    # It cuts nothing more, but replaces the cycle as alice's proof: new, to be passed on.
    assert store.add_evidence([a1.raw, other.raw]) == ("new", {})
    assert store.add_evidence([a1.raw, other.raw]) == ("known", {})
    assert store.add_evidence([a1.raw, b1.raw]) == ("known", {})  # kept, for bob
    assert sorted(proof.kind for proof in store.evidence()) == [ProofKind.CYCLE, ProofKind.FORK]
    assert store.check().ok


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
    assert store.invalid_feeds() == {alice.public: 2}
    # Everything is final: only carol can still write, above her head.
    assert store.spacetime_final() == len(store.timeline(SPACETIME)) == 5
    # A reference to a message that may still come bounds as before.
    dave = Feed("dave")
    dave.append({"d": 1}, timeframe={carol.public: 6})
    deliver(store, [dave.messages[0].raw])
    assert store.spacetime_final() == 0  # dave:1 ranks 0 and waits for carol:6
    assert store.check().ok
