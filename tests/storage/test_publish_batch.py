"""`store.writes.publish_batch`: many of our messages in one transaction, each refusal its own."""

import contextlib
import os
import resource

import pytest

from tanglenode.protocol.document import TANGLE, AtomRef, Insert, edit_content, init_content
from tanglenode.protocol.errors import Reason
from tanglenode.protocol.message import Message, TangleLink, UnpublishableMessage, decode_message
from tanglenode.storage.errors import OwnFeedBehind, UnknownTangle
from tanglenode.storage.feeds.ownhead import OwnHead, read_own_head, write_own_head
from tests.factories import Feed, keypair

ME = keypair("me")


def test_a_batch_chains_our_feed_and_the_tangle_in_request_order(store):
    root = store.writes.publish({"type": "thread"}, {"chat": None})
    results = store.writes.publish_batch([({"n": n}, {"chat": root.id}) for n in range(5)])
    assert all(isinstance(result, Message) for result in results)
    assert [m.seq for m in results] == [2, 3, 4, 5, 6]
    assert [m.content for m in results] == [{"n": n} for n in range(5)]
    previous = root
    for message in results:
        assert message.prev == previous.id
        assert message.tangles["chat"].previous == (previous.id,)  # the tip the one before left
        assert decode_message(message.raw) == message  # a receiver accepts each
        previous = message
    assert store.feeds.read_feed(ME.public) == [root, *results]
    assert store.tangles.tangle_tips(root.id, "chat") == [results[-1].id]
    assert read_own_head(store.own_head_path) == OwnHead(ME.public, 6, results[-1].id)


def test_each_refused_request_gets_its_own_error_and_the_others_commit(store):
    root = store.writes.publish("root", {"chat": None})
    results = store.writes.publish_batch(
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
    assert store.feeds.read_feed(ME.public) == [root, first, last]
    assert store.tangles.tangle_tips(root.id, "chat") == [last.id]
    name = store.timelines.timeline_name(root.id, "chat")
    assert [msg_id for _rank, msg_id in store.timelines.timeline_at(name)[1]] == [
        root.id,
        first.id,
        last.id,
    ]
    assert store.feeds.processed_frontier()[ME.public] == 3
    assert read_own_head(store.own_head_path) == OwnHead(ME.public, 3, last.id)
    assert store.feeds.check().ok


def test_a_batch_where_every_request_is_refused_stores_nothing(store):
    first = store.writes.publish("one")
    results = store.writes.publish_batch([("a", {"t": b"\x01" * 32}), ("b", {"t": b"\x02" * 32})])
    assert all(isinstance(result, UnknownTangle) for result in results)
    assert store.feeds.read_feed(ME.public) == [first]
    assert read_own_head(store.own_head_path) == OwnHead(ME.public, 1, first.id)
    assert store.writes.publish_batch([]) == []


def test_a_store_behind_our_head_file_refuses_the_whole_batch(open_store):
    store = open_store(keypair=ME)
    first = store.writes.publish("one")
    store.close()
    write_own_head(store.own_head_path, OwnHead(ME.public, 5, first.id))  # as after a restore
    store = open_store(keypair=ME)
    results = store.writes.publish_batch([("a", None), ("b", None)])
    assert all(isinstance(result, OwnFeedBehind) for result in results)
    assert store.feeds.read_feed(ME.public) == [first]


def test_a_batch_is_durable_across_reopening(open_store):
    store = open_store(keypair=ME)
    results = store.writes.publish_batch([(n, None) for n in range(3)])
    store.close()
    again = open_store(keypair=ME)
    assert again.feeds.read_feed(ME.public) == results
    assert again.writes.publish("next").seq == 4


# -- a batch gives what publishing one by one gives, byte for byte -------------------------

T0 = 1_800_000_000_000  # timestamps are passed in, so both ways sign the same bytes


def scenario(store, bob: Feed, carol: Feed) -> tuple[bytes, bytes]:
    """Other feeds held and processed, a thread and a document of ours: (thread, doc)."""
    store.writes.ingest([bob.root("chat", "bob's thread").raw, carol.append("carol 1").raw])
    thread = store.writes.publish("ours", {"chat": None}, timestamp=T0)
    doc = store.writes.publish(init_content("notes"), {TANGLE: None}, timestamp=T0 + 1)
    store.writes.ingest(
        [
            bob.append("bob 2", timeframe={ME.public: 2, carol.public: 1}).raw,
            carol.append("carol 2", tangles={"chat": TangleLink(thread.id, (thread.id,))}).raw,
        ]
    )
    return thread.id, doc.id


def batch_requests(thread: bytes, doc: bytes, bob_root: bytes) -> list:
    typed = edit_content([Insert(AtomRef(doc, 0), "hello")])
    return [
        ({"n": 1}, {"chat": thread}),
        ("lost", {"chat": b"\x07" * 32}),  # refused: no such tangle
        (typed, {TANGLE: doc}),
        ({"n": 2}, {"chat": thread, "side": None}),
        ("x" * 20_000, {"chat": thread}),  # refused: too large
        ({"n": 3}, {"chat": bob_root}),
        (edit_content([Insert(AtomRef(doc, 0), "> ")]), {TANGLE: doc}),
        ({"n": 4}, None),
    ]


def state(store) -> dict:
    """Everything a publish can change, as plain values."""
    return {
        "feeds": {
            info.author: store.feeds.read_feed_raw(info.author) for info in store.feeds.held()
        },
        "processed": store.feeds.processed(0, 10_000),
        "frontier": store.feeds.processed_frontier(),
        "timelines": {
            name: store.timelines.timeline_at(name) for name, _r, _n in store.timelines.held()
        },
        "logs": {
            name: store.timelines.timeline_log(name, 0, 10_000)
            for name, _r, _n in store.timelines.held()
        },
        "documents": [(d, store.documents.document_snapshot(d.id)) for d in store.documents.held()],
        "stalls": store.feeds.stalls(),
    }


def outcome(result) -> bytes | tuple:
    return result.raw if isinstance(result, Message) else (type(result), str(result))


def publish_both_ways(open_store, prepare) -> tuple[list, list, dict, dict]:
    """`prepare(store)` on two fresh stores, then the same requests: one by one, and batched."""
    results = {}
    for way in ("one", "batch"):
        store = open_store(way, keypair=ME)
        requests = prepare(store)
        stamps = [T0 + 10 + n for n in range(len(requests))]
        if way == "one":
            found = []
            for (content, tangles), stamp in zip(requests, stamps, strict=True):
                try:
                    found.append(store.writes.publish(content, tangles, timestamp=stamp))
                except Exception as error:
                    found.append(error)
        else:
            found = store.writes.publish_batch(requests, timestamps=stamps)
        assert store.feeds.check().ok
        results[way] = ([outcome(r) for r in found], state(store), found)
    return results["one"][0], results["batch"][0], results["one"][1], results["batch"][1]


def test_a_batch_stores_exactly_what_publishing_one_by_one_stores(open_store):
    def prepare(store):
        bob, carol = Feed("bob"), Feed("carol")
        thread, doc = scenario(store, bob, carol)
        return batch_requests(thread, doc, bob.messages[0].id)

    one, batch, one_state, batch_state = publish_both_ways(open_store, prepare)
    assert batch == one
    assert batch_state == one_state
    published = [r for r in one if isinstance(r, bytes)]
    assert len(published) == 6
    [(_info, (_version, text))] = batch_state["documents"]
    assert text == "> hello"
    frontier = decode_message(published[0]).timeframe
    assert set(frontier) == {Feed("bob").public, Feed("carol").public}  # others' processed seqs


def test_when_a_peer_names_a_message_of_ours_we_never_signed_it_stays_a_suspected_fork(
    open_store,
):
    """Bob's message names our seq 4 by a tag no message of ours has (our key in use
    elsewhere, or Bob lying): once we publish our own seq 4, Bob's message waits for a
    proof, our later messages never name it, and the batch sees exactly that too."""

    def prepare(store):
        bob = Feed("bob")
        store.writes.publish("one", timestamp=T0)
        store.writes.ingest([bob.append("waits", timeframe={ME.public: (4, b"\x01" * 16)}).raw])
        return [(f"n{n}", None) for n in range(2, 7)]

    one, batch, one_state, batch_state = publish_both_ways(open_store, prepare)
    assert batch == one
    assert batch_state == one_state
    timeframes = [decode_message(raw).timeframe for raw in one]
    assert not any(Feed("bob").public in timeframe for timeframe in timeframes)
    [stall] = one_state["stalls"]
    assert (stall.feed, stall.needs_feed, stall.needs_seq) == (Feed("bob").public, ME.public, 4)
    assert stall.needs_tag == b"\x01" * 16


def test_when_our_own_feed_waits_the_batch_still_matches(open_store):
    """Our seq 1 came back from a backup and waits on a message of Bob's we lack."""

    def prepare(store):
        ours = Feed(ME)
        store.writes.ingest([ours.append("from the backup", timeframe={Feed("bob").public: 3}).raw])
        return [(f"n{n}", None) for n in range(3)]

    one, batch, one_state, batch_state = publish_both_ways(open_store, prepare)
    assert batch == one
    assert batch_state == one_state
    assert len(one_state["stalls"]) == 1


def test_a_whole_batch_is_all_stored_or_none_of_it(store):
    root = store.writes.publish("root", {"chat": None})
    for requests in (
        [("first", {"chat": root.id}), ("lost", {"chat": b"\x07" * 32})],  # one writer
        [(init_content("doc"), {TANGLE: None}), ("lost", {"chat": b"\x07" * 32})],  # each
    ):
        with pytest.raises(UnknownTangle):
            store.writes.publish_batch(requests, whole=True)
        assert store.feeds.read_feed(ME.public) == [root]  # the first request left nothing either
        assert store.tangles.tangle_tips(root.id, "chat") == [root.id]
        assert read_own_head(store.own_head_path) == OwnHead(ME.public, 1, root.id)
    both = store.writes.publish_batch(
        [("a", {"chat": root.id}), ("b", {"chat": root.id})], whole=True
    )
    assert [m.seq for m in both] == [2, 3] and both[1].tangles["chat"].previous == (both[0].id,)
    assert store.feeds.check().ok


@contextlib.contextmanager
def no_descriptor_left():
    """Every file descriptor this process may open in use (EMFILE), until the block ends."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    taken = []
    resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 16, hard))
    try:
        with contextlib.suppress(OSError):
            while len(taken) < 1024:
                taken.append(os.open(os.devnull, os.O_RDONLY))
        with pytest.raises(OSError):
            os.close(os.open(os.devnull, os.O_RDONLY))
        yield
    finally:
        for fd in taken:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_no_descriptor_for_the_own_head_record_fails_no_publish_that_committed(store):
    first = store.writes.publish({"n": 1})
    with no_descriptor_left():
        results = store.writes.publish_batch([({"n": 2}, None), ({"n": 3}, None)])
    assert [m.seq for m in results] == [2, 3]  # stored, and answered as stored
    assert store.feeds.read_feed(ME.public)[1:] == results
    assert "seq 3" in store.writes.own_head_unrecorded
    assert "Too many open files" in store.writes.own_head_unrecorded
    assert read_own_head(store.own_head_path) == OwnHead(ME.public, 1, first.id)  # it lags
    last = store.writes.publish({"n": 4})
    assert read_own_head(store.own_head_path) == OwnHead(ME.public, 4, last.id)
    assert store.writes.own_head_unrecorded is None
