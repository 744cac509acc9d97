"""The invites a node keeps (storage/invites.py): spent and followed back in one transaction,
every refusal leaving the store as it was."""

from __future__ import annotations

import pytest

from tanglenode.protocol.contacts import contact_content
from tanglenode.protocol.invite import Refusal, secret_hash
from tanglenode.storage.invites import (
    KEEP_CLOSED_SECONDS,
    MAX_OPEN,
    InviteNotFound,
    InviteRefused,
    TooManyInvites,
)
from tanglenode.storage.store import FeedStore
from tests.factories import keypair

NOW = 1_800_000_000.0
ME, NEWCOMER, OTHER = keypair("inviter"), keypair("newcomer"), keypair("other")


@pytest.fixture
def store(tmp_path):
    with FeedStore(tmp_path / "s", keypair=ME, map_size=2**26) as opened:
        yield opened


def redeem(store: FeedStore, secret: bytes, who: bytes = NEWCOMER.public, now=NOW, all=False):
    with store.writes.publishing() as session:
        return store.invites.redeem(session, secret_hash(secret), who, now, all)


def follows(store: FeedStore, feed: bytes) -> bool:
    stance = store.feeds.stances(ME.public).get(feed)
    return stance is not None and stance.follows


def own_seq(store: FeedStore) -> int:
    return store.feeds.frontier().get(ME.public, 0)


def test_a_redemption_spends_a_use_and_follows_back_in_one_transaction(store):
    store.invites.create(secret_hash(b"a" * 32), NOW, uses=2, expires=None, follow_back=True)
    done = redeem(store, b"a" * 32)
    assert done.follows_back and done.followed is not None
    assert done.invite.left == 1 and done.invite.by == (NEWCOMER.public,)
    assert follows(store, NEWCOMER.public) and own_seq(store) == 1
    [kept] = store.invites.listing()
    assert kept.left == 1 and kept.state(NOW) == "open"


def test_a_retry_by_the_same_redeemer_spends_nothing_and_publishes_nothing(store):
    store.invites.create(secret_hash(b"a" * 32), NOW, uses=1, expires=None, follow_back=True)
    redeem(store, b"a" * 32)
    again = redeem(store, b"a" * 32)  # its answer was lost: asked again
    assert again.follows_back and again.followed is None and again.invite.left == 0
    assert own_seq(store) == 1
    with pytest.raises(InviteRefused) as refused:
        redeem(store, b"a" * 32, OTHER.public)
    assert refused.value.refusal is Refusal.USED_UP


def test_no_follow_back_unless_the_community_setting_says_so(store):
    store.invites.create(secret_hash(b"a" * 32), NOW, uses=5, expires=None, follow_back=False)
    done = redeem(store, b"a" * 32)
    assert not done.follows_back and own_seq(store) == 0 and not follows(store, NEWCOMER.public)
    pub = redeem(store, b"a" * 32, OTHER.public, all=True)
    assert pub.follows_back and follows(store, OTHER.public)


def test_a_feed_followed_already_is_not_followed_again(store):
    store.writes.publish(contact_content(NEWCOMER.public, following=True, blocking=False))
    store.invites.create(secret_hash(b"a" * 32), NOW, uses=1, expires=None, follow_back=True)
    done = redeem(store, b"a" * 32)
    assert done.follows_back and done.followed is None and own_seq(store) == 1


@pytest.mark.parametrize(
    ("secret", "who", "now", "refusal"),
    [
        (b"w" * 32, NEWCOMER.public, NOW, Refusal.UNKNOWN),
        (b"a" * 32, NEWCOMER.public, NOW + 3601, Refusal.EXPIRED),
        (b"a" * 32, ME.public, NOW, Refusal.OWN),
        (b"r" * 32, NEWCOMER.public, NOW, Refusal.REVOKED),
        (b"a" * 32, OTHER.public, NOW, Refusal.BLOCKED),
    ],
)
def test_each_refusal_writes_nothing(store, secret, who, now, refusal):
    store.writes.publish(contact_content(OTHER.public, following=False, blocking=True))
    store.invites.create(secret_hash(b"a" * 32), NOW, uses=1, expires=NOW + 3600, follow_back=True)
    store.invites.create(secret_hash(b"r" * 32), NOW, uses=1, expires=None, follow_back=True)
    store.invites.revoke(_id(store, b"r" * 32), NOW)
    before = ([(i.id, i.left, i.by) for i in store.invites.listing()], own_seq(store))
    with pytest.raises(InviteRefused) as refused:
        redeem(store, secret, who, now)
    assert refused.value.refusal is refusal
    assert ([(i.id, i.left, i.by) for i in store.invites.listing()], own_seq(store)) == before


def _id(store: FeedStore, secret: bytes) -> str:
    [found] = [i.id for i in store.invites.listing() if i.hashed == secret_hash(secret)]
    return found


def test_revoke_names_one_invite_by_a_prefix_of_its_id(store):
    store.invites.create(secret_hash(b"a" * 32), NOW, uses=1, expires=None, follow_back=True)
    ident = _id(store, b"a" * 32)
    for bad in ("abc", "zzzzzzzz"):
        with pytest.raises(InviteNotFound):
            store.invites.revoke(bad, NOW)
    assert store.invites.revoke(ident[:5], NOW).revoked == NOW
    assert store.invites.revoke(ident, NOW + 5).revoked == NOW  # the first time stays
    assert store.invites.listing()[0].state(NOW) == "revoked"


def test_open_invites_are_bounded_and_closed_ones_go_after_a_while(store):
    for n in range(MAX_OPEN):
        store.invites.create(
            secret_hash(n.to_bytes(32)), NOW, uses=1, expires=NOW + 10, follow_back=True
        )
    with pytest.raises(TooManyInvites):
        store.invites.create(secret_hash(b"x" * 32), NOW, uses=1, expires=None, follow_back=True)
    later = NOW + 10 + KEEP_CLOSED_SECONDS  # all expired long enough: dropped on the next create
    store.invites.create(secret_hash(b"x" * 32), later, uses=1, expires=None, follow_back=True)
    assert [i.id for i in store.invites.listing()] == [_id(store, b"x" * 32)]


def test_invites_survive_reopening_the_store(tmp_path):
    with FeedStore(tmp_path / "s", keypair=ME, map_size=2**26) as store:
        store.invites.create(secret_hash(b"a" * 32), NOW, uses=3, expires=None, follow_back=True)
        redeem(store, b"a" * 32)
    with FeedStore(tmp_path / "s", keypair=ME, map_size=2**26) as store:
        [kept] = store.invites.listing()
        assert (kept.left, kept.by) == (2, (NEWCOMER.public,))
