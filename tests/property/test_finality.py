"""The finality watermark: once a spacetime position is reported final, it never changes."""

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from tanglenode.storage.store import FeedStore
from tests.factories import Feed


def build(rng: random.Random, width: int, length: int) -> list[list]:
    """Feeds whose first messages name nothing; later ones name random past messages."""
    feeds = [Feed(f"final-{rng.random()}") for _ in range(width)]
    for feed in feeds:
        feed.append()
    for _ in range(length):
        author = rng.choice(feeds)
        timeframe = {
            other.public: rng.randint(1, len(other.messages))
            for other in feeds
            if other is not author and rng.random() < 0.5
        }
        author.append(timeframe=timeframe)
    return feeds


def deliveries(rng: random.Random, feeds) -> list[list[bytes]]:
    """First every feed's first message (all feeds are then known), then random batches."""
    queues = [[m.raw for m in feed.messages[1:]] for feed in feeds]
    batches = [[feed.messages[0].raw for feed in feeds]]
    while any(queues):
        batch = []
        for _ in range(rng.randint(1, 6)):
            live = [queue for queue in queues if queue]
            if live:
                batch.append(rng.choice(live).pop(0))
        batches.append(batch)
    return batches


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32), st.integers(2, 5), st.integers(1, 40))
def test_a_final_position_never_changes(tmp_path_factory, seed, width, length):
    rng = random.Random(seed)
    feeds = build(rng, width, length)
    reported: list[list[bytes]] = []  # each final prefix as it was reported
    with FeedStore(tmp_path_factory.mktemp("final"), map_size=2**26) as store:
        spacetime = store.timelines.timeline_name(None)
        for batch in deliveries(rng, feeds):
            store.writes.ingest(batch)
            order = [msg_id for _rank, msg_id in store.timelines.timeline(spacetime)]
            for prefix in reported:
                assert order[: len(prefix)] == prefix
            final = store.timelines.spacetime_final()
            assert 0 <= final <= len(order)
            reported.append(order[:final])
        assert len(reported[-1]) >= width  # everyone's first message is final by the end
