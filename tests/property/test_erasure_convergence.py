"""Hypothesis: stores given the same messages (posts, follows, names, erase requests good
and bad) in any order, cut into any batches, end in the same state: the same contents
dropped, by the same requests, the same refusals, the same follows and names.

A small world of 2-3 feeds; each writes posts, contact and about messages and erase
requests naming any seq of its own feed with the right id or another (protocol/erase.py's
rules), its timeframe naming what the others wrote already. Each store is re-fed until
nothing changes (a message whose prev has not arrived is refused for now, as gossip
would send it again). Ground truth: every good request's target holds no content on
every store; every other message holds its content.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tanglenode.protocol.contacts import contact_content
from tanglenode.protocol.erase import erase_content, erase_request, is_erase, judge
from tanglenode.protocol.identity import feed_text
from tanglenode.protocol.message import Message
from tanglenode.storage.store import FeedStore
from tests.factories import Feed


@st.composite
def worlds(draw) -> list[Message]:
    feeds = [Feed(f"erase-conv-{n}") for n in range(draw(st.integers(2, 3)))]
    written: list[Message] = []
    for _step in range(draw(st.integers(3, 12))):
        feed = draw(st.sampled_from(feeds))
        others = {
            other.public: other.messages[-1]
            for other in feeds
            if other is not feed and other.messages and draw(st.booleans())
        }
        kind = draw(st.sampled_from(["post", "follow", "about", "erase", "erase"]))
        own = feed.messages
        if kind == "erase" and own:
            target = draw(st.sampled_from(own))
            seq = draw(st.sampled_from([target.seq, target.seq, len(own) + 1, len(own) + 3]))
            message_id = target.id if draw(st.integers(0, 4)) else bytes(32)
            content = erase_content(seq, message_id)
        elif kind == "follow":
            contact = draw(st.sampled_from([f for f in feeds if f is not feed]))
            content = contact_content(contact.public, following=True, blocking=False)
        elif kind == "about":
            content = {"type": "about", "about": feed_text(feed.public), "name": f"n{len(own)}"}
        else:
            content = {"type": "post", "text": f"secret {len(written)}"}
        written.append(feed.append(content, timeframe=others))
    return written


def feed_all(store: FeedStore, batches: list[list[bytes]]) -> None:
    """Every batch, then again, until a round stores nothing new."""
    while True:
        before = sum(store.feeds.frontier().values())
        for batch in batches:
            store.writes.ingest(batch)
        if sum(store.feeds.frontier().values()) == before:
            return


def state(store: FeedStore, written: list[Message]) -> tuple:
    feeds = sorted({m.author for m in written})
    return (
        tuple(
            (m.id, store.feeds.get(m.id).has_content, store.feeds.erased_by(m.id)) for m in written
        ),
        tuple(store.feeds.erase_outcome(m.id) for m in written),
        tuple(tuple(sorted(store.feeds.stances(f).items())) for f in feeds),
        tuple(store.feeds.about_name(f) for f in feeds),
    )


def good_targets(written: list[Message]) -> set[bytes]:
    """What the rules say goes: the targets of the requests every node must carry out."""
    by_position = {(m.author, m.seq): m for m in written}
    gone = set()
    for message in written:
        if not is_erase(message.content):
            continue
        said = erase_request(message.content)
        target = by_position.get((message.author, getattr(said, "seq", 0)))
        if (
            hasattr(said, "seq")
            and judge(said, message.seq, target and target.id, target and target.content) is None
        ):
            gone.add(said.message)
    return gone


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds(), st.randoms(use_true_random=False), st.integers(1, 4))
def test_stores_given_erasures_in_any_order_end_the_same(written, random, cut):
    raws = [m.raw for m in written]
    with tempfile.TemporaryDirectory() as directory:
        states = []
        for name in ("one", "two"):
            order = raws[:]
            random.shuffle(order)
            batches = [order[i : i + cut] for i in range(0, len(order), cut)]
            with FeedStore(Path(directory) / name, map_size=2**24) as store:
                feed_all(store, batches)
                assert store.feeds.check().problems == []
                states.append(state(store, written))
        assert states[0] == states[1]
        gone = good_targets(written)
        assert {entry[0] for entry in states[0][0] if not entry[1]} == gone
