"""The causal processor: docs/PROCESSING.md's rule, a model of it under random delivery, stalls."""

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.factories import Feed


def processed(store):
    return [(feed, seq) for _index, feed, seq in store.feeds.processed(0, 10**6)]


def test_seed_003_example_processes_b_before_a(open_store):
    a, b = sorted([Feed("a"), Feed("b")], key=lambda feed: feed.public)
    for _ in range(2):
        a.append()
        b.append()
    # A:3 has seen B:3; B:3 has seen only A:2. So B:3 must go before A:3, although
    # the tie-break alone (same seq, A's key is lower) would put A:3 first.
    b.append(timeframe={a.public: 2})
    a3 = a.append(timeframe={b.public: 3})
    store = open_store()
    store.writes.ingest([a3.raw, *[m.raw for m in a.messages[:2]], *[m.raw for m in b.messages]])
    order = processed(store)
    assert order.index((b.public, 3)) < order.index((a.public, 3))
    assert len(order) == 6
    assert store.feeds.processed_frontier() == {a.public: 3, b.public: 3}


def test_a_missing_dependency_is_a_stall_until_it_arrives(open_store):
    a, b = Feed("a"), Feed("b")
    b1 = b.append()
    a1 = a.append(timeframe={b.public: 1})
    store = open_store()
    store.writes.ingest([a1.raw])
    assert processed(store) == []
    [stall] = store.feeds.stalls()
    assert (stall.feed, stall.seq, stall.needs_feed, stall.needs_seq) == (a.public, 1, b.public, 1)
    store.writes.ingest([b1.raw])
    assert processed(store) == [(b.public, 1), (a.public, 1)]
    assert store.feeds.stalls() == []


def test_publish_uses_the_processed_frontier_as_timeframe(open_store):
    from tests.factories import keypair

    other = Feed("other")
    o1 = other.append()
    o2 = other.append(timeframe={keypair("me").public: 5})  # waits on a message of ours
    store = open_store(keypair=keypair("me"))
    store.writes.ingest([o1.raw, o2.raw])
    mine = store.writes.publish("hello")
    assert mine.timeframe == {other.public: 1}  # o2 is stored but not processed


def model_order(feeds, batches):
    """The rule from scratch: after each batch, process the ready (seq, feed) smallest first."""
    stored, done, order = set(), {}, []
    for batch in batches:
        stored.update((m.author, m.seq) for m in batch)
        by_key = {(m.author, m.seq): m for feed in feeds for m in feed.messages}
        while True:
            ready = []
            for feed in feeds:
                seq = done.get(feed.public, 0) + 1
                message = by_key.get((feed.public, seq))
                if (feed.public, seq) in stored and all(
                    done.get(f, 0) >= s for f, s in message.timeframe.items() if f != feed.public
                ):
                    ready.append((seq, feed.public))
            if not ready:
                break
            seq, feed_key = min(ready)
            done[feed_key] = seq
            order.append((feed_key, seq))
    return order


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32), st.integers(2, 5), st.integers(1, 6))
def test_store_matches_the_model_under_random_delivery(tmp_path_factory, seed, width, batch_count):
    from tanglenode.storage.store import FeedStore

    rng = random.Random(seed)
    feeds = [Feed(f"f{seed}-{i}") for i in range(width)]
    seen = {}
    for _ in range(width * 6):  # each new message has seen a random past of the others
        feed = rng.choice(feeds)
        timeframe = {}
        for other in feeds:
            if other is not feed and other.messages and rng.random() < 0.6:
                timeframe[other.public] = rng.randint(1, len(other.messages))
        seen[feed.public] = feed.append(timeframe=timeframe)
    queues = [list(feed.messages) for feed in feeds if feed.messages]
    messages = []  # each feed in its own order (as gossip delivers), feeds interleaved at random
    while queues:
        queue = rng.choice(queues)
        messages.append(queue.pop(0))
        if not queue:
            queues.remove(queue)
    cuts = sorted(rng.sample(range(1, len(messages)), min(batch_count, len(messages) - 1)))
    batches = [messages[i:j] for i, j in zip([0, *cuts], [*cuts, len(messages)], strict=True)]
    with FeedStore(tmp_path_factory.mktemp("proc"), map_size=2**26) as store:
        for batch in batches:
            store.writes.ingest([m.raw for m in batch])
        assert processed(store) == model_order(feeds, batches)
        assert len(processed(store)) == len(messages)  # nothing can deadlock
