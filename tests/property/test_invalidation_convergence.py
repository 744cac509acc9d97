"""Hypothesis: honest nodes converge on the same state whatever lies the messages tell.

A small world of 3-5 feeds whose timeframes name other feeds' messages by
seq and tag (honest ones only messages written already, on either branch of
a forked feed; liars' and fork twins' also seqs ahead of what was ever
written, or tags no message has), fork twins (same key, another history from
some seq on), and two tangles whose members link to any earlier message,
liars' included; now and then a message or two is withheld from everyone.

The pool goes to three stores in three random orders cut into random batches
(the last store hears the others' proofs before one of its batches, maybe
the first); each store is re-fed until nothing changes (gossip rounds), the
stores swap proofs until no proof is new (docs/PROCESSING.md, "Proofs
travel"), are re-fed, and so on until neither changes anything. Then:

- every store holds the same `state()` (feeds with heads and boundaries,
  messages, every timeline, tangle tips, kept proofs) and passes `check()`;
- each store's processed frontier (up to its heads) is the one the rule gives
  for what it holds: no stall on a liar's end, nothing processed early;
- ground truth: a fresh store given, feed by feed in seq order, each feed's
  chain below its final boundary accepts all of it, finds no proof, and holds
  the same messages, heads, timelines and tips.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tanglenode.protocol.message import ROOT_LINK, Message, TangleLink
from tanglenode.storage.feeds.ingest import Outcome
from tanglenode.storage.store import FeedStore
from tests.factories import ALL_VIEWS, Feed
from tests.storage.test_invalidation import state

MAP_SIZE = 2**24


@st.composite
def worlds(draw, max_feeds: int = 5, max_length: int = 4):
    """The messages in the order they were written; the pool every store gets is drawn
    from it (`scenarios`)."""
    feed_count = draw(st.integers(3, max_feeds))
    feeds = [Feed(f"conv-{index}") for index in range(feed_count)]
    lengths = [draw(st.integers(1, max_length)) for _ in feeds]
    # An honest author's timeframe names only what was written already; a liar's, anything.
    liars = {feed.public for feed in feeds if draw(st.booleans())}
    # Writers: each feed, then optional fork twins (base writer, messages shared, own length).
    writers: list[tuple[Feed, int]] = list(zip(feeds, lengths, strict=True))
    twins: dict[int, tuple[int, int]] = {}  # writer index -> (base writer, shared prefix)
    for base in range(feed_count):
        for _twin in range(draw(st.sampled_from([0, 0, 0, 1, 2]))):
            shared = draw(st.integers(0, lengths[base] - 1))
            twins[len(writers)] = (base, shared)
            writers.append((Feed(feeds[base].keypair), shared + draw(st.integers(1, 2))))
    longest = {
        feed.public: max(length for other, length in writers if other.public == feed.public)
        for feed in feeds
    }

    written: list[Message] = []
    tangles: dict[str, tuple[bytes, list[bytes]]] = {}  # name -> (root id, member ids)
    while True:
        able = []
        for index, (feed, length) in enumerate(writers):
            if len(feed.messages) >= length:
                continue
            if index in twins:
                base, shared = twins[index]
                if not feed.messages and len(writers[base][0].messages) < shared:
                    continue
            able.append(index)
        if not able:
            break
        index = draw(st.sampled_from(able))
        feed, _length = writers[index]
        if index in twins and not feed.messages:
            base, shared = twins[index]
            feed.messages = list(writers[base][0].messages[:shared])
        timeframe: dict[bytes, Message | tuple[int, bytes]] = {}
        liar = feed.public in liars or index in twins
        for other in feeds:
            if other.public == feed.public or draw(st.integers(0, 2)):
                continue
            # every message written of that key, on any branch
            known = {m.id: m for f, _l in writers if f.public == other.public for m in f.messages}
            if known and (not liar or draw(st.booleans())):
                timeframe[other.public] = known[draw(st.sampled_from(sorted(known)))]
            elif liar:  # a seq maybe never written, a tag no message has
                seq = draw(st.integers(1, longest[other.public] + 1))
                timeframe[other.public] = (seq, draw(st.binary(min_size=16, max_size=16)))
        links: dict[str, TangleLink] = {}
        choice = draw(st.integers(0, 3))
        if choice == 0 or (choice == 1 and not tangles):
            if len(tangles) < 2:
                links[f"t{len(tangles)}"] = ROOT_LINK
        elif choice == 1:
            name = draw(st.sampled_from(sorted(tangles)))
            root, members = tangles[name]
            previous = draw(st.sets(st.sampled_from(members), min_size=1, max_size=3))
            links[name] = TangleLink(root, tuple(sorted(previous)))
        content = {"w": index, "n": len(feed.messages)}
        message = feed.append(content, timeframe=timeframe, tangles=links)
        for name, link in message.tangles.items():
            if link.is_root:
                tangles[name] = (message.id, [message.id])
            else:
                tangles[name][1].append(message.id)
        written.append(message)
    return written


@st.composite
def arrivals(draw, pool_size: int):
    """A random order of the pool cut into random batches (lists of indices)."""
    order = draw(st.permutations(range(pool_size)))
    cuts = sorted(draw(st.sets(st.integers(1, pool_size), max_size=4)) | {pool_size})
    bounds = zip([0, *cuts[:-1]], cuts, strict=True)
    return [list(order[start:end]) for start, end in bounds if end > start]


def gossip(store: FeedStore, raws: list[bytes]) -> bool:
    """Re-deliver `raws` until a round changes nothing; True if any round did."""
    changed = False
    while any(result.stored for result in store.writes.ingest(raws)):
        changed = True
    return changed


def swap_proofs(stores: list[FeedStore]) -> bool:
    """Every store offers every kept proof to every other until none is new."""
    changed = False
    while True:
        new = False
        for giver in stores:
            for proof in giver.feeds.evidence():
                raws = [message.raw for message in proof.messages]
                for taker in stores:
                    if taker is not giver and taker.writes.add_evidence(raws)[0] == "new":
                        new = True
        if not new:
            return changed
        changed = True


def ground_truth(path: Path, pool: list[Message], boundaries: dict[bytes, int]) -> FeedStore:
    """A store given, feed by feed in seq order, each feed's chain from seq 1 up to its
    boundary (or to a gap: a withheld message)."""
    by_prev: dict[tuple[bytes, bytes | None], list[Message]] = {}
    for message in {message.id: message for message in pool}.values():
        by_prev.setdefault((message.author, message.prev), []).append(message)
    chains: list[Message] = []
    for author in sorted({message.author for message in pool}):
        prev: bytes | None = None
        for seq in range(1, boundaries.get(author, 2**32)):
            following = [m for m in by_prev.get((author, prev), []) if m.seq == seq]
            # Two messages chained to one below the boundary: a fork nobody proved.
            assert len(following) <= 1, f"an unproven fork at seq {seq}"
            if not following:
                break
            chains.append(following[0])
            prev = following[0].id
    store = FeedStore(path, map_size=MAP_SIZE, views=ALL_VIEWS)
    results = store.writes.ingest([message.raw for message in chains])
    assert [r.outcome for r in results] == [Outcome.ACCEPTED] * len(results), [
        (r.outcome, r.reason, r.detail) for r in results if r.outcome is not Outcome.ACCEPTED
    ]
    return store


def expected_frontier(store: FeedStore) -> dict[bytes, int]:
    """The processed frontier the rule gives for what the store holds now: a message is
    processed once its previous one is and every message its timeframe names is, with the
    tag named; an entry naming an invalid feed at or past its boundary counts as its last
    valid seq, whatever its tag."""
    invalid = store.feeds.invalid_feeds()
    heads = {feed.author: feed.head_seq for feed in store.feeds.held()}
    done = dict.fromkeys(heads, 0)
    progress = True
    while progress:
        progress = False
        for author, head in heads.items():
            if done[author] >= head:
                continue
            message = store.feeds.get_by_seq(author, done[author] + 1)

            def met(feed: bytes, seq: int, tag: bytes) -> bool:
                end = invalid.get(feed, seq + 1) - 1
                if end < seq:
                    return done.get(feed, 0) >= end
                return done.get(feed, 0) >= seq and store.feeds.get_by_seq(feed, seq).id[:16] == tag

            if all(met(f, s, t) for f, (s, t) in message.named().items()):
                done[author] += 1
                progress = True
    return {author: seq for author, seq in done.items() if seq}


def valid_state(store: FeedStore) -> dict:
    """`state()` without what only invalid feeds have: boundaries and proofs."""
    found = state(store)
    found["feeds"] = [feed[:3] for feed in found["feeds"] if feed[1]]
    del found["evidence"]
    return found


def converge(pool: list[Message], deliveries: list[list[list[int]]], proofs_at: int) -> None:
    """Deliver; the last store takes the others' proofs before its batch `proofs_at`."""
    raws = [message.raw for message in pool]
    with tempfile.TemporaryDirectory() as tmp:
        stores = [
            FeedStore(Path(tmp) / f"node{index}", map_size=MAP_SIZE, views=ALL_VIEWS)
            for index in range(len(deliveries))
        ]
        orders = [[raws[i] for batch in batches for i in batch] for batches in deliveries]
        try:
            for number, (store, batches) in enumerate(zip(stores, deliveries, strict=True)):
                for at, batch in enumerate(batches):
                    if number == len(stores) - 1 and at == proofs_at:
                        for giver in stores[:-1]:
                            for proof in giver.feeds.evidence():
                                store.writes.add_evidence(
                                    [message.raw for message in proof.messages]
                                )
                    store.writes.ingest([raws[index] for index in batch])
                gossip(store, orders[number])
            while True:  # proofs, then gossip again, until neither changes anything
                swapped = swap_proofs(stores)
                fed = [gossip(store, order) for store, order in zip(stores, orders, strict=True)]
                if not swapped and not any(fed):
                    break
            first = state(stores[0])
            kinds = sorted(proof.kind.value for proof in stores[0].feeds.evidence())
            event(f"proofs kept: {'+'.join(kinds) or 'none'}")
            event(f"feeds cut: {len(stores[0].feeds.invalid_feeds())}")
            for store in stores:
                report = store.feeds.check()
                assert report.ok, report.problems
                assert state(store) == first
                # The processor neither stalls on a liar nor runs ahead of the rule.
                heads = {feed.author: feed.head_seq for feed in store.feeds.held()}
                processed = {
                    feed: min(seq, heads.get(feed, 0))
                    for feed, seq in store.feeds.processed_frontier().items()
                }
                assert {f: s for f, s in processed.items() if s} == expected_frontier(store)
            truth = ground_truth(Path(tmp) / "truth", pool, stores[0].feeds.invalid_feeds())
            try:
                assert truth.feeds.evidence() == [] and truth.feeds.check().ok
                assert valid_state(truth) == valid_state(stores[0])
            finally:
                truth.close()
        finally:
            for store in stores:
                store.close()


@st.composite
def scenarios(draw, max_feeds: int = 5, max_length: int = 4, nodes: int = 3):
    """(pool, each node's batches, when the last node hears the others' proofs)."""
    written = draw(worlds(max_feeds, max_length))
    withheld = draw(st.sets(st.integers(0, len(written) - 1), max_size=2))
    if draw(st.integers(0, 2)):  # mostly nothing withheld
        withheld = set()
    pool = [message for index, message in enumerate(written) if index not in withheld]
    deliveries = [draw(arrivals(len(pool))) for _ in range(nodes)]
    return pool, deliveries, draw(st.integers(0, len(deliveries[-1])))


@given(scenarios())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_nodes_converge_on_invalid_feeds_whatever_the_order(scenario):
    converge(*scenario)


@pytest.mark.slow
@given(scenarios(max_feeds=5, max_length=7, nodes=4))
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_nodes_converge_on_invalid_feeds_bigger_worlds(scenario):
    converge(*scenario)
