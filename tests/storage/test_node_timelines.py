"""The node's timelines, kept by ingest and publish: tangles and the spacetime."""

import random

import pytest

from tanglenode.protocol.errors import Reason
from tanglenode.protocol.message import TangleLink
from tanglenode.storage.engine.timeline import apply_commands
from tanglenode.storage.feeds.ingest import Outcome
from tests.factories import Feed
from tests.timeline_oracle import rank_order

SPACETIME = None  # store.timelines.timeline_name(None)


def spacetime_oracle(messages):
    """Rank order of the spacetime by its definition, computed from scratch."""
    by_ref = {(m.author, m.seq, m.id[:16]): m for m in messages}
    events = []
    for message in messages:
        links = [(feed, seq, tag) for feed, (seq, tag) in message.named().items()]
        if message.seq > 1:
            links.append((message.author, message.seq - 1, message.prev[:16]))
        events.append((message.id, [by_ref[ref].id for ref in links if ref in by_ref]))
    return rank_order(events)


def test_tangle_timeline_follows_previous_links_in_any_arrival_order(open_store):
    # One message per feed, so every arrival order is valid for the feeds.
    alice, bob, carol, dave = (Feed(name) for name in ("alice", "bob", "carol", "dave"))
    root = alice.root("chat")
    a1 = bob.append("hi", tangles={"chat": TangleLink(root.id, (root.id,))})
    b1 = carol.append("yo", tangles={"chat": TangleLink(root.id, (root.id,))})
    a2 = dave.append("both", tangles={"chat": TangleLink(root.id, tuple(sorted([a1.id, b1.id])))})
    members = [root, a1, b1, a2]
    expected = rank_order([(m.id, list(m.tangles["chat"].previous or ())) for m in members])
    for seed in range(6):
        store = open_store(f"s{seed}")
        raws = [m.raw for m in members]
        random.Random(seed).shuffle(raws)
        for raw in raws:  # one at a time, so referenced messages often come later
            store.writes.ingest([raw])
        timeline = store.timelines.timeline_name(root.id, "chat")
        assert [msg_id for _rank, msg_id in store.timelines.timeline(timeline)] == expected
        commands = store.timelines.timeline_commands(timeline, 0)
        assert apply_commands([], commands) == expected
        assert store.timelines.timeline_version(timeline) == len(commands)
        placement = store.timelines.timeline_placement(timeline, a2.id)
        assert (placement.position, placement.rank) == (3, 2)


def test_spacetime_edges_are_prev_and_timeframe(store):
    alice, bob, carol = Feed("alice"), Feed("bob"), Feed("carol")
    a1 = alice.append()
    b1 = bob.append(timeframe={alice.public: 1})
    c1 = carol.append(timeframe={bob.public: 1})  # bob:1 arrives after carol's message
    a2 = alice.append(timeframe={carol.public: 1})
    for raw in (c1.raw, a1.raw, a2.raw, b1.raw):
        store.writes.ingest([raw])
    mine = store.writes.publish("after all")
    everything = [a1, b1, c1, a2, mine]
    spacetime = store.timelines.timeline_name(None)
    assert [msg_id for _r, msg_id in store.timelines.timeline(spacetime)] == spacetime_oracle(
        everything
    )
    assert [rank for rank, _id in store.timelines.timeline(spacetime)] == [0, 1, 2, 3, 4]
    assert store.timelines.timeline_placement(spacetime, c1.id).rank == 2


def test_an_entry_naming_one_branch_never_links_the_other(store):
    alice, bob = Feed("alice"), Feed("bob")
    a1 = alice.append({"branch": "one"})
    b1 = bob.append(timeframe={alice.public: a1})
    other = Feed(alice.keypair).append({"branch": "two"})
    b2 = Feed(bob.keypair)  # bob's next names the branch bob did see, through b1 only
    b2.messages = [b1]
    later = b2.append({"n": 2})
    spacetime = store.timelines.timeline_name(None)
    assert [r.outcome for r in store.writes.ingest([other.raw, b1.raw, later.raw])] == [
        "accepted"
    ] * 3
    # b1 names a1, not `other` at the same seq: its link waits, so it ranks 0
    assert store.timelines.timeline(spacetime) == sorted([(0, other.id), (0, b1.id), (1, later.id)])
    (result,) = store.writes.ingest([a1.raw])  # the fork: alice is cut, bob keeps what it named
    assert (result.outcome, result.reason) == (Outcome.FORK, Reason.FORKED_FEED)
    assert store.timelines.timeline(spacetime) == [(0, b1.id), (1, later.id)]
    assert store.feeds.check().ok


@pytest.mark.parametrize("style", ["random entries", "whole frontier"])
def test_large_random_batches_match_the_oracle(store, style):
    # With the whole frontier most entries repeat the author's previous timeframe,
    # which the spacetime leaves out as edges; the oracle keeps every entry.
    rng = random.Random(11)
    feeds = [Feed(f"f{index}") for index in range(5)]
    messages = []
    for _ in range(120):
        author = rng.choice(feeds)
        others = [f for f in feeds if f is not author and f.messages]
        if style == "whole frontier":
            timeframe = {f.public: len(f.messages) for f in others if rng.random() < 0.9}
        else:
            timeframe = {
                f.public: rng.randint(1, len(f.messages))
                for f in rng.sample(others, min(2, len(others)))
            }
        messages.append(author.append(timeframe=timeframe))
    per_feed = {}
    for message in messages:
        per_feed.setdefault(message.author, []).append(message.raw)
    batches = []
    while any(per_feed.values()):  # feeds in order, interleaved at random, random batch sizes
        batch = []
        for _ in range(rng.randint(1, 15)):
            live = [raws for raws in per_feed.values() if raws]
            if not live:
                break
            batch.append(rng.choice(live).pop(0))
        batches.append(batch)
    for batch in batches:
        assert {r.outcome for r in store.writes.ingest(batch)} == {Outcome.ACCEPTED}
    spacetime = store.timelines.timeline_name(None)
    ordered = [msg_id for _rank, msg_id in store.timelines.timeline(spacetime)]
    assert ordered == spacetime_oracle(messages)
    assert (
        apply_commands([], store.timelines.timeline_commands(spacetime, 0, limit=10**6)) == ordered
    )
    assert store.timelines.timeline(spacetime, 10, 13) == store.timelines.timeline(spacetime)[10:13]
