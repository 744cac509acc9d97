"""Finding the groups we are (or were) in among the `group` tangles a store holds."""

from tanglenode.storage.groups import state as groups
from tanglenode.storage.groups.listing import group_members, group_page, holds_a_key
from tanglenode.storage.scope import GROUP, Why
from tanglenode.storage.store import FeedStore
from tests.factories import Feed, keypair


def every_group(store, key, limit=100, **options):
    found, after = [], None
    while True:
        page, after = group_page(store, key, after, limit, **options)
        found.extend(page)
        if after is None:
            return found


def test_groups_we_were_added_to_are_listed_with_their_names_and_others_are_not(tmp_path):
    alice, bob, carol = keypair("gl-alice"), keypair("gl-bob"), keypair("gl-carol")
    with FeedStore(tmp_path / "s", keypair=alice, map_size=2**26) as store:
        club = store.writes.publish(*groups.create(alice, "club")).id
        view = groups.read_group(store, alice, club)
        store.writes.publish(*groups.add(view, alice, [bob.public]))
        store.writes.publish(
            *groups.post(groups.read_group(store, alice, club), alice, {"t": "hi"})
        )
        secret = store.writes.publish(*groups.create(alice, "alice alone")).id
        store.writes.publish("not a group", {"group": None})  # a `group` tangle of no group
        for _ in range(3):  # other tangles the scan passes over
            store.writes.publish("chat", {"chat": None})

        assert {g.group for g in every_group(store, alice)} == {club, secret}
        (listed,) = every_group(store, bob, limit=1, scan=1)
        assert (listed.group, listed.name, listed.author) == (club, "club", alice.public)
        assert (listed.members, listed.member, listed.epochs, listed.epoch) == (2, True, 1, club)
        assert listed.messages == 3 and listed.last is not None
        assert every_group(store, carol) == []
        assert not holds_a_key(store, bob, secret)

        view = groups.read_group(store, alice, club)
        store.writes.publish(*groups.exclude(view, alice, [bob.public]))
        store.writes.publish(*groups.new_epoch(groups.read_group(store, alice, club), alice))
        (was,) = every_group(store, bob)  # bob still holds the first epoch's key, no other
        assert (was.name, was.member, was.members, was.epochs, was.epoch) == (
            "club",
            False,
            1,
            1,
            club,
        )
        (now,) = [g for g in every_group(store, alice) if g.group == club]
        assert (now.member, now.members, now.epochs) == (True, 1, 2) and now.epoch != club


def test_a_group_whose_root_is_missing_is_not_listed(tmp_path):
    alice = keypair("gl-alice")
    with FeedStore(tmp_path / "a", keypair=alice, map_size=2**26) as source:
        club = source.writes.publish(*groups.create(alice, "club")).id
        source.writes.publish(*groups.post(groups.read_group(source, alice, club), alice, "x"))
        raws = source.feeds.read_feed_raw(alice.public)
    other = Feed("gl-other")  # a second feed so the store is not empty
    with FeedStore(tmp_path / "b", map_size=2**26) as store:
        store.writes.ingest([other.root("chat").raw])
        assert group_page(store, alice) == ([], None)
        store.writes.ingest(raws[:1])
        assert [g.group for g in every_group(store, alice)] == [club]


def test_the_members_of_our_groups_are_what_the_scope_carries_for_them(tmp_path):
    alice, bob, carol = keypair("gm-alice"), keypair("gm-bob"), keypair("gm-carol")
    with FeedStore(tmp_path / "s", keypair=alice, map_size=2**26) as store:
        club = store.writes.publish(*groups.create(alice, "club")).id
        store.writes.publish(
            *groups.add(groups.read_group(store, alice, club), alice, [bob.public])
        )
        other = store.writes.publish(*groups.create(alice, "others")).id
        view = groups.read_group(store, alice, other)
        store.writes.publish(*groups.add(view, alice, [carol.public]))
        members = group_members(store, alice)
        assert members == {alice.public: min(club, other), bob.public: club, carol.public: other}
        assert group_members(store, keypair("gm-stranger")) == {}  # in no group: carries none
        scope = store.feeds.computed_scope(alice.public, 1, members)
        assert scope.feeds[bob.public] == Why(GROUP, 0, club)
        view = groups.read_group(store, alice, club)
        store.writes.publish(*groups.exclude(view, alice, [bob.public]))
        store.writes.publish(*groups.new_epoch(groups.read_group(store, alice, club), alice))
        assert bob.public not in group_members(store, alice)  # excluded: no longer carried
