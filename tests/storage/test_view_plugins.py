"""A derived view is one module and one registry line: tests/storage/author_counts.py.

The store opens the table the view declares, feeds it every message stored
and cut, `tangled check` asks it, `reindex` rebuilds it, and a store that
recorded another version of it (or none: the view is newer than the store)
rebuilds it when it opens. Nothing else names the view.
"""

from __future__ import annotations

from dataclasses import replace

import lmdb
import pytest

from tanglenode.storage.feeds.derived import Table, open_tables, version_key
from tanglenode.storage.feeds.layout import MAX_NAMED_DATABASES
from tanglenode.storage.reindex import compare, reindex
from tanglenode.storage.store import FeedStore
from tests.factories import Feed
from tests.storage.author_counts import COUNTING, COUNTS, AuthorCountsView
from tests.tamper import tamper


def counts(store: FeedStore) -> dict[bytes, int]:
    with store.ctx.read() as txn:
        rows = txn.cursor(db=store.ctx.view_tables[COUNTS.name])
        return {bytes(key): int.from_bytes(value, "big") for key, value in rows}


def held(path, registry=COUNTING, **options) -> tuple[FeedStore, Feed, Feed]:
    """A store of `registry` holding 3 messages of alice's and 2 of bob's."""
    store = FeedStore(path, registry=registry, **options)
    alice, bob = Feed("counted-alice"), Feed("counted-bob")
    store.writes.ingest(
        [alice.append({"type": "post", "text": f"a{n}"}).raw for n in range(3)]
        + [bob.append({"type": "post", "text": f"b{n}"}).raw for n in range(2)]
    )
    return store, alice, bob


def test_the_store_opens_the_views_table_and_feeds_it(tmp_path):
    store, alice, bob = held(tmp_path / "store")
    with store:
        assert "author-counts" in [view.name for view in store.views]
        assert counts(store) == {alice.public: 3, bob.public: 2}
        assert store.feeds.check().ok
    with tamper(tmp_path / "store") as (txn, tables):
        assert txn.get(version_key("author-counts"), db=tables.meta) == b"1"


def test_a_proof_cuts_the_count_back(tmp_path):
    store, alice, _bob = held(tmp_path / "store")
    with store:
        twin = Feed(alice.keypair)
        twin.append({"type": "post", "text": "a0"})
        store.writes.ingest([twin.append({"type": "post", "text": "another a1"}).raw])
        assert counts(store)[alice.public] == 1  # cut back from seq 2
        assert store.feeds.check().ok


def test_check_finds_a_count_gone_wrong_and_reindex_rebuilds_it(tmp_path):
    store, alice, bob = held(tmp_path / "store")
    with store:
        with store.ctx.write() as txn:
            txn.put(alice.public, (7).to_bytes(8, "big"), db=store.ctx.view_tables[COUNTS.name])
        assert not store.feeds.check().ok
        (difference,) = compare(store.ctx, store.views, ["author-counts"])
        assert (difference.view, difference.extra, difference.missing) == ("author-counts", 1, 1)
        assert reindex(store.ctx, store.views, ["author-counts"]) == ["author-counts"]
        assert counts(store) == {alice.public: 3, bob.public: 2}
        assert compare(store.ctx, store.views, ["author-counts"]) == []


def test_a_version_bump_rebuilds_the_view_when_the_store_opens(tmp_path):
    store, alice, bob = held(tmp_path / "store")
    store.close()
    _damage(tmp_path / "store")
    FeedStore(tmp_path / "store", registry=COUNTING).close()  # the same version: kept as is
    with FeedStore(tmp_path / "store", registry=COUNTING) as store:
        assert counts(store) == {alice.public: 99}

    class AuthorCountsV2(AuthorCountsView):
        version = 2

    bumped = replace(COUNTING, views=(*COUNTING.views[:-1], AuthorCountsV2))
    seen: list[tuple[str, int]] = []
    progress = lambda phase, done: seen.append((phase, done))  # noqa: E731
    with FeedStore(tmp_path / "store", registry=bumped, progress=progress) as store:
        assert counts(store) == {alice.public: 3, bob.public: 2}
        assert store.feeds.check().ok
    assert seen == [("stored messages", 5), ("processed messages", 5)]
    with tamper(tmp_path / "store") as (txn, tables):
        assert txn.get(version_key("author-counts"), db=tables.meta) == b"2"
    with FeedStore(tmp_path / "store", registry=bumped, progress=progress) as store:
        assert len(seen) == 2  # recorded: not rebuilt again


def _damage(path) -> None:
    """Counts no message gives: what a store would hold were its rows of another layout."""
    env = lmdb.open(str(path), max_dbs=MAX_NAMED_DATABASES)
    try:
        db = open_tables(env, [AuthorCountsView])[COUNTS.name]
        with env.begin(write=True) as txn:
            txn.drop(db, delete=False)
            txn.put(Feed("counted-alice").public, (99).to_bytes(8, "big"), db=db)
    finally:
        env.close()


def test_a_store_without_the_view_builds_it_when_opened_with_it(tmp_path):
    """A view newer than the store: no version recorded, so opening builds it."""
    store, alice, bob = held(
        tmp_path / "store", registry=replace(COUNTING, views=COUNTING.views[:-1])
    )
    store.close()
    with FeedStore(tmp_path / "store", registry=COUNTING) as store:
        assert counts(store) == {alice.public: 3, bob.public: 2}
        assert store.feeds.check().ok


def test_views_declaring_one_table_with_other_flags_are_refused(tmp_path):
    class Other(AuthorCountsView):
        name = "other"
        tables = (Table(COUNTS.name, dupsort=True),)

    with pytest.raises(ValueError, match="other flags"):
        FeedStore(tmp_path / "store", registry=replace(COUNTING, views=(*COUNTING.views, Other)))
