"""Erasure and purge in real stores (storage/erasure.py, protocol/erase.py): the content goes
on every store that processes the request, the header and every link stay, each refusal is
the same everywhere, and after `compact` no byte of the content is left on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from tanglenode.protocol.contacts import contact_content
from tanglenode.protocol.erase import EraseReason, erase_content
from tanglenode.protocol.identity import feed_text
from tanglenode.storage.feeds.ingest import Outcome
from tanglenode.storage.store import FeedStore
from tanglenode.storage.tools.compact import compact
from tests.factories import keypair

ALICE, BOB, CAROL = keypair("erase-alice"), keypair("erase-bob"), keypair("erase-carol")
SECRET = "erase me: 7c1f0e5a-secret"


def open_store(path: Path, me=ALICE) -> FeedStore:
    return FeedStore(path, keypair=me, map_size=2**26)


@pytest.fixture
def alice(tmp_path):
    with open_store(tmp_path / "alice") as store:
        yield store


def on_disk(directory: Path, text: str) -> list[str]:
    """Every file under `directory` holding `text`'s bytes."""
    needle = text.encode()
    return [str(p) for p in directory.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_an_erased_post_keeps_its_header_id_and_links_and_the_feed_still_checks(alice):
    post = alice.writes.publish({"type": "post", "text": SECRET}, {"chat": None})
    reply = alice.writes.publish({"type": "post", "text": "reply"}, {"chat": post.id})
    request = alice.writes.publish(erase_content(post.seq, post.id))
    held = alice.feeds.get(post.id)
    assert held.id == post.id and held.header == post.header and not held.has_content
    assert held.content is None and alice.feeds.erased_by(post.id) == request.id
    assert alice.feeds.erase_outcome(request.id) == ""
    assert alice.feeds.get(reply.id).content["text"] == "reply"  # the link through it holds
    assert alice.feeds.check().problems == []


def test_views_forget_what_the_content_said(alice):
    own = feed_text(ALICE.public)
    about = alice.writes.publish({"type": "about", "about": own, "name": "alice-old"})
    follow = alice.writes.publish(contact_content(BOB.public, following=True, blocking=False))
    assert BOB.public in alice.feeds.stances(ALICE.public)
    assert alice.feeds.about_name(ALICE.public) == "alice-old"
    alice.writes.publish(erase_content(follow.seq, follow.id))
    alice.writes.publish(erase_content(about.seq, about.id))
    assert BOB.public not in alice.feeds.stances(ALICE.public)
    assert alice.feeds.about_name(ALICE.public) is None


@pytest.mark.parametrize(
    ("request_of", "reason"),
    [
        (lambda post, me: erase_content(me, post.id), EraseReason.SELF),
        (lambda post, me: erase_content(me + 5, post.id), EraseReason.UNKNOWN),
        (lambda post, me: erase_content(post.seq, bytes(32)), EraseReason.NOT_OWN),
        (lambda post, me: {"type": "erase", "message": post.id}, EraseReason.MALFORMED),
        (lambda post, me: {"type": "erase", "message": "text", "seq": 1}, EraseReason.MALFORMED),
    ],
)
def test_a_bad_request_is_refused_with_its_reason_and_drops_nothing(alice, request_of, reason):
    post = alice.writes.publish({"type": "post", "text": SECRET})
    request = alice.writes.publish(request_of(post, post.seq + 1))
    assert alice.feeds.erase_outcome(request.id) == reason
    assert alice.feeds.get(post.id).content["text"] == SECRET


def test_an_erase_request_cannot_be_erased(alice):
    post = alice.writes.publish({"type": "post", "text": SECRET})
    first = alice.writes.publish(erase_content(post.seq, post.id))
    second = alice.writes.publish(erase_content(first.seq, first.id))
    assert alice.feeds.erase_outcome(second.id) == EraseReason.ERASE
    assert alice.feeds.get(first.id).has_content


def test_the_request_travels_and_every_store_drops_the_content(alice, tmp_path):
    post = alice.writes.publish({"type": "post", "text": SECRET})
    request = alice.writes.publish(erase_content(post.seq, post.id))
    with open_store(tmp_path / "bob", BOB) as bob:
        # bob got the post earlier, with its content, then the request
        results = bob.writes.ingest([post.raw])
        assert results[0].outcome is Outcome.ACCEPTED and bob.feeds.get(post.id).has_content
        bob.writes.ingest([request.raw])
        assert not bob.feeds.get(post.id).has_content
        assert bob.feeds.erased_by(post.id) == request.id
        served = bob.feeds.read_feed_raw(ALICE.public)
    with open_store(tmp_path / "carol", CAROL) as carol:
        # carol meets the feed later, from bob: the header alone, then the request
        assert [r.outcome for r in carol.writes.ingest(served)] == [Outcome.ACCEPTED] * 2
        assert not carol.feeds.get(post.id).has_content
        assert carol.feeds.erased_by(post.id) == request.id
        assert carol.feeds.check().problems == []
    for name in ("bob", "carol"):
        compact(tmp_path / name, 2**26)
        assert on_disk(tmp_path / name, SECRET) == []


def test_a_purge_is_local_and_compact_leaves_no_byte(tmp_path):
    path = tmp_path / "bob"
    with open_store(tmp_path / "alice") as alice:
        posts = [alice.writes.publish({"type": "post", "text": f"{SECRET} {n}"}) for n in range(3)]
    with open_store(path, BOB) as bob:
        bob.writes.ingest([post.raw for post in posts])
        assert bob.writes.purge([posts[0].id, bytes(32)]) == [posts[0].id]
        assert bob.feeds.erased_by(posts[0].id) == b""  # purged here
        assert bob.feeds.get(posts[1].id).has_content
        assert bob.writes.purge_feed(ALICE.public) == [posts[1].id, posts[2].id]
        assert [m.has_content for m in bob.feeds.read_feed(ALICE.public)] == [False] * 3
        assert bob.feeds.check().problems == []
    compact(path, 2**26)
    assert on_disk(path, SECRET) == []
    with open_store(path, BOB) as bob:  # still whole after compact
        assert [m.id for m in bob.feeds.read_feed(ALICE.public)] == [p.id for p in posts]


def test_a_group_post_erases_like_any_other_and_its_membership_never(alice):
    from tanglenode.storage.groups import state as groups

    content, tangles = groups.create(ALICE, "club")
    group = alice.writes.publish(content, tangles)
    view = groups.read_group(alice, ALICE, group.id)
    add = alice.writes.publish(*groups.add(view, ALICE, [BOB.public]))
    view = groups.read_group(alice, ALICE, group.id)
    post = alice.writes.publish(*groups.post(view, ALICE, {"text": SECRET}))
    alice.writes.publish(erase_content(post.seq, post.id))
    refused = alice.writes.publish(erase_content(add.seq, add.id))
    assert alice.feeds.erase_outcome(refused.id) == EraseReason.STRUCTURE
    view = groups.read_group(alice, ALICE, group.id)
    rows = {row["id"]: row for row in groups.timeline(alice, view, "group", "rank")}
    assert rows[post.id]["erased"] and rows[post.id]["content"] is None
    assert not rows[group.id]["erased"]
    assert BOB.public in groups.describe(view)["members"]  # the add's content stayed
