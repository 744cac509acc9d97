"""`check` must notice when any index disagrees with the stored messages."""

import pytest

from tanglenode.protocol.identity import feed_text
from tanglenode.protocol.message import TangleLink
from tanglenode.storage.feeds.bodies import ARRIVAL
from tanglenode.storage.feeds.layout import feed_key, head_value, tangle_key
from tanglenode.storage.feeds.stored_form import verbatim
from tanglenode.storage.views.abouts import ABOUTS_DB, about_key
from tests.factories import Feed
from tests.tamper import tamper_views


@pytest.fixture
def populated(store):
    """A store with two feeds, a tangle with a merge, and one fork."""
    alice, bob, twin = Feed("alice"), Feed("bob"), Feed("bob")
    root = alice.root("chat")
    a2 = alice.append(tangles={"chat": TangleLink(root.id, (root.id,))})
    b1 = bob.append(tangles={"chat": TangleLink(root.id, (root.id,))})
    alice.append(tangles={"chat": TangleLink(root.id, (a2.id, b1.id))})
    store.writes.ingest([m.raw for m in alice.messages + bob.messages])
    store.writes.ingest([twin.append("fork").raw])
    return store, alice, bob, root


@pytest.fixture
def corrupt(open_store):
    """Close the store, damage it through its own tables (`fn(txn, tables, view_tables)`),
    reopen it."""

    def damage(store, fn):
        store.close()
        with tamper_views(store.path) as (txn, tables, views):
            fn(txn, tables, views)
        return open_store(store.path.name, create=False)

    return damage


def test_a_healthy_store_checks_clean(populated):
    store, *_ = populated
    report = store.feeds.check()
    assert report.ok, report.problems
    # bob forked at seq 1: his feed is cut to nothing, the pair kept as evidence.
    assert (report.messages, report.feeds, report.evidence) == (3, 1, 2)


def test_a_tampered_message_fails_its_signature(populated, corrupt):
    store, alice, _, _ = populated
    message = alice.messages[1]
    tampered = bytearray(message.raw)
    tampered[-10] ^= 0xFF
    position = feed_key(alice.public, 2)
    stored = verbatim(bytes(tampered))
    store = corrupt(
        store, lambda txn, t, v: txn.put(t.bodies.arrival(txn, position), stored, db=t.messages)
    )
    assert any("bad-signature" in p for p in store.feeds.check().problems)


def test_a_message_stored_out_of_place_is_found(populated, corrupt):
    store, alice, _, _ = populated
    misplaced = verbatim(alice.messages[0].raw)
    position = feed_key(alice.public, 3)
    store = corrupt(
        store, lambda txn, t, v: txn.put(t.bodies.arrival(txn, position), misplaced, db=t.messages)
    )
    assert any("out of place" in p for p in store.feeds.check().problems)


def test_a_missing_id_index_row_is_found(populated, corrupt):
    store, alice, _, _ = populated
    store = corrupt(store, lambda txn, t, v: txn.delete(alice.messages[1].id, db=t.message_ids))
    assert any("missing from message-ids" in p for p in store.feeds.check().problems)


def test_a_missing_message_is_found(populated, corrupt):
    store, alice, _, _ = populated
    store = corrupt(store, lambda txn, t, v: t.bodies.remove(txn, feed_key(alice.public, 3)))
    problems = store.feeds.check().problems
    assert any("heads row" in p for p in problems)
    assert any("message-ids row" in p for p in problems)


def test_a_missing_run_of_a_feed_leaves_a_gap(store, corrupt):
    alice = Feed("alice")
    for n in range(70):  # seqs 1-64 in one message-at row, 65-70 in the next
        alice.append({"n": n})
    store.writes.ingest([m.raw for m in alice.messages])

    def lose_the_first_run(txn, t, _views):
        for seq in range(1, 65):
            txn.delete(t.bodies.arrival(txn, feed_key(alice.public, seq)), db=t.messages)
        txn.delete(feed_key(alice.public, 1), db=t.message_at)

    store = corrupt(store, lose_the_first_run)
    problems = store.feeds.check().problems
    assert any("gaps" in p for p in problems), problems


def test_an_index_row_without_its_body_is_found(populated, corrupt):
    store, alice, _, _ = populated
    position = feed_key(alice.public, 2)
    store = corrupt(
        store, lambda txn, t, v: txn.delete(t.bodies.arrival(txn, position), db=t.messages)
    )
    problems = store.feeds.check().problems
    assert any(f"{feed_text(alice.public)}:2 has no body" in p for p in problems), problems


def test_a_body_without_its_index_row_is_found(populated, corrupt):
    store, alice, _, _ = populated
    stray = verbatim(alice.messages[0].raw)
    store = corrupt(store, lambda txn, t, v: txn.put(ARRIVAL.pack(99), stray, db=t.messages))
    problems = store.feeds.check().problems
    assert problems == ["body 99 is in no message-at row"], problems


def test_two_index_rows_naming_one_body_are_found(populated, corrupt):
    store, alice, _, _ = populated

    def share(txn, t, _views):  # alice's run of seqs 1-3: seq 3 names the body of seq 2
        run = feed_key(alice.public, 1)
        numbers = txn.get(run, db=t.message_at)
        txn.put(run, numbers[:16] + numbers[8:16], db=t.message_at)

    store = corrupt(store, share)
    problems = store.feeds.check().problems
    assert any(f"{feed_text(alice.public)}:3 shares body" in p for p in problems), problems


def test_a_wrong_head_is_found(populated, corrupt):
    store, alice, _, _ = populated
    first = alice.messages[0]
    store = corrupt(
        store, lambda txn, t, v: txn.put(alice.public, head_value(1, first.id), db=t.heads)
    )
    assert any("heads row" in p for p in store.feeds.check().problems)


def test_wrong_tangle_tips_are_found(populated, corrupt):
    store, _, _, root = populated
    store = corrupt(
        store, lambda txn, t, v: txn.put(tangle_key(root.id, "chat"), root.id, db=v[b"tangle-tips"])
    )
    assert any("tangle-tips" in p for p in store.feeds.check().problems)


def test_a_proof_no_invalid_feed_names_is_found(populated, corrupt):
    store, *_ = populated
    store = corrupt(store, lambda txn, t, v: txn.drop(t.invalid, delete=False))
    assert any("names no invalid feed" in p for p in store.feeds.check().problems)


def test_an_invalid_feed_without_its_proof_is_found(populated, corrupt):
    store, *_ = populated
    store = corrupt(store, lambda txn, t, v: txn.drop(t.proofs, delete=False))
    problems = store.feeds.check().problems
    assert any("without its proof" in p for p in problems)
    assert any("is in no proof" in p for p in problems)


def about(feed: Feed, name: str) -> dict:
    return {"type": "about", "about": feed_text(feed.public), "name": name}


@pytest.fixture
def named(store):
    """Alice named herself at seqs 1 and 3, carol at 1; bob at 1 and 2, then forked at 2:
    his row at seq 2 names him by a message cut since, and his seq 1 names him."""
    alice, bob, carol, twin = Feed("alice"), Feed("bob"), Feed("carol"), Feed("bob")
    alice.append(about(alice, "al"))
    alice.append({"type": "post", "text": "hi"})
    alice.append(about(alice, "alice"))
    carol.append(about(carol, "carol"))
    bob.append(about(bob, "b"))
    bob.append(about(bob, "bob"))
    store.writes.ingest([m.raw for m in alice.messages + bob.messages + carol.messages])
    twin.append(about(twin, "b"))
    store.writes.ingest([twin.append({"type": "post", "text": "the fork"}).raw])
    assert store.feeds.invalid_feeds() == {bob.public: 2}
    return store, alice, bob, carol


def test_a_store_with_names_checks_clean(named):
    store, alice, bob, carol = named
    report = store.feeds.check()
    assert report.ok, report.problems
    assert store.feeds.about_names() == {
        alice.public: "alice",
        bob.public: "b",
        carol.public: "carol",
    }


def put_row(author: bytes, seq: int, name: bytes):
    return lambda txn, t, v: txn.put(about_key(author, seq), name, db=v[ABOUTS_DB])


def test_a_tampered_about_row_is_found(named, corrupt):
    store, alice, *_ = named
    store = corrupt(store, put_row(alice.public, 3, b"mallory"))
    problems = store.feeds.check().problems
    assert problems == [
        f"about-names row {feed_text(alice.public)}:3 is not the own about held there"
    ]


def test_a_row_where_no_own_about_is_held_is_found(named, corrupt):
    store, alice, *_ = named
    store = corrupt(store, put_row(alice.public, 2, b"al"))  # seq 2 is a post
    problems = store.feeds.check().problems
    assert problems == [
        f"about-names row {feed_text(alice.public)}:2 is not the own about held there"
    ]


def test_a_missing_about_row_is_found(named, corrupt):
    store, alice, _bob, carol = named
    key = about_key(carol.public, 1)
    store = corrupt(store, lambda txn, t, v: txn.delete(key, db=v[ABOUTS_DB]))
    problems = store.feeds.check().problems
    assert problems == [f"the about at {feed_text(carol.public)}:1 is missing from about-names"]
    key = about_key(alice.public, 3)  # an earlier row left: still found
    store = corrupt(store, lambda txn, t, v: txn.delete(key, db=v[ABOUTS_DB]))
    problems = store.feeds.check().problems
    assert f"the about at {feed_text(alice.public)}:3 is missing from about-names" in problems


def test_a_name_no_about_gave_is_found(named, corrupt):
    store, *_ = named
    dave = Feed("dave")
    store = corrupt(store, put_row(dave.public, 1, b"dave"))
    assert any(
        f"about-names row {feed_text(dave.public)}:1" in p for p in store.feeds.check().problems
    )


def test_a_row_past_a_boundary_is_not_checked(named, corrupt):
    store, _alice, bob, _carol = named
    store = corrupt(store, put_row(bob.public, 7, b"whatever"))  # bob is cut from seq 2
    assert store.feeds.check().ok
    assert store.feeds.about_names()[bob.public] == "b"


def test_a_wrong_about_row_of_a_cut_feed_below_its_boundary_is_found(named, corrupt):
    store, _alice, bob, _carol = named
    store = corrupt(store, put_row(bob.public, 1, b"robert"))  # seq 1 is held: it says "b"
    assert any(
        f"about-names row {feed_text(bob.public)}:1" in p for p in store.feeds.check().problems
    )


def test_a_row_of_the_first_layout_is_found_malformed(named, corrupt):
    store, alice, *_ = named
    old = (3).to_bytes(8, "big") + b"alice"  # author -> seq + name
    store = corrupt(store, lambda txn, t, v: txn.put(alice.public, old, db=v[ABOUTS_DB]))
    assert store.feeds.check().problems == [
        f"about-names holds a malformed key {alice.public.hex()}"
    ]


def test_ref_numbers_whose_two_tables_disagree_are_found(populated):
    store, *_ = populated
    tables = store.ctx.timeline_tables
    with store.ctx.write() as txn:  # a ref whose number names another ref
        (_ref, first), (second_ref, second) = list(txn.cursor(db=tables.refs))[:2]
        txn.put(second_ref, first, db=tables.refs)
    assert "tl-refs and tl-ref-names disagree on 1 refs" in store.feeds.check().problems
    with store.ctx.write() as txn:  # and one no number names
        txn.put(second_ref, second, db=tables.refs)
        txn.delete(second, db=tables.ref_names)
    assert "tl-refs and tl-ref-names disagree on 1 refs" in store.feeds.check().problems
