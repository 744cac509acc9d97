"""Feed numbers (storage/feeds/feed_numbers.py): one numbering for every writer of a
transaction, and a store-wide memory of committed numbers only."""

from __future__ import annotations

import struct

import pytest

from tanglenode.storage.feeds.bodies import BodyWriter
from tanglenode.storage.feeds.feed_numbers import FeedNumbers
from tanglenode.storage.store import FeedStore

U32 = struct.Struct(">I")


def test_the_writers_of_one_transaction_never_give_one_number_twice(tmp_path):
    """A body writer made before the processor numbered a feed in the same transaction gives
    the next feed the number after that one; so do the timeline refs' numbers."""
    with FeedStore(tmp_path / "store") as store, store.ctx.write() as txn:
        bodies = store.ctx.tables.bodies
        writer = BodyWriter(txn, bodies)
        first = FeedNumbers(txn, bodies.feeds).number(b"A" * 32)
        second = writer.number_of(b"B" * 32)
        third = bodies.feed_numbers(txn).number(b"C" * 32)
        assert (first, second, third) == (0, 1, 2)
        assert writer.number_of(b"C" * 32) == 2 and writer.number_of(b"A" * 32) == 0
        for number, key in ((first, b"A"), (second, b"B"), (third, b"C")):
            assert bytes(txn.get(U32.pack(number), db=bodies.feeds)) == key * 32


def test_a_number_given_in_an_aborted_transaction_is_never_remembered(tmp_path):
    with FeedStore(tmp_path / "store") as store:
        bodies = store.ctx.tables.bodies
        with pytest.raises(RuntimeError), store.ctx.write() as txn:
            assert bodies.feed_numbers(txn).number(b"A" * 32) == 0
            assert bodies.key_of(txn, 0) == b"A" * 32  # seen in its own transaction
            raise RuntimeError("abort")
        assert bodies.committed_feeds.keys == {} and bodies.committed_feeds.numbers == {}
        with store.ctx.write() as txn:
            assert bodies.feed_numbers(txn).number(b"B" * 32) == 0  # 0 again, for another feed
        with store.ctx.read() as txn:
            assert bodies.key_of(txn, 0) == b"B" * 32
            with pytest.raises(KeyError):
                bodies.key_of(txn, 1)
        with store.ctx.write() as txn:
            numbers = bodies.feed_numbers(txn)  # a write transaction: 0 is committed now
            assert numbers.find(b"B" * 32) == 0 and numbers.find(b"A" * 32) is None
        assert bodies.committed_feeds.keys == {0: b"B" * 32}
