import pytest

from tanglenode.protocol.limits import TIMEFRAME_CAP, Limits
from tanglenode.protocol.message import TangleLink, decode_message
from tanglenode.storage.errors import NoIdentity, OwnFeedForked, UnknownTangle
from tanglenode.storage.feeds.ingest import Outcome
from tests.factories import Feed, keypair

ME = keypair("me")


def test_publish_chains_our_feed(store):
    first = store.writes.publish({"n": 1}, timestamp=1000)
    second = store.writes.publish({"n": 2}, timestamp=2000)
    assert (first.author, first.seq, first.prev) == (ME.public, 1, None)
    assert (second.seq, second.prev) == (2, first.id)
    assert decode_message(second.raw) == second  # a receiver accepts it
    assert store.feeds.read_feed(ME.public) == [first, second]


def test_timestamps_default_to_now_and_never_go_backwards(store):
    first = store.writes.publish("a", timestamp=2**50)  # claimed far in the future
    second = store.writes.publish("b")
    assert second.timestamp == first.timestamp


def test_timeframe_names_the_heads_of_other_feeds_by_tag(store):
    alice, bob, carol = Feed("alice"), Feed("bob"), Feed("carol")
    a1, a2, b1 = alice.append(), alice.append(), bob.append()
    c1 = carol.append(timeframe={bob.public: b1})  # carol's message implies bob's
    store.writes.ingest([a1.raw, a2.raw, b1.raw, c1.raw])
    mine = store.writes.publish("x")
    assert mine.named() == {alice.public: (2, a2.id[:16]), carol.public: (1, c1.id[:16])}
    assert store.writes.publish("y").timeframe == {}  # all it could name, `mine` named: no heads
    d1 = Feed("dave").append()
    store.writes.ingest([d1.raw])
    assert store.writes.publish("z").named() == {
        d1.author: (1, d1.id[:16])
    }  # own feed never listed


def test_timeframe_names_at_most_the_cap_newest_first(store):
    strangers = [Feed(f"stranger-{n}").append() for n in range(TIMEFRAME_CAP + 8)]
    store.writes.ingest([m.raw for m in strangers])
    processed = [feed for _index, feed, _seq in store.feeds.processed(0, 1000)]
    first = store.writes.publish("x")
    assert list(first.timeframe) == sorted(processed[-TIMEFRAME_CAP:])
    second = store.writes.publish("y")  # the heads the first left out
    assert sorted(second.timeframe) == sorted(processed[:-TIMEFRAME_CAP])
    assert len(first.raw) < 3 * 1024


def test_a_tangle_previous_we_processed_is_covered_by_the_timeframe(store):
    alice = Feed("alice")
    root = alice.root("chat")
    fillers = [Feed(f"filler-{n}").append() for n in range(TIMEFRAME_CAP + 4)]
    store.writes.ingest([root.raw] + [m.raw for m in fillers])  # the root is the oldest head
    reply = store.writes.publish({"text": "hi"}, {"chat": root.id})
    assert reply.tangles["chat"].previous == (root.id,)
    assert reply.named()[alice.public] == (1, root.id[:16])
    assert len(reply.timeframe) == TIMEFRAME_CAP


def test_the_timeframe_source_can_be_swapped(open_store):
    calls = []

    def nothing_processed(txn, tables, author):
        calls.append(author)
        return {}

    store = open_store(keypair=ME, timeframe_source=nothing_processed)
    store.writes.ingest([Feed("alice").append().raw])
    assert store.writes.publish("x").timeframe == {}
    assert calls == [ME.public]


def test_tangle_previous_is_the_current_tips(store):
    alice = Feed("alice")
    root = store.writes.publish({"type": "thread"}, {"chat": None})
    reply = alice.append(tangles={"chat": TangleLink(root.id, (root.id,))})
    store.writes.ingest([reply.raw])
    mine = store.writes.publish({"text": "me too"}, {"chat": root.id})
    assert mine.tangles["chat"] == TangleLink(root.id, (reply.id,))
    # two concurrent tips are both named, then merged into one
    other = alice.append(tangles={"chat": TangleLink(root.id, (reply.id,))})
    store.writes.ingest([other.raw])
    merge = store.writes.publish("merge", {"chat": root.id})
    assert merge.tangles["chat"].previous == tuple(sorted([mine.id, other.id]))
    assert store.tangles.tangle_tips(root.id, "chat") == [merge.id]


def test_previous_is_capped_at_the_limit(open_store):
    store = open_store(keypair=ME, limits=Limits(max_previous=2))
    root = store.writes.publish("root", {"chat": None})
    replies = [
        Feed(f"f{i}").append(tangles={"chat": TangleLink(root.id, (root.id,))}) for i in range(4)
    ]
    store.writes.ingest([r.raw for r in replies])
    mine = store.writes.publish("capped", {"chat": root.id})
    assert mine.tangles["chat"].previous == tuple(sorted(r.id for r in replies)[:2])


def test_publishing_into_an_unknown_tangle_fails_and_stores_nothing(store):
    with pytest.raises(UnknownTangle):
        store.writes.publish("x", {"chat": b"\x05" * 32})
    assert store.feeds.frontier() == {}


def test_publishing_without_a_keypair_fails(open_store):
    with pytest.raises(NoIdentity):
        open_store().writes.publish("x")


def test_publishing_on_a_forked_own_feed_is_refused(store):
    twin = Feed(ME)
    store.writes.publish("original", timestamp=5)
    (result,) = store.writes.ingest([twin.append("other", timestamp=6).raw])
    assert result.outcome is Outcome.FORK
    with pytest.raises(OwnFeedForked):
        store.writes.publish("more")


def test_a_thousand_throwaway_feeds_leave_every_kind_of_publish_small(store):
    """What silenced format 1 (one tiny post from each of 480 fresh keys pushed every
    timeframe past the size limit): with tagged heads, capped, nothing does."""
    strangers = [Feed(f"throwaway-{n}").append({"t": "x"}) for n in range(1000)]
    assert all(r.outcome is Outcome.ACCEPTED for r in store.writes.ingest(m.raw for m in strangers))
    doc = store.documents.create_document("notes")
    edits = store.documents.edit_document(doc.id, [("ins", 0, "still here")])
    post = store.writes.publish({"text": "and here"}, {"chat": None})
    for message in [doc, *edits, post]:
        assert len(message.timeframe) <= TIMEFRAME_CAP
        assert len(message.raw) < 3 * 1024
    assert store.documents.document_text(doc.id) == "still here"
