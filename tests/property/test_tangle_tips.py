"""Hypothesis: tangle tips are right after every message, whatever the arrival order.

A tip is a joined member (docs/FORMAT.md, "Tangles": reachable from the root through members whose
`previous` are all joined) that no joined member names; pending members never are.
"""

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tanglenode.protocol.message import TangleLink
from tanglenode.storage.feeds.ingest import Outcome
from tanglenode.storage.store import FeedStore
from tests.factories import Feed


@st.composite
def tangle_and_arrival(draw):
    """A tangle written by up to 3 feeds, arriving in batches that keep each feed's order."""
    feeds = [Feed(f"tips-{i}") for i in range(draw(st.integers(1, 3)))]
    root = feeds[0].root("chat")
    written = [root]
    for _ in range(draw(st.integers(0, 12))):
        author = draw(st.sampled_from(feeds))
        chosen = draw(st.sets(st.integers(0, len(written) - 1), min_size=1, max_size=3))
        link = TangleLink(root.id, tuple(sorted(written[index].id for index in chosen)))
        written.append(author.append(tangles={"chat": link}))
    # A random interleaving of the feeds: shuffle, then put each feed's messages back in seq order.
    order = draw(st.permutations(written))
    queues = {feed.public: list(feed.messages) for feed in feeds}
    arrival = [queues[message.author].pop(0) for message in order]
    cuts = sorted(draw(st.sets(st.integers(1, len(arrival)), max_size=4)) | {len(arrival)})
    return root, [arrival[start:end] for start, end in zip([0, *cuts], cuts, strict=False)]


def oracle_tips(present):
    joined: set[bytes] = set()
    grew = True
    while grew:
        grew = False
        for m in present:
            previous = m.tangles["chat"].previous
            if m.id not in joined and (previous is None or all(p in joined for p in previous)):
                joined.add(m.id)
                grew = True
    referenced = {p for m in present if m.id in joined for p in m.tangles["chat"].previous or ()}
    return sorted(m for m in joined if m not in referenced)


@given(tangle_and_arrival())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_tips_match_the_oracle_after_every_batch(case):
    root, batches = case
    with tempfile.TemporaryDirectory() as tmp, FeedStore(Path(tmp), map_size=2**24) as store:
        present = []
        for batch in batches:
            results = store.writes.ingest([message.raw for message in batch])
            assert {result.outcome for result in results} == {Outcome.ACCEPTED}
            present.extend(batch)
            assert store.tangles.tangle_tips(root.id, "chat") == oracle_tips(present)
        report = store.feeds.check()
        assert report.ok, report.problems
