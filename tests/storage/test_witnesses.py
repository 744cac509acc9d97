"""Witnesses in the causal processor, in the corners: a scope change while candidates wait for
witnesses, a proof in the same batch as a witnessed wait, a stranger naming a message by a
tag of its own invention (storage/feeds/witnesses.py, storage/feeds/processor.py). The
ordinary cases and the property over random histories are in tests/storage/test_scope.py."""

from __future__ import annotations

import pytest

from tanglenode.protocol.contacts import contact_content
from tanglenode.storage.store import FeedStore
from tests.factories import Feed, keypair

ME = keypair("witness-me")


def scoped_store(path, *followed: Feed) -> FeedStore:
    store = FeedStore(path / "me", keypair=ME)
    for feed in followed:
        store.writes.publish(contact_content(feed.public, following=True, blocking=False))
    store.writes.set_scope(store.feeds.computed_scope(ME.public, 1))
    return store


def processed(store: FeedStore) -> set[tuple[bytes, int]]:
    return {(feed, seq) for _i, feed, seq in store.feeds.processed(0, 10_000)}


@pytest.mark.parametrize("change", ["follow another", "follow the stranger", "block it"])
def test_the_scope_changes_while_a_message_waits_for_a_witness(tmp_path, change):
    bob, stranger, dave = Feed("wc-bob"), Feed("wc-stranger"), Feed("wc-dave")
    unseen = stranger.append({"type": "post"})
    reply = bob.append({"type": "post"}, timeframe={stranger.public: unseen})
    with scoped_store(tmp_path, bob) as store:
        store.writes.ingest([reply.raw])
        assert [stall.witness for stall in store.feeds.stalls()] == [True]
        whom, blocking = {
            "follow another": (dave, False),
            "follow the stranger": (stranger, False),
            "block it": (stranger, True),
        }[change]
        store.writes.publish(
            contact_content(whom.public, following=not blocking, blocking=blocking)
        )
        assert store.writes.set_scope(store.feeds.computed_scope(ME.public, 1))
        assert store.feeds.scope().carries(whom.public) is not blocking
        stalls = [(s.needs_feed, s.witness) for s in store.feeds.stalls()]
        if change == "follow another":  # still a witness wait
            assert stalls == [(stranger.public, True)]
        elif change == "follow the stranger":  # carried now: it waits for the message itself
            assert stalls == [(stranger.public, False)] and store.feeds.witnesses_wanted() == []
            store.writes.ingest([unseen.raw])
            assert (bob.public, 1) in processed(store)
        else:  # blocked: never witnessed, the entry is met
            assert stalls == [] and (bob.public, 1) in processed(store)
        assert store.feeds.check().ok


def test_a_proof_in_the_batch_never_lets_a_witnessed_wait_go_early(tmp_path):
    """f1 names x1 (a stranger's, which had processed g1) and a2; forks of a and f at seq 2
    come in one batch. f1 must still wait for g1, which never comes."""
    feeds = sorted((Feed(f"wp-{n}") for n in range(12)), key=lambda feed: feed.public)
    x, a, f, g = feeds[:4]  # in key order: the proofs are applied a's first, then f's
    g1 = g.append({"type": "post", "never": "delivered"})
    x1 = x.append({"type": "post"}, timeframe={g.public: g1})
    a1, a2 = a.append({"n": 1}), a.append({"n": 2})
    f1 = f.append({"type": "post"}, timeframe={x.public: x1, a.public: a2})
    f2 = f.append({"n": 2})
    twin_a, twin_f = Feed(a.keypair), Feed(f.keypair)
    twin_a.messages, twin_f.messages = [a1], [f1]
    a2b, f2b = twin_a.append({"branch": 2}), twin_f.append({"branch": 2})
    with scoped_store(tmp_path, a, f, g) as store:
        store.writes.ingest([a1.raw, f1.raw, f2.raw])
        assert store.writes.add_witnesses([x1.raw])
        store.writes.ingest([a2.raw, a2b.raw, f2b.raw])  # both proofs, one transaction
        assert (f.public, 1) not in processed(store)
        assert [(s.feed, s.needs_feed) for s in store.feeds.stalls()] == [(f.public, g.public)]


@pytest.mark.parametrize("carol_first", [True, False], ids=["message-first", "witness-first"])
def test_a_tag_a_stranger_invented_holds_back_nobody_whatever_came_first(tmp_path, carol_first):
    bob, carol, liar = Feed("wl-bob"), Feed("wl-carol"), Feed("wl-liar")
    g1 = carol.append({"type": "post"})
    x1 = liar.append({"type": "post"}, timeframe={carol.public: (1, b"\x01" * 16)})
    b1 = bob.append({"type": "post"}, timeframe={liar.public: x1})
    with scoped_store(tmp_path, bob, carol) as store:
        if carol_first:
            store.writes.ingest([g1.raw])
        store.writes.ingest([b1.raw])
        assert store.writes.add_witnesses([x1.raw])
        store.writes.ingest([g1.raw])
        assert (bob.public, 1) in processed(store)
        assert store.feeds.stalls() == [] and store.feeds.suspected_forks() == []
