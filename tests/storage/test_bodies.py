"""Bodies are appended in arrival order behind the `message-at` index (storage.feeds.bodies):
real LMDB stores, read back through every kind of read."""

import pytest

from tanglenode.storage.feeds.bodies import ARRIVAL
from tanglenode.storage.feeds.layout import feed_key
from tanglenode.storage.writes import feed_ordered
from tests.factories import Feed
from tests.tamper import tamper


def interleaved(feeds: int, per_feed: int) -> list:
    """Messages of `feeds` feeds, one of each in turn, each feed naming the one before it."""
    chains = [Feed(f"bodies-{n}") for n in range(feeds)]
    messages = []
    for seq in range(per_feed):
        for n, chain in enumerate(chains):
            before = chains[n - 1]
            timeframe = {before.public: before.messages[-1]} if n and before.messages else None
            messages.append(chain.append({"n": seq, "feed": n}, timeframe=timeframe))
    return messages


def stored_rows(path) -> tuple[dict[bytes, int], list[int]]:
    """(position -> arrival number, the arrival numbers of `messages` in key order)."""
    with tamper(path) as (txn, tables):
        at = {position: ARRIVAL.unpack(a)[0] for position, a in tables.bodies.positions(txn)}
        keys = [ARRIVAL.unpack(k)[0] for k in txn.cursor(db=tables.messages).iternext(values=False)]
    return at, keys


def test_bodies_are_keyed_by_arrival_numbers_in_order(store):
    messages = interleaved(4, 3)
    for message in messages:  # one a batch: the arrival order is the delivery order
        assert store.writes.ingest([message.raw])[0].outcome == "accepted"
    store.close()
    at, keys = stored_rows(store.path)
    assert keys == list(range(len(messages)))
    assert [at[feed_key(m.author, m.seq)] for m in messages] == keys


def test_a_batch_appends_its_bodies_in_the_order_it_applies_them(store):
    messages = interleaved(3, 2)
    delivered = messages[::-1]  # each feed's seq 2 before its seq 1
    store.writes.ingest([m.raw for m in delivered])
    store.close()
    at, keys = stored_rows(store.path)
    # applied as delivered, each feed's k-th slot taking its k-th lowest seq
    applied = [m for _slot, m in feed_ordered(list(enumerate(delivered)))]
    assert [m.seq for m in applied] == [1, 1, 1, 2, 2, 2]
    assert keys == list(range(len(messages)))
    assert [at[feed_key(m.author, m.seq)] for m in applied] == keys


def test_reads_by_position_id_and_range_give_back_what_was_stored(open_store):
    messages = interleaved(5, 4)
    store = open_store()
    store.writes.ingest([m.raw for m in messages[:9]])
    store.writes.ingest([m.raw for m in messages[9:]])
    store.close()
    store = open_store(create=False)
    by_position = sorted(messages, key=lambda m: (m.author, m.seq))
    for message in messages:
        assert store.feeds.get(message.id).raw == message.raw
        assert store.feeds.get_by_seq(message.author, message.seq).raw == message.raw
    assert store.feeds.get_by_seq(messages[0].author, 5) is None
    assert list(store.feeds.iter_raw(chunk=3)) == [m.raw for m in by_position]
    for author in {m.author for m in messages}:
        feed = [m.raw for m in by_position if m.author == author]
        assert store.feeds.read_feed_raw(author) == feed
        assert store.feeds.read_feed_raw(author, from_seq=2, limit=2) == feed[1:3]
        assert store.feeds.read_feed_raw(author, from_seq=5) == []
        assert store.feeds.read_feed_raw(author, limit=0) == []
    assert [m.raw for _index, m in store.feeds.processed_page()] == [
        store.feeds.get_by_seq(feed, seq).raw for _index, feed, seq in store.feeds.processed()
    ]
    assert store.feeds.statistics()["messages"] == len(messages)
    assert store.feeds.check().ok


def test_a_truncation_removes_the_index_rows_and_the_bodies(open_store):
    alice, bob = Feed("bodies-alice"), Feed("bodies-bob")
    for n in range(3):
        alice.append({"n": n})
    bob.append({"n": 0})
    twin = Feed(alice.keypair)
    twin.messages = alice.messages[:1]
    fork = twin.append({"n": "other 1"})
    store = open_store()
    store.writes.ingest([m.raw for m in alice.messages + bob.messages])
    store.writes.ingest([fork.raw])  # alice is invalid from seq 2: 2 and 3 go
    assert store.feeds.invalid_feeds() == {alice.public: 2}
    later = bob.append({"n": 1})
    assert store.writes.ingest([later.raw])[0].outcome == "accepted"
    store.close()
    at, keys = stored_rows(store.path)
    assert set(at) == {feed_key(alice.public, 1), feed_key(bob.public, 1), feed_key(bob.public, 2)}
    assert sorted(at.values()) == keys  # no body left behind, none without its row
    assert at[feed_key(bob.public, 2)] == keys[-1]  # appended after the rest
    store = open_store(create=False)
    assert store.feeds.read_feed_raw(alice.public) == [alice.messages[0].raw]
    assert store.feeds.get_by_seq(alice.public, 2) is None  # its id reads as evidence now
    assert store.feeds.get(alice.messages[2].id) is None
    assert store.feeds.statistics()["messages"] == 3
    assert store.feeds.check().ok


@pytest.mark.parametrize("boundary", [2, 64, 65, 66, 130])
def test_a_feed_across_index_runs_reads_and_cuts_back_whole(open_store, boundary):
    """`message-at` keeps a feed's arrival numbers in rows of 64 seqs (storage.feeds.message_at):
    reads across rows, and a cut back from anywhere, leave exactly the messages below it."""
    alice, bob = Feed("runs-alice"), Feed("runs-bob")
    for n in range(130):
        alice.append({"n": n})
        if n % 10 == 0:
            bob.append({"n": n})
    raws = [m.raw for m in alice.messages]
    twin = Feed(alice.keypair)
    twin.messages = alice.messages[: boundary - 1]
    fork = twin.append({"n": "other"})
    store = open_store()
    store.writes.ingest([m.raw for m in alice.messages + bob.messages])
    assert store.feeds.read_feed_raw(alice.public, from_seq=60, limit=10) == raws[59:69]
    assert store.feeds.read_feed_raw(alice.public, from_seq=129) == raws[128:]
    assert [store.feeds.get_by_seq(alice.public, s).raw for s in (64, 65, 128)] == [
        raws[63],
        raws[64],
        raws[127],
    ]
    store.writes.ingest([fork.raw])
    assert store.feeds.read_feed_raw(alice.public) == raws[: boundary - 1]
    assert store.feeds.get_by_seq(alice.public, boundary) is None
    assert store.feeds.read_feed_raw(bob.public) == [m.raw for m in bob.messages]
    assert store.feeds.statistics()["messages"] == boundary - 1 + len(bob.messages)
    assert store.feeds.check().ok
    store.close()
    at, keys = stored_rows(store.path)
    assert sorted(at.values()) == keys
    assert len(at) == boundary - 1 + len(bob.messages)
