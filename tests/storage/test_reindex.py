"""Derived views rebuilt from the messages alone equal the views kept as messages came.

A small world with every kind of derived state (timelines of the spacetime
and of tangles, their causal-time twins, joined views with a member that
waits, names feeds give themselves, a document edited concurrently by two
authors, and a feed cut back by a proof of a fork) goes to a fresh store in
random orders and batches. Each view's `content` (storage/feeds/derived.py) must
then be the same rows, byte for byte: in every store, and before and after
`reindex` throws every view away and builds it again.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tanglenode.protocol.contacts import contact_content
from tanglenode.protocol.identity import feed_text
from tanglenode.protocol.message import ROOT_LINK, TangleLink
from tanglenode.storage.feeds.ingest import Outcome
from tanglenode.storage.registry import view_names
from tanglenode.storage.reindex import UnknownViewName, affected, compare, contents, reindex
from tanglenode.storage.store import FeedStore
from tests.factories import ALL_VIEWS, Feed, keypair

MAP_SIZE = 2**26


def everything(store: FeedStore) -> list[bytes]:
    return [raw for feed in store.feeds.held() for raw in store.feeds.read_feed_raw(feed.author)]


def exchange(*stores: FeedStore) -> None:
    pool = [raw for store in stores for raw in everything(store)]
    for store in stores:
        store.writes.ingest(pool)


def world(tmp_path) -> list[bytes]:
    """Every message of the world, each author's in seq order: two stores that edit one
    document concurrently and chat, an outsider whose reply waits, and a forked feed."""
    alice = FeedStore(
        tmp_path / "alice", keypair=keypair("alice"), map_size=MAP_SIZE, views=ALL_VIEWS
    )
    bob = FeedStore(tmp_path / "bob", keypair=keypair("bob"), map_size=MAP_SIZE, views=ALL_VIEWS)
    alice.writes.publish({"type": "about", "about": feed_text(bob.keypair.public), "name": "b"})
    alice.writes.publish({"type": "about", "about": feed_text(alice.keypair.public), "name": "al"})
    alice.writes.publish(contact_content(bob.keypair.public, following=True, blocking=False))
    chat = alice.writes.publish({"type": "post", "text": "hello"}, {"chat": None})
    doc = alice.documents.create_document("notes")
    alice.documents.edit_document(doc.id, [("ins", 0, "one two three")])
    exchange(alice, bob)
    bob.writes.publish({"type": "post", "text": "hi"}, {"chat": chat.id})
    alice.documents.edit_document(doc.id, [("ins", 3, " and a half")])
    bob.documents.edit_document(doc.id, [("del", 4, 4), ("ins", 0, "[bob] ")])
    exchange(alice, bob)
    alice.documents.edit_document(doc.id, [("ins", 0, "> ")])
    exchange(alice, bob)
    pool = everything(bob)
    alice.close()
    bob.close()

    missing = Feed("hidden").append({"type": "post", "text": "never sent"})
    outsider = Feed("outsider")
    pool.append(
        outsider.append(
            {"type": "post", "text": "waits"},
            tangles={"chat": TangleLink(chat.id, (missing.id,))},
        ).raw
    )
    forker = Feed("forker")
    own = feed_text(forker.public)
    first = forker.append({"type": "about", "about": own, "name": "forker"})
    pool += [first.raw, forker.append({"type": "about", "about": own, "name": "later"}).raw]
    pool.append(forker.append(contact_content(missing.author, following=True, blocking=None)).raw)
    twin = Feed(forker.keypair)
    twin.messages = [first]
    pool.append(twin.append({"type": "post", "text": "the other branch"}).raw)
    return pool


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    return world(tmp_path_factory.mktemp("world"))


def fed(path, pool: list[bytes], seed: int) -> FeedStore:
    """A fresh store given the pool in a random order and random batches, again and again
    until nothing changes (a message whose chain was not there yet comes again), as gossip
    would."""
    store = FeedStore(path, map_size=MAP_SIZE, views=ALL_VIEWS)
    rng = random.Random(seed)
    changed = True
    while changed:
        changed = False
        shuffled = pool[:]
        rng.shuffle(shuffled)
        while shuffled:
            size = rng.randint(1, 5)
            batch, shuffled = shuffled[:size], shuffled[size:]
            changed |= any(result.stored for result in store.writes.ingest(batch))
    return store


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 2**32 - 1))
def test_every_view_rebuilt_from_the_messages_is_the_view_kept_in_any_order(
    tmp_path_factory, pool, seed
):
    store = fed(tmp_path_factory.mktemp("fed"), pool, seed)
    reference = fed(tmp_path_factory.mktemp("reference"), pool, 0)
    try:
        assert store.feeds.invalid_feeds() == {keypair("forker").public: 2}
        kept = contents(store.ctx, store.views)
        assert any(key[:1] == b"p" for key, _v in kept["joined"]), "the outsider's reply waits"
        assert all(kept.values()), "every view holds something in this world"
        assert kept == contents(reference.ctx, reference.views)  # byte for byte, any order
        assert compare(store.ctx, store.views, view_names()) == []
        assert kept == contents(store.ctx, store.views)  # `compare` wrote nothing
        assert reindex(store.ctx, store.views, view_names()) == list(view_names())
        assert contents(store.ctx, store.views) == kept
        assert store.feeds.check().ok, store.feeds.check().problems
    finally:
        store.close()
        reference.close()


def test_a_view_that_lost_a_row_differs_from_its_rebuild_until_reindexed(tmp_path, pool):
    store = fed(tmp_path / "store", pool, 1)
    try:
        with store.ctx.write() as txn:
            key, _value = next(iter(txn.cursor(db=store.ctx.view_tables[b"about-names"])))
            txn.delete(key, db=store.ctx.view_tables[b"about-names"])
        differences = compare(store.ctx, store.views, ["abouts"])
        assert [(d.view, d.extra, d.missing) for d in differences] == [("abouts", 0, 1)]
        assert "abouts view differs" in str(differences[0])
        assert not store.feeds.check().ok
        assert reindex(store.ctx, store.views, ["abouts"]) == ["abouts"]
        assert compare(store.ctx, store.views, ["abouts"]) == []
        assert store.feeds.check().ok
    finally:
        store.close()


def test_a_damaged_timeline_is_found_and_rebuilt_with_the_views_sharing_its_tables(tmp_path, pool):
    store = fed(tmp_path / "store", pool, 2)
    try:
        with store.ctx.write() as txn:  # the spacetime loses its order tree
            txn.drop(store.ctx.timeline_tables.tree, delete=False)
        assert not store.feeds.check().ok
        rebuilt = reindex(store.ctx, store.views, ["timelines"])
        assert rebuilt == ["timelines", "causal-time", "joined"]
        assert store.feeds.check().ok, store.feeds.check().problems
        assert compare(store.ctx, store.views, view_names()) == []
    finally:
        store.close()


def test_views_sharing_tables_go_together_and_an_unknown_name_is_refused(tmp_path):
    store = FeedStore(tmp_path / "store", map_size=MAP_SIZE, views=ALL_VIEWS)
    try:
        assert [v.name for v in affected(store.views, ["abouts"])] == ["abouts"]
        assert [v.name for v in affected(store.views, ["joined"])] == [
            "timelines",
            "causal-time",
            "joined",
        ]
        with pytest.raises(UnknownViewName, match="no view nope; the views: timelines"):
            affected(store.views, ["nope"])
    finally:
        store.close()


def test_the_pool_holds_what_the_world_promises(tmp_path, pool):
    """The world's fork is a fork and its document was edited by both authors."""
    store = fed(tmp_path / "store", pool, 3)
    try:
        (document,) = store.documents.held()
        text = store.documents.document_text(document.id)
        assert text.startswith("> [bob] ") and "and a half" in text
        outcomes = {r.outcome for r in store.writes.ingest(pool)}
        assert Outcome.ACCEPTED not in outcomes
    finally:
        store.close()


def test_a_forkers_other_branch_never_hides_a_message_from_the_rebuild(tmp_path):
    """x1 names the forker's y1a by tag; the store holds y1b, which names x1. By position
    alone they name each other (a cycle that would keep both, and all after x1, out of the
    rebuilt views); bound to the tag named, y1b is not what x1 named."""
    honest, forker = Feed("x-honest"), Feed("y-forker")
    y1a = forker.append({"type": "post", "text": "branch a"})
    x1 = honest.append({"type": "post", "text": "x1 names y1a"}, timeframe={forker.public: y1a})
    x2 = honest.append({"type": "post", "text": "x2"})
    x3 = honest.append({"type": "post", "text": "x3"}, tangles={"chat": ROOT_LINK})
    other = Feed(forker.keypair)
    y1b = other.append({"type": "post", "text": "branch b names x1"}, timeframe={honest.public: x1})
    store = FeedStore(tmp_path / "store", map_size=MAP_SIZE, views=ALL_VIEWS)
    try:
        store.writes.ingest([y1b.raw])
        store.writes.ingest([x1.raw, x2.raw, x3.raw])
        assert store.feeds.check().ok
        kept = contents(store.ctx, store.views)
        assert compare(store.ctx, store.views, view_names()) == []
        reindex(store.ctx, store.views, view_names())
        assert contents(store.ctx, store.views) == kept
        assert store.feeds.check().ok, store.feeds.check().problems
        spacetime = store.timelines.timeline(store.timelines.timeline_name(None))
        assert len(spacetime) == 4
    finally:
        store.close()


def ref_keyed_rows(store: FeedStore) -> dict[str, set]:
    """The ref numbers and every row keyed by them (storage/engine/ref_numbers.py), raw but for
    the timeline number each key starts with, given as the timeline's name (a rebuild numbers
    the timelines afresh)."""
    tables = store.ctx.timeline_tables
    with store.ctx.read() as txn:
        names = {bytes(v): bytes(k) for k, v in txn.cursor(db=tables.names)}
        found = {
            name: {(bytes(k), bytes(v)) for k, v in txn.cursor(db=getattr(tables, name))}
            for name in ("refs", "ref_names")
        }
        for name in ("nodes", "succ", "pending", "causal_nodes", "causal_times"):
            found[name] = {
                (names[bytes(k[:4])], bytes(k[4:]), bytes(v))
                for k, v in txn.cursor(db=getattr(tables, name))
            }
        return found


def test_a_rebuild_keeps_the_ref_numbers_and_writes_the_same_rows(tmp_path, pool):
    store = fed(tmp_path / "store", pool, 4)
    try:
        before = ref_keyed_rows(store)
        assert before["pending"], "the outsider's reply and the forker's successors wait"
        rebuilt = reindex(store.ctx, store.views, ["timelines"])
        assert rebuilt == ["timelines", "causal-time", "joined"]
        assert ref_keyed_rows(store) == before
        assert compare(store.ctx, store.views, view_names()) == []
        assert ref_keyed_rows(store) == before
    finally:
        store.close()
