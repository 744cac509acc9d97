"""Excluding from a group: the exclusion and the new epoch, signed together (`groups.exclusion`).

The pair must give what publishing the exclusion, reading the group back and
opening a new epoch gave (the two-step way, kept here as the reference), but
in one transaction: both stored or neither.
"""

import pytest

from tanglenode.protocol.groups import GroupContent, Kind, open_message
from tanglenode.storage.groups import state as groups
from tanglenode.storage.store import FeedStore
from tests.factories import keypair

ALICE, BOB, CAROL, DAVE = (keypair(f"gx-{name}") for name in ("alice", "bob", "carol", "dave"))


def a_club(store: FeedStore, members) -> bytes:
    club = store.writes.publish(*groups.create(ALICE, "club")).id
    store.writes.publish(*groups.add(groups.read_group(store, ALICE, club), ALICE, members))
    return club


def kept(store: FeedStore, epoch: bytes) -> set[bytes]:
    """The members a new epoch's init lists, opened with the key sealed to ALICE."""
    view = groups.read_group(store, ALICE, store.feeds.get(epoch).tangles["group"].root)
    private = open_message(
        GroupContent.from_content(store.feeds.get(epoch).content), view.keys[epoch]
    )
    assert private.kind is Kind.INIT
    return set(private.members)


@pytest.mark.parametrize(
    "excluded",
    [
        [BOB.public],
        [BOB.public, CAROL.public],
        [BOB.public, DAVE.public],  # DAVE is no member: the exclusion is left out, all are kept
    ],
    ids=["one", "two", "a non-member too"],
)
def test_the_pair_keeps_whom_the_two_step_way_kept(tmp_path, excluded):
    found = []
    for way in ("two steps", "together"):
        with FeedStore(tmp_path / way, keypair=ALICE, map_size=2**26) as store:
            club = a_club(store, [BOB.public, CAROL.public])
            view = groups.read_group(store, ALICE, club)
            if way == "two steps":
                exclusion = store.writes.publish(*groups.exclude(view, ALICE, excluded))
                after = groups.read_group(store, ALICE, club)
                epoch = store.writes.publish(*groups.new_epoch(after, ALICE))
            else:
                exclusion, epoch = store.writes.publish_batch(
                    groups.exclusion(view, ALICE, excluded), whole=True
                )
            assert epoch.tangles["group"].previous == (exclusion.id,)  # it follows the exclusion
            assert epoch.seq == exclusion.seq + 1
            state = groups.read_group(store, ALICE, club).state
            assert state.current_epoch == epoch.id and epoch.id in state.valid
            found.append((kept(store, epoch.id), state.members, exclusion.id in state.valid))
            assert store.feeds.check().ok
    assert found[0] == found[1]


def test_excluding_ourselves_signs_nothing(tmp_path):
    """No epoch could follow (we would not be in it): refused before the exclusion is signed,
    where the two-step way stored the exclusion and then failed."""
    with FeedStore(tmp_path / "s", keypair=ALICE, map_size=2**26) as store:
        club = a_club(store, [BOB.public])
        view = groups.read_group(store, ALICE, club)
        with pytest.raises(groups.GroupError):
            groups.exclusion(view, ALICE, [ALICE.public])
        assert store.feeds.frontier()[ALICE.public] == 2
