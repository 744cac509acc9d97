"""The store's signs of a feed or a root it may not carry (storage/sightings.py), on real
LMDB stores: what counts as a sign, and the bounds that keep each answer cheap whatever a
hostile store holds."""

from __future__ import annotations

from tanglenode.protocol.contacts import contact_content
from tanglenode.protocol.message import TangleLink
from tanglenode.storage.sightings import HELD, NAMED, WITNESS, RootClue, feed_seen, root_clue
from tanglenode.storage.store import FeedStore
from tests.factories import Feed, keypair


def store_of(path) -> FeedStore:
    return FeedStore(path / "store", keypair=keypair("sightings-me"), map_size=2**26)


def follows(author: Feed, whom: bytes):
    return author.append(contact_content(whom, following=True, blocking=False))


def test_a_feed_is_seen_by_its_messages_a_witness_or_a_contact_naming_it(tmp_path):
    held, named, stranger = Feed("sightings-held"), keypair("sightings-named"), keypair("x")
    authors = [Feed(f"sightings-author-{n}") for n in range(5)]
    with store_of(tmp_path) as store:
        store.writes.ingest([held.append("hi").raw])
        store.writes.ingest(
            [follows(author, keypair(f"other-{n}").public).raw for n, author in enumerate(authors)]
        )
        last = max(authors, key=lambda feed: feed.public)  # read last: key order
        store.writes.ingest([follows(last, named.public).raw])
        assert feed_seen(store.ctx, held.public) and store.feeds.seen(held.public)
        assert feed_seen(store.ctx, named.public)  # named by the last author's contact
        assert not feed_seen(store.ctx, stranger.public)
        assert not feed_seen(store.ctx, stranger.public, authors=len(authors))  # all read
        assert feed_seen(store.ctx, stranger.public, authors=len(authors) - 1)  # past the bound


def test_a_roots_author_comes_from_the_message_a_witness_or_what_its_replies_name(tmp_path):
    bob, dave = Feed("sightings-bob"), Feed("sightings-dave")
    root = bob.root("thread", {"text": "dinner?"})
    link = TangleLink(root.id, (root.id,))
    with store_of(tmp_path) as store:
        assert root_clue(store.ctx, root.id, "thread") == RootClue()  # nothing names it
        plain = [dave.append({"n": n}, tangles={"thread": link}) for n in range(3)]
        naming = dave.append(
            {"text": "yes"}, tangles={"thread": link}, timeframe={bob.public: root}
        )
        store.writes.ingest([message.raw for message in [*plain, naming]])
        assert root_clue(store.ctx, root.id, "thread") == RootClue(bob.public, NAMED)
        rank = sorted(m.id for m in [*plain, naming]).index(naming.id)  # rows in id order
        assert root_clue(store.ctx, root.id, "thread", members=rank) == RootClue()  # bounded
        assert root_clue(store.ctx, root.id, "thread", members=rank + 1).author == bob.public
        assert root_clue(store.ctx, root.id, "chat") == RootClue()  # another tangle's
        store.writes.ingest([root.raw])
        assert root_clue(store.ctx, root.id, "chat") == RootClue(bob.public, HELD)


def test_a_witness_kept_makes_the_author_certain(tmp_path):
    bob, dave = Feed("sightings-w-bob"), Feed("sightings-w-dave")
    root = bob.root("thread", {"text": "dinner?"})
    reply = dave.append(
        {"text": "yes"},
        tangles={"thread": TangleLink(root.id, (root.id,))},
        timeframe={bob.public: root},
    )
    with store_of(tmp_path) as store:
        me = store.keypair.public
        store.writes.publish(contact_content(dave.public, following=True, blocking=False))
        store.writes.set_scope(store.feeds.computed_scope(me, 1))
        store.writes.ingest([reply.raw])
        assert (bob.public, 1) in [(f, s) for f, s, _t in store.feeds.witnesses_wanted()]
        assert store.writes.add_witnesses([root.raw])
        assert root_clue(store.ctx, root.id, "thread") == RootClue(bob.public, WITNESS)
        assert feed_seen(store.ctx, bob.public)  # a witness of it is kept
