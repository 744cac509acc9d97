"""`FeedStore.publish_batch`: many of our messages in one transaction, each refusal its own."""

from tanglenode.protocol.errors import Reason
from tanglenode.protocol.message import Message, UnpublishableMessage, decode_message
from tanglenode.storage.errors import OwnFeedBehind, UnknownTangle
from tanglenode.storage.ownhead import OwnHead, read_own_head, write_own_head
from tests.factories import keypair

ME = keypair("me")


def test_a_batch_chains_our_feed_and_the_tangle_in_request_order(store):
    root = store.publish({"type": "thread"}, {"chat": None})
    results = store.publish_batch([({"n": n}, {"chat": root.id}) for n in range(5)])
    assert all(isinstance(result, Message) for result in results)
    assert [m.seq for m in results] == [2, 3, 4, 5, 6]
    assert [m.content for m in results] == [{"n": n} for n in range(5)]
    previous = root
    for message in results:
        assert message.prev == previous.id
        assert message.tangles["chat"].previous == (previous.id,)  # the tip the one before left
        assert decode_message(message.raw) == message  # a receiver accepts each
        previous = message
    assert store.read_feed(ME.public) == [root, *results]
    assert store.tangle_tips(root.id, "chat") == [results[-1].id]
    assert read_own_head(store.own_head_path) == OwnHead(ME.public, 6, results[-1].id)


def test_each_refused_request_gets_its_own_error_and_the_others_commit(store):
    root = store.publish("root", {"chat": None})
    results = store.publish_batch(
        [
            ("first", {"chat": root.id}),
            ("lost", {"chat": b"\x07" * 32}),  # no such tangle
            ("x" * 20_000, {"chat": root.id}),  # over max_message_bytes once signed
            (float("nan"), None),  # content no node accepts
            ("last", {"chat": root.id}),
        ]
    )
    first, unknown, too_large, bad_content, last = results
    assert isinstance(unknown, UnknownTangle)
    assert isinstance(too_large, UnpublishableMessage) and too_large.reason is Reason.TOO_LARGE
    assert isinstance(bad_content, UnpublishableMessage)
    assert bad_content.reason is Reason.NON_FINITE_FLOAT
    # the refused ones left nothing: no seq skipped, no tip, no timeline entry
    assert (first.seq, last.seq, last.prev) == (2, 3, first.id)
    assert last.tangles["chat"].previous == (first.id,)
    assert store.read_feed(ME.public) == [root, first, last]
    assert store.tangle_tips(root.id, "chat") == [last.id]
    name = store.timeline_name(root.id, "chat")
    assert [msg_id for _rank, msg_id in store.timeline_at(name)[1]] == [root.id, first.id, last.id]
    assert store.processed_frontier()[ME.public] == 3
    assert read_own_head(store.own_head_path) == OwnHead(ME.public, 3, last.id)
    assert store.check().ok


def test_a_batch_where_every_request_is_refused_stores_nothing(store):
    first = store.publish("one")
    results = store.publish_batch([("a", {"t": b"\x01" * 32}), ("b", {"t": b"\x02" * 32})])
    assert all(isinstance(result, UnknownTangle) for result in results)
    assert store.read_feed(ME.public) == [first]
    assert read_own_head(store.own_head_path) == OwnHead(ME.public, 1, first.id)
    assert store.publish_batch([]) == []


def test_a_store_behind_our_head_file_refuses_the_whole_batch(store):
    first = store.publish("one")
    write_own_head(store.own_head_path, OwnHead(ME.public, 5, first.id))  # as after a restore
    results = store.publish_batch([("a", None), ("b", None)])
    assert all(isinstance(result, OwnFeedBehind) for result in results)
    assert store.read_feed(ME.public) == [first]


def test_a_batch_is_durable_across_reopening(open_store):
    store = open_store(keypair=ME)
    results = store.publish_batch([(n, None) for n in range(3)])
    store.close()
    again = open_store(keypair=ME)
    assert again.read_feed(ME.public) == results
    assert again.publish("next").seq == 4
