import pytest

from tanglenode.protocol.errors import Reason
from tanglenode.protocol.limits import Limits
from tanglenode.protocol.message import TangleLink
from tanglenode.protocol.wire import wire
from tanglenode.storage.errors import IncompatibleStore, StoreFull, StoreNotFound
from tanglenode.storage.feeds.ingest import Outcome
from tanglenode.storage.store import FeedStore
from tests.factories import Feed, break_signature, sign_raw, unsigned_fields
from tests.tamper import tamper


def outcomes(results):
    return [(r.outcome, r.reason) for r in results]


ACCEPTED = (Outcome.ACCEPTED, None)
DUPLICATE = (Outcome.DUPLICATE, None)


def test_accepted_messages_are_stored_and_queryable(store):
    alice = Feed("alice")
    first, second = alice.append({"n": 1}), alice.append({"n": 2})
    assert outcomes(store.writes.ingest([first.raw, second.raw])) == [ACCEPTED, ACCEPTED]
    assert store.feeds.get(second.id) == second
    assert store.feeds.get_by_seq(alice.public, 1) == first
    assert store.feeds.read_feed(alice.public) == [first, second]
    assert store.feeds.read_feed(alice.public, from_seq=2) == [second]
    assert store.feeds.read_feed(alice.public, limit=1) == [first]
    assert store.feeds.frontier() == {alice.public: 2}
    assert [(f.author, f.head_seq, f.head_id, f.invalid_from) for f in store.feeds.held()] == [
        (alice.public, 2, second.id, None)
    ]


def test_ingest_is_idempotent(store):
    alice = Feed("alice")
    raws = [alice.append().raw for _ in range(3)]
    store.writes.ingest(raws)
    before = store.feeds.statistics()
    assert outcomes(store.writes.ingest(raws)) == [DUPLICATE] * 3
    assert outcomes(store.writes.ingest([raws[0], raws[0]])) == [DUPLICATE] * 2
    assert store.feeds.statistics() == before


def test_a_batch_may_hold_the_same_message_twice_and_a_feed_out_of_order(store):
    alice = Feed("alice")
    one, two, three = (alice.append() for _ in range(3))
    results = store.writes.ingest([three.raw, one.raw, two.raw, one.raw])
    assert outcomes(results) == [ACCEPTED, ACCEPTED, ACCEPTED, DUPLICATE]
    assert [r.id for r in results] == [three.id, one.id, two.id, one.id]
    assert store.feeds.frontier() == {alice.public: 3}


def test_a_gap_is_rejected_as_missing_previous_and_not_stored(store):
    alice = Feed("alice")
    one, _, three = (alice.append() for _ in range(3))
    results = store.writes.ingest([one.raw, three.raw])
    assert outcomes(results) == [ACCEPTED, (Outcome.REJECTED, Reason.MISSING_PREVIOUS)]
    assert store.feeds.get(three.id) is None
    assert store.feeds.frontier() == {alice.public: 1}


def test_a_prev_that_is_not_the_stored_head_is_a_chain_mismatch(store):
    alice = Feed("alice")
    one = alice.append()
    stray = sign_raw(alice.keypair, unsigned_fields(alice.keypair, seq=2, prev=b"\x07" * 32))
    results = store.writes.ingest([one.raw, stray])
    assert outcomes(results) == [ACCEPTED, (Outcome.REJECTED, Reason.CHAIN_MISMATCH)]
    assert store.feeds.get(results[1].id) is None


def test_an_invalid_message_is_rejected_with_its_reason_and_the_rest_commits(store):
    alice, bob = Feed("alice"), Feed("bob")
    forged = break_signature(alice.append({"text": "hello"}).raw)
    good = bob.append()
    results = store.writes.ingest([forged, good.raw])
    assert outcomes(results) == [(Outcome.REJECTED, Reason.BAD_SIGNATURE), ACCEPTED]
    assert results[0].detail
    assert store.feeds.frontier() == {bob.public: 1}


def test_content_garbled_on_the_way_is_dropped_and_the_header_stored(store):
    """Content that does not match its header is a relay's doing, not the author's: the
    message is accepted as its header alone, its id and chain intact."""
    alice = Feed("alice")
    first, second = alice.append({"text": "hello"}), alice.append({"text": "again"})
    garbled = first.raw[:-1] + bytes([first.raw[-1] ^ 1])
    results = store.writes.ingest([garbled, second.raw])
    assert outcomes(results) == [ACCEPTED, ACCEPTED]
    assert (
        results[0].id == first.id and results[0].message.content_refused is Reason.CONTENT_MISMATCH
    )
    held = store.feeds.get(first.id)
    assert held == first.without_content() and not held.has_content
    assert store.feeds.read_feed_raw(alice.public, limit=1) == [wire(first.header, None)]
    assert store.feeds.get(second.id) == second and store.feeds.frontier() == {alice.public: 2}
    assert store.feeds.check().ok


def test_a_copy_garbled_around_its_header_does_not_make_the_good_copy_a_duplicate(store):
    """The id is the header's: a copy refused for its framing has the good copy's id, and
    the good copy after it in the batch is stored, not dropped as a repeat of a refusal."""
    alice = Feed("alice")
    first = alice.append({"text": "hello"})
    broken = first.raw + b"\x00"  # bytes after the pair: malformed, the header intact
    results = store.writes.ingest([broken, first.raw, first.raw])
    assert outcomes(results) == [(Outcome.REJECTED, Reason.MALFORMED), ACCEPTED, DUPLICATE]
    assert {result.id for result in results} == {first.id}
    assert store.feeds.get(first.id) == first


def test_store_limits_apply_at_ingest(open_store):
    store = open_store(limits=Limits(max_message_bytes=1024))
    big = Feed("alice").append({"text": "x" * 2000})
    assert outcomes(store.writes.ingest([big.raw])) == [(Outcome.REJECTED, Reason.TOO_LARGE)]


def test_a_second_message_at_a_stored_seq_is_fork_evidence(store):
    honest, twin = Feed("alice"), Feed("alice")
    one, two = honest.append({"n": 1}), honest.append({"n": 2})
    twin.messages.append(one)
    conflicting = twin.append({"n": "other 2"})
    three = honest.append({"n": 3})
    assert outcomes(store.writes.ingest([one.raw, two.raw])) == [ACCEPTED, ACCEPTED]
    results = store.writes.ingest([conflicting.raw, three.raw])
    assert outcomes(results) == [
        (Outcome.FORK, Reason.FORKED_FEED),
        (Outcome.REJECTED, Reason.FORKED_FEED),
    ]
    assert results[0].stored
    assert not results[1].stored
    (evidence,) = store.feeds.evidence()
    assert evidence.kind == "fork" and evidence.invalid == {honest.public: 2}
    # The proof holds the two headers (a proof reads nothing else: docs/FORMAT.md).
    assert evidence.messages == sorted(
        [two.without_content(), conflicting.without_content()], key=lambda m: m.id
    )
    # The feed ends before the fork on every node, whichever branch came first.
    # (both held as the proof's headers now: their contents are gone with the feed's end)
    assert store.feeds.get(conflicting.id) == conflicting.without_content()
    assert store.feeds.get(two.id) == two.without_content()
    assert store.feeds.get_by_seq(honest.public, 2) is None
    assert store.feeds.get(three.id) is None
    assert [(f.head_seq, f.head_id, f.invalid_from) for f in store.feeds.held()] == [(1, one.id, 2)]
    assert outcomes(store.writes.ingest([conflicting.raw])) == [DUPLICATE]


def test_a_fork_inside_one_batch_invalidates_the_feed_from_that_seq(store):
    honest, twin = Feed("alice"), Feed("alice")
    first = honest.append({"v": "a"})
    second = twin.append({"v": "b"})
    results = store.writes.ingest([first.raw, second.raw])
    assert outcomes(results) == [ACCEPTED, (Outcome.FORK, Reason.FORKED_FEED)]
    assert store.feeds.get_by_seq(honest.public, 1) is None
    assert store.feeds.invalid_feeds() == {honest.public: 1}
    assert store.feeds.frontier() == {}


def test_everything_survives_closing_and_reopening(tmp_path):
    alice = Feed("alice")
    raws = [alice.append({"n": n}).raw for n in range(5)]
    with FeedStore(tmp_path / "db") as store:
        store.writes.ingest(raws)
    with FeedStore(tmp_path / "db", create=False) as reopened:
        assert reopened.feeds.frontier() == {alice.public: 5}
        assert [m.raw for m in reopened.feeds.read_feed(alice.public)] == raws
        assert reopened.feeds.check().ok


def test_opening_a_missing_store_without_create_fails(tmp_path):
    with pytest.raises(StoreNotFound):
        FeedStore(tmp_path / "absent", create=False)


def test_tangle_tips_follow_out_of_order_arrival(store):
    alice, bob = Feed("alice"), Feed("bob")
    root = alice.root("chat")
    reply_a = alice.append(tangles={"chat": TangleLink(root.id, (root.id,))})
    reply_b = bob.append(tangles={"chat": TangleLink(root.id, (root.id,))})
    merge = bob.append(
        tangles={"chat": TangleLink(root.id, tuple(sorted((reply_a.id, reply_b.id))))}
    )
    store.writes.ingest([reply_b.raw])
    assert store.tangles.tangle_tips(root.id, "chat") == []  # pending (no root yet): never a tip
    store.writes.ingest([root.raw])
    assert store.tangles.tangle_tips(root.id, "chat") == [reply_b.id]
    store.writes.ingest([merge.raw])  # pending on reply_a: reply_b stays the tip
    assert store.tangles.tangle_tips(root.id, "chat") == [reply_b.id]
    store.writes.ingest([reply_a.raw])
    assert store.tangles.tangle_tips(root.id, "chat") == [merge.id]
    assert store.feeds.check().ok


def test_a_full_map_raises_store_full_and_keeps_what_was_committed(tmp_path):
    alice = Feed("alice")
    raws = [alice.append({"pad": "x" * 1500}).raw for _ in range(400)]
    with FeedStore(tmp_path / "small", map_size=256 * 1024) as store:
        committed = 0
        with pytest.raises(StoreFull):
            for start in range(0, len(raws), 20):
                store.writes.ingest(raws[start : start + 20])
                committed = start + 20
        assert 0 < committed < len(raws)
        assert store.feeds.frontier() == {alice.public: committed}
        assert store.feeds.check().ok


def test_a_store_of_another_schema_is_refused(tmp_path):
    FeedStore(tmp_path / "db").close()
    with tamper(tmp_path / "db") as (txn, tables):
        txn.put(b"schema", b"999", db=tables.meta)
    with pytest.raises(IncompatibleStore):
        FeedStore(tmp_path / "db")
