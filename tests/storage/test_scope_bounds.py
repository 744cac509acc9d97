"""The replication scope's bounds (storage/scope.py): no followed feed can take the scope
over. Our own feed, the feeds we follow and our groups' members come first and are never
pushed out; further hops share what room is left in turns across the feeds that introduce
them; and the scope says what it left out and why. Real stores, real signed contact
messages."""

from __future__ import annotations

import functools
import hashlib

from tanglenode.protocol.contacts import FOLLOW, contact_content
from tanglenode.storage.scope import (
    BOUND,
    CAP,
    FOLLOWED,
    GROUP,
    HOP,
    MAX_FOLLOWS_READ,
    MAX_SCOPE_FEEDS,
    OURS,
    LeftOut,
    ScopeLimits,
    Why,
)
from tanglenode.storage.store import FeedStore
from tests.factories import Feed, keypair
from tests.storage.test_scope import contact

FLOOD = MAX_SCOPE_FEEDS + 500  # the feeds the flooding feed follows: issue 41's 20,500
GROUP_ID = b"G" * 32  # the group we share with gina (its root message's id)


def stranger(n: int) -> bytes:
    """The key of the nth feed nobody here holds a message of."""
    return hashlib.sha256(b"scope-stranger-%d" % n).digest()


@functools.cache
def flooding_feed(follows: int = FLOOD) -> Feed:
    """A feed whose key sorts before every other here, following `follows` strangers, one
    signed contact message each (built once a session: 20,500 take about a second)."""
    feed = Feed("flood-17")
    for n in range(follows):
        feed.append(contact_content(stranger(n), following=True, blocking=False))
    return feed


def follower(label: str, *whom: bytes) -> Feed:
    feed = Feed(label)
    for contact_key in whom:
        feed.append(contact_content(contact_key, following=True, blocking=False))
    return feed


def node_following(tmp_path, *feeds: Feed) -> FeedStore:
    """Our store, holding `feeds` and our follow of each (in that order)."""
    store = FeedStore(tmp_path / "me", keypair=keypair("me"), map_size=2**28)
    for feed in feeds:
        store.writes.ingest([message.raw for message in feed.messages])
        store.writes.publish(contact_content(feed.public, following=True, blocking=False))
    return store


def carried_via(scope, via: bytes) -> set[bytes]:
    return {feed for feed, why in scope.feeds.items() if why.via == via}


def test_a_followed_feed_following_twenty_thousand_leaves_everyone_else_in(tmp_path):
    """Issue 41: a followed feed that sorts first and follows 20,500 feeds once took the whole
    scope, our group's member and the other followed feeds' follows with it."""
    flood = flooding_feed()
    bob = follower("bob", *(stranger(FLOOD + n) for n in range(3)))
    carol = follower("carol", stranger(FLOOD + 3), stranger(FLOOD + 4), stranger(0))
    gina = keypair("gina").public  # in a group with us; followed by nobody
    assert flood.public < min(bob.public, carol.public)  # its follows are offered first
    me = keypair("me").public
    with node_following(tmp_path, flood, bob, carol) as store:
        scope = store.feeds.computed_scope(me, 2, {gina: GROUP_ID})

        assert len(scope.feeds) <= MAX_SCOPE_FEEDS
        assert scope.feeds[me] == Why(OURS)
        for followed in (flood, bob, carol):
            assert scope.feeds[followed.public] == Why(FOLLOWED, 1)
        assert scope.feeds[gina] == Why(GROUP, 0, GROUP_ID)
        for n in range(3):
            assert scope.feeds[stranger(FLOOD + n)] == Why(HOP, 2, bob.public)
        for n in (3, 4):
            assert scope.feeds[stranger(FLOOD + n)] == Why(HOP, 2, carol.public)
        assert scope.carries(stranger(0))  # followed by both: carried once, by one of them
        # The flood is one introducer among three: its first MAX_FOLLOWS_READ contacts (in
        # key order) are read and carried (there is room), the rest unread, and said so.
        floods_follows = sorted(stranger(n) for n in range(FLOOD))
        first = set(floods_follows[:MAX_FOLLOWS_READ])
        assert carried_via(scope, flood.public) == first - carried_via(scope, carol.public)
        unread = set(floods_follows[MAX_FOLLOWS_READ:]) - {stranger(0)}  # carol's is in
        assert not any(scope.carries(feed) for feed in unread)
        assert scope.left_out == {flood.public: LeftOut(2, 0, True)}
        assert scope.left_out[flood.public].reasons == (BOUND,)

        assert store.writes.set_scope(scope)  # what was left out is kept with the scope
        assert store.feeds.scope() == scope


def test_further_hops_share_the_room_in_turns_and_the_cap_is_told(tmp_path):
    ann = follower("ann", *(stranger(n) for n in range(100)))
    ben = follower("ben", *(stranger(100 + n) for n in range(100)))
    bob = follower("bob", *(stranger(200 + n) for n in range(3)))
    me = keypair("me").public
    limits = ScopeLimits(feeds=50, follows_read=1_000)
    with node_following(tmp_path, ann, ben, bob) as store:
        scope = store.feeds.computed_scope(me, 2, None, limits)
    assert len(scope.feeds) == 50
    assert len(carried_via(scope, bob.public)) == 3  # it needs little: it gets it all
    shares = [len(carried_via(scope, feed.public)) for feed in (ann, ben)]
    assert sorted(shares) == [21, 22]  # the rest, 46 - 3, in turns: neither gets more
    assert scope.left_out == {
        ann.public: LeftOut(2, 100 - shares[0], False),
        ben.public: LeftOut(2, 100 - shares[1], False),
    }
    assert scope.left_out[ann.public].reasons == (CAP,)


def test_ours_the_followed_and_the_groups_come_first_and_are_never_pushed_out(tmp_path):
    flood = flooding_feed(200)
    bob = follower("bob", stranger(9_001))
    ann, ben = keypair("ann").public, keypair("ben").public
    groups = {ann: GROUP_ID, ben: b"H" * 32}
    me = keypair("me").public
    with node_following(tmp_path, flood, bob) as store:
        room_for_one = store.feeds.computed_scope(me, 2, groups, ScopeLimits(feeds=6))
        floods_first = min(stranger(n) for n in range(200))  # it has the first turn
        assert set(room_for_one.feeds) == {me, flood.public, bob.public, ann, ben, floods_first}
        assert room_for_one.left_out == {
            flood.public: LeftOut(2, 199, False),
            bob.public: LeftOut(2, 1, False),
        }
        no_room = store.feeds.computed_scope(me, 2, groups, ScopeLimits(feeds=2))
        assert set(no_room.feeds) == {me, flood.public}  # our follows first, in key order
        assert no_room.left_out == {
            me: LeftOut(1, 1, False),  # bob: a follow of ours past the cap
            GROUP_ID: LeftOut(0, 1, False),
            b"H" * 32: LeftOut(0, 1, False),
            flood.public: LeftOut(2, 200, False),
        }


def test_a_feed_naming_more_than_the_bound_is_read_only_up_to_it(tmp_path):
    ann = follower("ann", *(stranger(n) for n in range(10)))
    contact(ann, Feed("ann-blocked"), (False, True))  # named, not followed: read all the same
    contact(ann, Feed("ann-friend"), FOLLOW)  # twelve named, eleven followed
    me = keypair("me").public
    with node_following(tmp_path, ann) as store:
        scope = store.feeds.computed_scope(me, 2, None, ScopeLimits(follows_read=6))
        everything = store.feeds.computed_scope(me, 2, None, ScopeLimits(follows_read=12))
    assert len(carried_via(scope, ann.public)) <= 6
    assert scope.left_out == {ann.public: LeftOut(2, 0, True)}
    assert len(carried_via(everything, ann.public)) == 11 and everything.left_out == {}


def test_with_every_feed_carried_nothing_is_said_to_be_left_out(tmp_path):
    bob = follower("bob", stranger(1))
    with node_following(tmp_path, bob) as store:
        scope = store.feeds.computed_scope(keypair("me").public, None, None, ScopeLimits(feeds=1))
    assert scope.carries(bob.public) and scope.carries(stranger(1))
    assert scope.left_out == {}
