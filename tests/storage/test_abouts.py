"""The `abouts` index: the name a feed gives itself, kept at ingest."""

import pytest

from tanglenode.protocol.identity import feed_text
from tanglenode.storage.abouts import MAX_NAME_CHARS, clean_name
from tanglenode.storage.store import FeedStore
from tests.factories import Feed


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
