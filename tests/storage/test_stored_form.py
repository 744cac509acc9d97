"""The stored form rebuilds every message's wire form exactly (storage.feeds.stored_form)."""

import pytest
from hypothesis import HealthCheck, given, settings

from tanglenode.protocol.identity import Keypair, message_id, tag_of
from tanglenode.protocol.message import sign_message
from tanglenode.protocol.wire import wire
from tanglenode.storage.errors import IncompatibleStore
from tanglenode.storage.feeds import stored_form
from tanglenode.storage.feeds.layout import SCHEMA_VERSION
from tanglenode.storage.store import FeedStore
from tests.property.test_message_properties import signed
from tests.tamper import tamper


def round_trip(message) -> tuple[bytes, bytes]:
    """(stored value, signed bytes rebuilt from it), numbering feeds as they come."""
    numbers: dict[bytes, int] = {}
    value = stored_form.encode(message, lambda key: numbers.setdefault(key, len(numbers)))
    keys = {number: key for key, number in numbers.items()}
    return value, stored_form.decode(message.author, value, keys.__getitem__)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(signed())
def test_every_message_is_rebuilt_byte_for_byte(pair):
    _author, message = pair
    value, raw = round_trip(message)
    assert raw == message.raw
    assert message_id(raw) == message.id
    assert value[0] == stored_form.COMPACT  # canonical messages always compact
    # the author (bin 8 header and 32 bytes) and every timeframe key leave the value
    assert len(value) <= len(message.raw) - 34 + 6 - 24 * len(message.timeframe)
    assert_content_comes_off(message, value)


def assert_content_comes_off(message, value: bytes) -> None:
    """The content is the value's last bytes: dropping it leaves the header's part of the
    value as it was, and that rebuilds the header-only wire form, same header, same id."""
    bare = stored_form.without_content(value)
    assert stored_form.has_content(value) and not stored_form.has_content(bare)
    assert bare + message.content_bytes == value  # the header's bytes untouched
    assert stored_form.without_content(bare) == bare
    key_of = list(message.timeframe).__getitem__  # `round_trip` numbered them in this order
    rebuilt = stored_form.decode(message.author, bare, key_of)
    assert rebuilt == wire(message.header, None)
    assert message_id(rebuilt) == message.id
    assert stored_form.parse_stored(rebuilt) == message.without_content()


@pytest.mark.parametrize(
    "seq, timestamp", [(1, 0), (127, 128), (255, 2**16), (2**16, 2**32), (2**32, 2**63 - 1)]
)
def test_integer_widths_at_their_edges(seq, timestamp):
    author, other = Keypair(bytes(32)), Keypair(bytes([1]) * 32)
    message = sign_message(
        author,
        seq=seq,
        prev=None if seq == 1 else bytes(32),
        timestamp=timestamp,
        timeframe={other.public: (2**63 - 1, bytes(16)), bytes([9]) * 32: (1, b"t" * 16)},
        tangles={},
        content={"n": seq},
    )
    assert round_trip(message)[1] == message.raw


def test_a_value_kept_verbatim_reads_as_it_is():
    raw = b"\x99\x02anything"
    assert stored_form.decode(bytes(32), stored_form.verbatim(raw), None) == raw


@pytest.mark.parametrize("content", [None, "text", {"n": 1}])
def test_a_verbatim_value_drops_its_content_to_its_header(content):
    """Form 0 holds the wire form itself: dropping the content gives the header-only pair,
    and whether it holds the content is read from the pair (a content may end as nil does:
    None's bytes are 0xc0)."""
    message = sign_message(
        Keypair(bytes(32)), seq=1, prev=None, timestamp=0, timeframe={}, tangles={}, content=content
    )
    value = stored_form.verbatim(message.raw)
    assert stored_form.has_content(value)
    bare = stored_form.without_content(value)
    assert bare == stored_form.verbatim(wire(message.header, None))
    assert not stored_form.has_content(bare)
    assert stored_form.decode(message.author, bare, None) == wire(message.header, None)


def feeds(count: int) -> list[Keypair]:
    return [Keypair(bytes([n + 1]) * 32) for n in range(count)]


def chat(keys: list[Keypair], rounds: int) -> list:
    """Each feed in turn, every message's timeframe the full frontier of the others."""
    heads: dict[bytes, tuple[int, bytes]] = {}
    messages = []
    for _ in range(rounds):
        for key in keys:
            seq, prev = heads.get(key.public, (0, None))
            timeframe = {
                f: (s, tag_of(i)) for f, (s, i) in sorted(heads.items()) if f != key.public
            }
            message = sign_message(
                key,
                seq=seq + 1,
                prev=prev,
                timestamp=1000 + len(messages),
                timeframe=timeframe,
                tangles={},
                content={"i": len(messages)},
            )
            heads[key.public] = (seq + 1, message.id)
            messages.append(message)
    return messages


def test_a_store_hands_back_the_signed_bytes_it_took(tmp_path):
    messages = chat(feeds(5), 4)
    with FeedStore(tmp_path / "db") as store:
        assert all(r.outcome == "accepted" for r in store.writes.ingest(m.raw for m in messages))
    with FeedStore(tmp_path / "db") as store:  # numbers survive a reopen
        for message in messages:
            got = store.feeds.get(message.id)
            assert (got.raw, got.id, got.named()) == (message.raw, message.id, message.named())
        by_feed = sorted(messages, key=lambda m: (m.author, m.seq))
        assert list(store.feeds.iter_raw()) == [m.raw for m in by_feed]
        first = messages[0].author
        assert store.feeds.read_feed_raw(first) == [m.raw for m in by_feed if m.author == first]
        assert store.feeds.check().ok


def test_feed_numbers_are_assigned_once_and_kept(tmp_path):
    messages = chat(feeds(4), 3)
    with FeedStore(tmp_path / "db") as store:
        store.writes.ingest(m.raw for m in messages)
    with tamper(tmp_path / "db") as (txn, tables):
        rows = {bytes(k): bytes(v) for k, v in txn.cursor(db=tables.feeds)}
    by_key = {k: v for k, v in rows.items() if len(k) == 32}
    assert len(by_key) == 4 and len(rows) == 8  # every feed named by another, once each
    assert sorted(int.from_bytes(v, "big") for v in by_key.values()) == [0, 1, 2, 3]
    assert all(rows[number] == key for key, number in by_key.items())


def test_a_store_of_another_schema_is_refused_with_the_way_out(tmp_path):
    FeedStore(tmp_path / "db").close()
    later = str(int(SCHEMA_VERSION) + 1).encode()
    with tamper(tmp_path / "db") as (txn, tables):
        txn.put(b"schema", later, db=tables.meta)
    with pytest.raises(IncompatibleStore) as refused:
        FeedStore(tmp_path / "db")
    text = str(refused.value)
    assert f"store schema {later.decode()}, this build reads {SCHEMA_VERSION.decode()}" in text
    assert "tangled export --bundle" in text and "tangled import" in text


@pytest.mark.parametrize(
    "schema, held", [(b"8", 1), (b"10", 1), (b"11", 2), (b"12", 2)], ids=["8", "10", "11", "12"]
)
def test_a_store_of_earlier_formats_is_refused_in_one_line(tmp_path, schema, held):
    FeedStore(tmp_path / "db").close()
    with tamper(tmp_path / "db") as (txn, tables):
        txn.put(b"schema", schema, db=tables.meta)
    with pytest.raises(IncompatibleStore) as refused:
        FeedStore(tmp_path / "db")
    text = str(refused.value)
    assert "\n" not in text
    assert f"store schema {schema.decode()}" in text and f"format {held}" in text
    assert "tangled init" in text


def test_a_store_hands_back_a_header_alone_as_it_took_it(tmp_path):
    """A message that came without its content is stored and read back as its header."""
    messages = chat(feeds(3), 2)
    bare = {m.id for m in messages[1::2]}
    raws = [wire(m.header, None) if m.id in bare else m.raw for m in messages]
    with FeedStore(tmp_path / "db") as store:
        assert all(r.outcome == "accepted" for r in store.writes.ingest(raws))
    with FeedStore(tmp_path / "db") as store:
        for message, raw in zip(messages, raws, strict=True):
            got = store.feeds.get(message.id)
            assert got.raw == raw and got.has_content is (message.id not in bare)
            expected = message.without_content() if message.id in bare else message
            assert got == expected
        assert store.feeds.check().ok
