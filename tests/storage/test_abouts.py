"""The `abouts` index: the name a feed gives itself, kept at ingest."""

import pytest

from tanglenode.protocol.identity import feed_text
from tanglenode.storage.abouts import (
    ABOUTS_INDEXED,
    MAX_NAME_CHARS,
    about_row,
    backfill_abouts,
    clean_name,
)
from tanglenode.storage.store import FeedStore
from tests.factories import Feed
from tests.tamper import tamper


def about(feed: Feed, name, whom: Feed | None = None) -> dict:
    return {"type": "about", "about": feed_text((whom or feed).public), "name": name}


def test_a_feeds_latest_own_about_names_it(store):
    alice = Feed("about-alice")
    first = alice.append(about(alice, "alice"))
    post = alice.append({"type": "post", "text": "hi"})
    store.ingest([first.raw, post.raw])
    assert store.about_names() == {alice.public: "alice"}
    store.ingest([alice.append(about(alice, "Alice W.")).raw])
    assert store.about_names() == {alice.public: "Alice W."}


def test_only_a_feeds_own_about_names_it(store):
    alice, mallory = Feed("about-alice"), Feed("about-mallory")
    raws = [
        mallory.append(about(mallory, "alice", whom=alice)).raw,  # an opinion of alice
        alice.append({"type": "about", "about": "alice", "name": "x"}).raw,  # not an id
        alice.append({"type": "about", "about": feed_text(alice.public), "name": 7}).raw,
        alice.append({"type": "about", "name": "no about"}).raw,
        alice.append(["about", "list"]).raw,
    ]
    store.ingest(raws)
    assert store.about_names() == {}


def test_hostile_names_are_cleaned_and_bounded(store):
    alice, bob, carol = Feed("about-alice"), Feed("about-bob"), Feed("about-carol")
    store.ingest(
        [
            alice.append(about(alice, "ali\nce\x1b[31m\u202e \t x")).raw,
            bob.append(about(bob, "b" * 10_000)).raw,
            carol.append(about(carol, "\x00\u200b\n ")).raw,  # nothing printable left
        ]
    )
    assert store.about_names() == {alice.public: "ali ce[31m x", bob.public: "b" * MAX_NAME_CHARS}


def test_a_name_from_a_message_cut_by_a_fork_is_ignored(store):
    alice = Feed("about-alice")
    twin = Feed(alice.keypair)
    store.ingest([alice.append({"text": "one"}).raw, alice.append(about(alice, "alice")).raw])
    assert store.about_names() == {alice.public: "alice"}
    twin.append({"text": "one"})
    forked = twin.append({"text": "another second"})
    store.ingest([forked.raw])  # the same seq, another message: invalid from seq 2
    assert store.invalid_feeds() == {alice.public: 2}
    assert store.about_names() == {}


def test_the_index_survives_reopening(tmp_path):
    alice = Feed("about-alice")
    with FeedStore(tmp_path / "store") as store:
        store.ingest([alice.append(about(alice, "alice")).raw])
    with FeedStore(tmp_path / "store") as store:
        assert store.about_names() == {alice.public: "alice"}


def older_store(path) -> dict[bytes, str]:
    """A real store whose `about` messages came before the `abouts` table: its names
    as ingest indexed them, then the table emptied and the marker gone."""
    alice, bob, carol = Feed("about-alice"), Feed("about-bob"), Feed("about-carol")
    alice.append(about(alice, "al"))
    for n in range(5):
        alice.append({"type": "post", "text": f"post {n}"})
    alice.append(about(alice, "alice"))
    bob.append(about(bob, "bob"))
    carol.append({"type": "post", "text": "about nothing"})
    carol.append(about(carol, "carol", whom=alice))  # an opinion of alice, no name of carol's
    with FeedStore(path) as store:
        store.ingest([m.raw for m in alice.messages + bob.messages + carol.messages])
        names = store.about_names()
        assert names == {alice.public: "alice", bob.public: "bob"}
    with tamper(path) as (txn, tables):
        assert txn.get(ABOUTS_INDEXED, db=tables.meta) == b"1"  # a new store is marked
        txn.drop(tables.abouts, delete=False)
        txn.delete(ABOUTS_INDEXED, db=tables.meta)
    return names


def test_a_store_from_before_abouts_is_indexed_when_opened(tmp_path):
    names = older_store(tmp_path / "store")
    with FeedStore(tmp_path / "store") as store:
        assert store.about_names() == names
        assert store.check().ok
    with tamper(tmp_path / "store") as (txn, tables):
        assert txn.get(ABOUTS_INDEXED, db=tables.meta) == b"1"


def test_the_backfill_runs_once(tmp_path):
    names = older_store(tmp_path / "store")
    FeedStore(tmp_path / "store").close()
    (alice,) = [author for author, name in names.items() if name == "alice"]
    with tamper(tmp_path / "store") as (txn, tables):
        txn.delete(alice, db=tables.abouts)  # marked done: not indexed again
    with FeedStore(tmp_path / "store") as store:
        assert alice not in store.about_names()
        assert not store.check().ok


def test_a_backfill_cut_short_is_done_at_the_next_open(tmp_path):
    names = older_store(tmp_path / "store")
    with tamper(tmp_path / "store") as (txn, tables):  # one batch of two commits, then a crash
        assert backfill_abouts(txn, tables, b"", limit=2) is not None
        assert txn.get(ABOUTS_INDEXED, db=tables.meta) is None
    with FeedStore(tmp_path / "store") as store:
        assert store.about_names() == names


def test_the_backfill_goes_batch_by_batch_and_marks_the_last(tmp_path):
    names = older_store(tmp_path / "store")
    start, batches = b"", 0
    while start is not None:
        with tamper(tmp_path / "store") as (txn, tables):
            start = backfill_abouts(txn, tables, start, limit=3)
            batches += 1
            marked = txn.get(ABOUTS_INDEXED, db=tables.meta) is not None
            assert marked == (start is None)
    assert batches == 4  # 10 messages, 3 a batch
    with FeedStore(tmp_path / "store") as store:
        assert store.about_names() == names


def test_the_backfill_never_takes_a_name_back(tmp_path):
    """A newer name indexed beside the backfill (by a node running) stays."""
    names = older_store(tmp_path / "store")
    (alice,) = [author for author, name in names.items() if name == "alice"]
    with tamper(tmp_path / "store") as (txn, tables):
        txn.put(alice, about_row(99, "newer"), db=tables.abouts)
    with FeedStore(tmp_path / "store") as store:
        assert store.about_names()[alice] == "newer"


def test_a_cut_feed_is_named_by_the_about_it_still_holds(tmp_path):
    """As the import of its bundle would: the backfill reads only the messages held."""
    alice = Feed("about-alice")
    twin = Feed(alice.keypair)
    with FeedStore(tmp_path / "store") as store:
        store.ingest(
            [alice.append(about(alice, "al")).raw, alice.append(about(alice, "alice")).raw]
        )
        twin.append(about(twin, "al"))
        store.ingest([twin.append({"text": "another second"}).raw])  # invalid from seq 2
        assert store.about_names() == {}  # the row names alice by seq 2, cut
    with tamper(tmp_path / "store") as (txn, tables):
        txn.drop(tables.abouts, delete=False)
        txn.delete(ABOUTS_INDEXED, db=tables.meta)
    with FeedStore(tmp_path / "store") as store:
        assert store.about_names() == {alice.public: "al"}
        assert store.check().ok


@pytest.mark.parametrize(
    ("text", "cleaned"),
    [
        ("alice", "alice"),
        ("  two   words ", "two words"),
        ("line\nbreak\r\n", "line break"),
        ("bidi\u202eevil\u2066", "bidievil"),
        ("zero\u200bwidth", "zerowidth"),
        ("tab\there", "tab here"),
        ("\x07bell\x7f", "bell"),
        ("émile 名前", "émile 名前"),
        ("x" * 1000, "x" * MAX_NAME_CHARS),
    ],
)
def test_clean_name(text, cleaned):
    assert clean_name(text) == cleaned
