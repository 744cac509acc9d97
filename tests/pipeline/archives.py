"""A small store for the pipeline's tests: one tangle, out-of-order arrival, a fork."""

import random

from tanglenode.protocol.message import ROOT_LINK, TangleLink
from tanglenode.storage.store import FeedStore
from tests.factories import Feed


def build_store(path, rng: random.Random) -> tuple[FeedStore, list]:
    """Three feeds in one tangle, timeframes naming each other, arriving out of order, a fork."""
    feeds = [Feed(f"pipe-{n}") for n in range(3)]
    root = feeds[0].append("root", tangles={"chat": ROOT_LINK})
    members = [root]
    for _ in range(40):
        author = rng.choice(feeds)
        others = [f for f in feeds if f is not author and f.messages]
        timeframe = {f.public: len(f.messages) for f in others if rng.random() < 0.7}
        previous = tuple(sorted(rng.sample([m.id for m in members], min(2, len(members)))))
        message = author.append(
            {"n": len(members)},
            timeframe=timeframe,
            tangles={"chat": TangleLink(root.id, previous)},
        )
        members.append(message)
    store = FeedStore(path, map_size=2**26)
    queues = [list(f.messages) for f in feeds]
    delivered = 0
    while any(queues):  # per feed in order, feeds interleaved at random: pending references
        queue = rng.choice([q for q in queues if q])
        store.ingest([queue.pop(0).raw])
        delivered += 1
    twin = Feed(feeds[1].keypair)  # same key, another last message: a fork there
    twin.messages = feeds[1].messages[:-1]
    store.ingest([twin.append("the other branch").raw])
    return store, feeds
