"""The group timeline's watermark: what no current member can change any more."""

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from tanglenode.storage.groups import state as groups
from tanglenode.storage.store import FeedStore
from tanglenode.storage.views.timelines import timeline_name
from tests.factories import keypair


def sync(source: FeedStore, target: FeedStore) -> None:
    """Hand `target` everything `source` has that it lacks, each feed in order."""
    have = target.feeds.frontier()
    for feed, seq in source.feeds.frontier().items():
        if seq > have.get(feed, 0):
            target.writes.ingest(source.feeds.read_feed_raw(feed, have.get(feed, 0) + 1, 10_000))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32))
def test_a_final_group_position_never_changes(tmp_path_factory, seed):
    rng = random.Random(seed)
    directory = tmp_path_factory.mktemp("groupfinal")
    keys = {name: keypair(f"gf-{name}") for name in ("alice", "bob", "carol")}
    stores = {
        name: FeedStore(directory / name, keypair=key, map_size=2**26) for name, key in keys.items()
    }
    try:
        alice = stores["alice"]
        root = alice.writes.publish(*groups.create(keys["alice"], "club")).id
        view = groups.read_group(alice, keys["alice"], root)
        alice.writes.publish(
            *groups.add(view, keys["alice"], [keys["bob"].public, keys["carol"].public])
        )
        for name in ("bob", "carol"):
            sync(alice, stores[name])
        reported: list[list[bytes]] = []
        timeline = timeline_name(root, "group")
        for _ in range(25):
            if rng.random() < 0.5:
                name = rng.choice(list(stores))
                store = stores[name]
                view = groups.read_group(store, keys[name], root)
                store.writes.publish(*groups.post(view, keys[name], {"from": name}))
            else:
                source, target = rng.sample(list(stores.values()), 2)
                sync(source, target)
            order = [msg_id for _rank, msg_id in alice.timelines.timeline(timeline)]
            for prefix in reported:
                assert order[: len(prefix)] == prefix
            final = groups.final(alice, groups.read_group(alice, keys["alice"], root))
            reported.append(order[:final])
        assert len(reported[-1]) >= 2  # the init and the add are final by now
        for source in stores.values():  # full exchange: everyone holds every message
            for target in stores.values():
                sync(source, target)
        views = [groups.read_group(stores[n], keys[n], root) for n in stores]
        described = [groups.describe(view) for view in views]
        assert all(d == described[0] for d in described)  # one state, whatever the arrivals
    finally:
        for store in stores.values():
            store.close()
