"""The `about-names` index: the name a feed gives itself, kept at ingest."""

import itertools
import logging
import tempfile
from pathlib import Path

import lmdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tanglenode.protocol.identity import feed_text
from tanglenode.storage.feeds.derived import version_key
from tanglenode.storage.feeds.ingest import Outcome
from tanglenode.storage.feeds.layout import MAX_NAMED_DATABASES
from tanglenode.storage.store import FeedStore
from tanglenode.storage.views.abouts import (
    ABOUTS_DB,
    FIRST_LAYOUT_DB,
    FIRST_LAYOUT_INDEXED,
    MAX_NAME_CHARS,
    about_key,
    clean_name,
)
from tests.factories import Feed
from tests.tamper import tamper, tamper_views


def about(feed: Feed, name, whom: Feed | None = None) -> dict:
    return {"type": "about", "about": feed_text((whom or feed).public), "name": name}


def test_a_feeds_latest_own_about_names_it(store):
    alice = Feed("about-alice")
    first = alice.append(about(alice, "alice"))
    post = alice.append({"type": "post", "text": "hi"})
    store.writes.ingest([first.raw, post.raw])
    assert store.feeds.about_names() == {alice.public: "alice"}
    store.writes.ingest([alice.append(about(alice, "Alice W.")).raw])
    assert store.feeds.about_names() == {alice.public: "Alice W."}


def test_only_a_feeds_own_about_names_it(store):
    alice, mallory = Feed("about-alice"), Feed("about-mallory")
    raws = [
        mallory.append(about(mallory, "alice", whom=alice)).raw,  # an opinion of alice
        alice.append({"type": "about", "about": "alice", "name": "x"}).raw,  # not an id
        alice.append({"type": "about", "about": feed_text(alice.public), "name": 7}).raw,
        alice.append({"type": "about", "name": "no about"}).raw,
        alice.append(["about", "list"]).raw,
    ]
    store.writes.ingest(raws)
    assert store.feeds.about_names() == {}


def test_hostile_names_are_cleaned_and_bounded(store):
    alice, bob, carol = Feed("about-alice"), Feed("about-bob"), Feed("about-carol")
    store.writes.ingest(
        [
            alice.append(about(alice, "ali\nce\x1b[31m\u202e \t x")).raw,
            bob.append(about(bob, "b" * 10_000)).raw,
            carol.append(about(carol, "\x00\u200b\n ")).raw,  # nothing printable left
        ]
    )
    assert store.feeds.about_names() == {
        alice.public: "ali ce[31m x",
        bob.public: "b" * MAX_NAME_CHARS,
    }


def test_a_name_from_a_message_cut_by_a_fork_is_ignored(store):
    alice = Feed("about-alice")
    twin = Feed(alice.keypair)
    store.writes.ingest(
        [alice.append({"text": "one"}).raw, alice.append(about(alice, "alice")).raw]
    )
    assert store.feeds.about_names() == {alice.public: "alice"}
    twin.append({"text": "one"})
    forked = twin.append({"text": "another second"})
    store.writes.ingest([forked.raw])  # the same seq, another message: invalid from seq 2
    assert store.feeds.invalid_feeds() == {alice.public: 2}
    assert store.feeds.about_names() == {}


def test_the_index_survives_reopening(tmp_path):
    alice = Feed("about-alice")
    with FeedStore(tmp_path / "store") as store:
        store.writes.ingest([alice.append(about(alice, "alice")).raw])
    with FeedStore(tmp_path / "store") as store:
        assert store.feeds.about_names() == {alice.public: "alice"}


def forget_versions(txn, tables) -> None:
    """Take every view's version out of `meta`, as a store from before versions has none."""
    cursor = txn.cursor(db=tables.meta)
    keys = [bytes(key) for key in cursor.iternext(values=False)]
    for key in keys:
        if key.startswith(version_key("")):
            txn.delete(key, db=tables.meta)


def older_store(path) -> dict[bytes, str]:
    """A real store whose `about` messages came before the `about-names` table: its names
    as ingest indexed them, then the table emptied and no view's version recorded."""
    alice, bob, carol = Feed("about-alice"), Feed("about-bob"), Feed("about-carol")
    alice.append(about(alice, "al"))
    for n in range(5):
        alice.append({"type": "post", "text": f"post {n}"})
    alice.append(about(alice, "alice"))
    bob.append(about(bob, "bob"))
    carol.append({"type": "post", "text": "about nothing"})
    carol.append(about(carol, "carol", whom=alice))  # an opinion of alice, no name of carol's
    with FeedStore(path) as store:
        store.writes.ingest([m.raw for m in alice.messages + bob.messages + carol.messages])
        names = store.feeds.about_names()
        assert names == {alice.public: "alice", bob.public: "bob"}
    with tamper_views(path) as (txn, tables, views):
        assert txn.get(version_key("abouts"), db=tables.meta) == b"2"  # a new store's
        txn.drop(views[ABOUTS_DB], delete=False)
        forget_versions(txn, tables)
    return names


def test_a_store_from_before_about_names_is_indexed_when_opened(tmp_path):
    names = older_store(tmp_path / "store")
    with FeedStore(tmp_path / "store") as store:
        assert store.feeds.about_names() == names
        assert store.feeds.check().ok
    with tamper(tmp_path / "store") as (txn, tables):
        assert txn.get(version_key("abouts"), db=tables.meta) == b"2"
        assert txn.get(version_key("timelines"), db=tables.meta) == b"1"


def test_a_store_from_before_versions_rebuilds_the_names_and_contacts_alone(tmp_path, caplog):
    older_store(tmp_path / "store")
    seen: list[tuple[str, int]] = []
    with caplog.at_level(logging.INFO, logger="tanglenode.storage.reindex"):
        FeedStore(tmp_path / "store", progress=lambda phase, done: seen.append((phase, done)))
    rebuilt = [
        r.getMessage() for r in caplog.records if r.getMessage().startswith("rebuilding the")
    ]
    assert rebuilt == [
        # the joined view is at 2 too (tangle-state keyed by numbers, storage/views/joined.py)
        "rebuilding the joined view: the store holds version 1, this build keeps 2",
        "rebuilding the abouts view: the store holds version 1, this build keeps 2",
        "rebuilding the contacts view: the store holds version 1, this build keeps 2",
    ]
    assert seen == [("stored messages", 10), ("processed messages", 10)]


def test_the_rebuild_runs_once(tmp_path):
    names = older_store(tmp_path / "store")
    FeedStore(tmp_path / "store").close()
    (alice,) = [author for author, name in names.items() if name == "alice"]
    with tamper_views(tmp_path / "store") as (txn, _tables, views):
        txn.delete(about_key(alice, 7), db=views[ABOUTS_DB])  # its version recorded: kept
    with FeedStore(tmp_path / "store") as store:
        assert store.feeds.about_names()[alice] == "al"  # her seq 1, the only row left
        assert not store.feeds.check().ok


def test_a_view_of_another_version_is_rebuilt_when_opened(tmp_path):
    """A build whose view declares another version than the store recorded (an upgrade,
    or a build gone back) rebuilds it: rows another layout wrote are never read."""
    names = older_store(tmp_path / "store")
    FeedStore(tmp_path / "store").close()
    (alice,) = [author for author, name in names.items() if name == "alice"]
    with tamper_views(tmp_path / "store") as (txn, tables, views):
        txn.put(about_key(alice, 99), b"another layout", db=views[ABOUTS_DB])
        txn.put(version_key("abouts"), b"3", db=tables.meta)
    with FeedStore(tmp_path / "store") as store:
        assert store.feeds.about_names() == names
        assert store.feeds.check().ok
    with tamper(tmp_path / "store") as (txn, tables):
        assert txn.get(version_key("abouts"), db=tables.meta) == b"2"


def test_a_cut_feed_is_named_by_the_about_it_still_holds(tmp_path):
    """At ingest as after a rebuild (which reads only the messages held, as the
    import of its bundle would): the about below the boundary names the feed."""
    alice = Feed("about-alice")
    twin = Feed(alice.keypair)
    with FeedStore(tmp_path / "store") as store:
        store.writes.ingest(
            [alice.append(about(alice, "al")).raw, alice.append(about(alice, "alice")).raw]
        )
        twin.append(about(twin, "al"))
        store.writes.ingest([twin.append({"text": "another second"}).raw])  # invalid from seq 2
        assert store.feeds.about_names() == {alice.public: "al"}  # seq 2's row is cut
    with tamper_views(tmp_path / "store") as (txn, tables, views):
        txn.drop(views[ABOUTS_DB], delete=False)
        forget_versions(txn, tables)
    with FeedStore(tmp_path / "store") as store:
        assert store.feeds.about_names() == {alice.public: "al"}
        assert store.feeds.check().ok


def forked_world() -> tuple[Feed, Feed, list[bytes], bytes]:
    """alice: 1 post, 2 about "alice", 3 post, 4 about "bob"; a twin of her seq 3 (an
    about "eve") cuts her from seq 3. bob names himself at seq 1, and stays valid."""
    alice, bob = Feed("about-alice"), Feed("about-bob")
    twin = Feed(alice.keypair)
    for feed in (alice, twin):
        feed.append({"type": "post", "text": "one"})
        feed.append(about(feed, "alice"))
    alice.append({"type": "post", "text": "three"})
    alice.append(about(alice, "bob"))
    forked = twin.append(about(twin, "eve"))
    bob.append(about(bob, "bob"))
    bob.append({"type": "post", "text": "hi"})
    return alice, bob, [m.raw for m in alice.messages + bob.messages], forked.raw


def test_a_fork_found_after_a_later_about_names_the_feed_as_one_found_before(open_store):
    alice, bob, raws, twin = forked_world()
    late, early = open_store("late"), open_store("early")
    late.writes.ingest(raws)  # alice 1-4, then the twin: the fork is found, 3 and 4 cut
    late.writes.ingest([twin])
    early.writes.ingest([*raws[:2], twin])  # alice 1-2, her twin 3, then her 3 (the fork) and 4
    early.writes.ingest(raws[2:])
    assert late.feeds.invalid_feeds() == early.feeds.invalid_feeds() == {alice.public: 3}
    assert (
        late.feeds.about_names()
        == early.feeds.about_names()
        == {alice.public: "alice", bob.public: "bob"}
    )
    assert late.feeds.check().ok and early.feeds.check().ok


def test_one_feeds_name_is_read_by_one_seek(open_store):
    alice, bob, raws, twin = forked_world()
    store = open_store()
    store.writes.ingest(raws)
    assert store.feeds.about_name(alice.public) == "bob"  # valid: its last row
    store.writes.ingest([twin])
    carol = Feed("about-carol")
    store.writes.ingest([carol.append({"type": "post", "text": "no name"}).raw])
    names = store.feeds.about_names()
    for feed in (alice, bob, carol, Feed("about-nobody")):
        assert store.feeds.about_name(feed.public) == names.get(feed.public)
    assert store.feeds.about_name(alice.public) == "alice"  # cut at 3: seq 2's row


def deliver(store: FeedStore, raws: list[bytes]) -> None:
    """Each message as it comes, then again until nothing is accepted (gossip rounds)."""
    for raw in raws:
        store.writes.ingest([raw])
    while any(r.outcome is Outcome.ACCEPTED for r in store.writes.ingest(raws)):
        pass


@settings(max_examples=40, deadline=None)
@given(order=st.permutations(range(7)))
def test_any_arrival_order_gives_the_same_names(order):
    alice, bob, raws, twin = forked_world()
    pool = [*raws, twin]
    with tempfile.TemporaryDirectory() as path, FeedStore(Path(path), map_size=2**24) as store:
        deliver(store, [pool[index] for index in order])
        assert store.feeds.invalid_feeds() == {alice.public: 3}
        assert store.feeds.about_names() == {alice.public: "alice", bob.public: "bob"}
        assert store.feeds.about_name(alice.public) == "alice"
        assert store.feeds.check().ok


def test_a_fork_cuts_the_name_back_alike_in_every_order_and_spares_who_named_it(open_store):
    """alice signs two seq 2s ("ally" and "al"), bob names the first: every order cuts
    alice from 2 only; alice keeps the name of her seq 1 and bob keeps his."""
    alice, bob = Feed("about-alice"), Feed("about-bob")
    alice.append(about(alice, "alice"))
    ally = alice.append(about(alice, "ally"))
    twin = Feed(alice.keypair)
    twin.messages = alice.messages[:1]
    twin.append(about(alice, "al"))
    bob.append(about(bob, "bob"), timeframe={alice.public: ally})
    raws = [m.raw for m in alice.messages + twin.messages[1:] + bob.messages]
    for index, order in enumerate(itertools.permutations(raws)):
        store = open_store(f"order-{index}")
        deliver(store, list(order))
        assert store.feeds.invalid_feeds() == {alice.public: 2}
        assert store.feeds.about_names() == {alice.public: "alice", bob.public: "bob"}, index
        assert store.feeds.check().ok


def test_a_store_with_the_first_layout_is_indexed_anew_and_the_old_table_dropped(tmp_path):
    """A development store of the unreleased first layout (author -> seq + name, one row
    a feed): its rows are never read as rows of `about-names`; its names are indexed anew."""
    names = older_store(tmp_path / "store")
    (alice,) = [author for author, name in names.items() if name == "alice"]
    env = lmdb.open(str(tmp_path / "store"), max_dbs=MAX_NAMED_DATABASES)
    with env.begin(write=True) as txn:
        first = env.open_db(FIRST_LAYOUT_DB, txn=txn)
        txn.put(alice, (7).to_bytes(8, "big") + b"alice", db=first)
        txn.put(FIRST_LAYOUT_INDEXED, b"1", db=env.open_db(b"meta", txn=txn))
    env.close()
    with FeedStore(tmp_path / "store") as store:
        assert store.feeds.about_names() == names
        assert store.feeds.check().ok
    with tamper(tmp_path / "store") as (txn, tables):
        assert txn.get(FIRST_LAYOUT_DB) is None
        assert txn.get(FIRST_LAYOUT_INDEXED, db=tables.meta) is None
        assert txn.get(version_key("abouts"), db=tables.meta) == b"2"


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
