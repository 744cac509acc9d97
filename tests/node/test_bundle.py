"""Bundles: the round trip through real stores, and hostile bytes refused by record number."""

import io
import random
import struct

import pytest

from tanglenode.pipeline.export import export
from tanglenode.protocol.message import TangleLink
from tanglenode.storage.clients.bundle import (
    MAGIC,
    BadRecord,
    ImportSummary,
    OtherFormat,
    archive_parts,
    import_messages,
    read_archive,
    read_bundle,
    write_bundle,
)
from tanglenode.storage.store import FeedStore
from tests.factories import Feed, break_signature, keypair

LIMIT = 16384


def populated_store(path) -> FeedStore:
    """Three feeds, a tangle with a merge, a reference still pending, a fork, our own posts."""
    store = FeedStore(path, keypair=keypair("me"), map_size=64 * 2**20)
    alice, bob, twin, carol = Feed("alice"), Feed("bob"), Feed("bob"), Feed("carol")
    root = alice.root("chat")
    a2 = alice.append("a2", tangles={"chat": TangleLink(root.id, (root.id,))})
    b1 = bob.append("b1", tangles={"chat": TangleLink(root.id, (root.id,))})
    alice.append("merge", tangles={"chat": TangleLink(root.id, (a2.id, b1.id))})
    unseen = Feed("dave").append("never delivered")
    carol.append("c1", tangles={"chat": TangleLink(root.id, (unseen.id,))}, timeframe={})
    for number in range(30):
        bob.append({"n": number}, timeframe={alice.public: 3})
    store.writes.ingest([m.raw for m in alice.messages + bob.messages + carol.messages])
    store.writes.ingest([twin.append("fork of b1").raw])
    store.writes.publish({"mine": 1}, {"chat": root.id})
    store.writes.publish({"mine": 2}, {"other": None})
    return store


def snapshot(store: FeedStore):
    feeds = [(f.author, f.head_seq, f.head_id, f.invalid_from) for f in store.feeds.held()]
    forks = sorted((e.id, tuple(sorted(e.invalid.items()))) for e in store.feeds.evidence())
    timelines = {
        name: store.timelines.timeline(name) for name, _root, _tangle in store.timelines.held()
    }
    return feeds, forks, timelines


def bundle_of(store) -> bytes:
    out = io.BytesIO()
    write_bundle(store, out)
    return out.getvalue()


def test_a_bundle_replayed_into_an_empty_store_reproduces_feeds_forks_and_timelines(tmp_path):
    with populated_store(tmp_path / "a") as original:
        data = bundle_of(original)
        expected = snapshot(original)
        held = sum(f.head_seq for f in original.feeds.held())
    assert len(expected[1]) == 1 and len(expected[2]) >= 3
    records = list(read_bundle(io.BytesIO(data), LIMIT))
    assert len(records) == held + 2  # every accepted message, then the fork pair
    with FeedStore(tmp_path / "b", map_size=64 * 2**20) as restored:
        summary = import_messages(restored, read_bundle(io.BytesIO(data), LIMIT), ImportSummary())
        # The first of the pair is accepted until the second proves the fork.
        assert summary.as_dict() == {
            "records": held + 2,
            "accepted": held + 1,
            "duplicate": 0,
            "fork": 1,
            "rejected": {},
        }
        assert snapshot(restored) == expected
        assert restored.feeds.check().ok
        again = import_messages(restored, read_bundle(io.BytesIO(data), LIMIT), ImportSummary())
        assert again.as_dict()["duplicate"] == held + 2
        assert bundle_of(restored) == data


def test_small_batches_give_the_same_store(tmp_path):
    with populated_store(tmp_path / "a") as original:
        data, expected = bundle_of(original), snapshot(original)
    with FeedStore(tmp_path / "b", map_size=64 * 2**20) as restored:
        import_messages(restored, read_bundle(io.BytesIO(data), LIMIT), ImportSummary(), batch=3)
        assert snapshot(restored) == expected


def test_an_archive_imports_like_a_bundle(tmp_path):
    with populated_store(tmp_path / "a") as original:
        export(original, tmp_path / "archive")
        expected = snapshot(original)
    with FeedStore(tmp_path / "b", map_size=64 * 2**20) as restored:
        records = read_archive(archive_parts(tmp_path / "archive"), LIMIT)
        summary = import_messages(restored, records, ImportSummary())
        assert summary.as_dict()["fork"] == 1 and not summary.rejected
        assert snapshot(restored) == expected


def another_store(path, shared: list[bytes]) -> FeedStore:
    """Feeds of its own (a tangle, a fork of frank's), our key's posts, and `shared`: messages
    the first store holds too, the same bytes, so a restore of both meets them twice."""
    store = FeedStore(path, keypair=keypair("you"), map_size=64 * 2**20)
    erin, frank, twin = Feed("erin"), Feed("frank"), Feed("frank")
    root = erin.root("notes")
    frank.append("f1", tangles={"notes": TangleLink(root.id, (root.id,))})
    for number in range(12):
        erin.append({"n": number}, timeframe={frank.public: 1})
    store.writes.ingest(shared + [m.raw for m in erin.messages + frank.messages])
    store.writes.ingest([twin.append("fork of f1").raw])
    store.writes.publish({"yours": 1}, {"notes": root.id})
    return store


def test_two_bundles_concatenated_restore_every_message_of_both(tmp_path):
    with populated_store(tmp_path / "a") as first:
        a = bundle_of(first)
        shared = [raw for raw in first.feeds.iter_raw()][:5]  # alice's first messages
        with another_store(tmp_path / "b", shared) as second:
            b = bundle_of(second)
            held = {f.author: f.head_seq for f in [*first.feeds.held(), *second.feeds.held()]}
            records = len(list(read_bundle(io.BytesIO(a), LIMIT))) + len(
                list(read_bundle(io.BytesIO(b), LIMIT))
            )
    with FeedStore(tmp_path / "in-turn", map_size=64 * 2**20) as in_turn:  # a, then b
        for data in (a, b):
            import_messages(in_turn, read_bundle(io.BytesIO(data), LIMIT), ImportSummary())
        expected = snapshot(in_turn)
    with FeedStore(tmp_path / "restored", map_size=64 * 2**20) as restored:
        summary = import_messages(restored, read_bundle(io.BytesIO(a + b), LIMIT), ImportSummary())
        counts = summary.as_dict()
        assert counts["records"] == records and not counts["rejected"]
        assert counts["duplicate"] == len(shared) and counts["fork"] == 2  # bob's and frank's
        assert {f.author: f.head_seq for f in restored.feeds.held()} == held
        assert snapshot(restored) == expected
        assert restored.feeds.check().ok
    # An empty bundle anywhere in the chain adds nothing and breaks nothing.
    assert list(read_bundle(io.BytesIO(MAGIC + a + MAGIC + MAGIC + b), LIMIT)) == list(
        read_bundle(io.BytesIO(a + b), LIMIT)
    )


@pytest.mark.parametrize("at_start", [True, False], ids=["first", "appended"])
def test_a_bundle_of_another_format_is_refused_where_its_header_stands(tmp_path, at_start):
    later = b"TNB\x04" + record(b"a message of a format this build cannot judge")
    data = later + MAGIC + record(GOOD[0]) if at_start else MAGIC + record(GOOD[0]) + later
    with FeedStore(tmp_path / "s", map_size=2**22) as store:
        summary = ImportSummary()
        with pytest.raises(OtherFormat, match="format 4 begins here") as refused:
            import_messages(store, read_bundle(io.BytesIO(data), LIMIT), summary)
        assert refused.value.format == 4 and isinstance(refused.value, BadRecord)
        assert refused.value.record == (1 if at_start else 2)
        assert summary.records == (0 if at_start else 1)  # nothing of format 4 was read


def record(raw: bytes) -> bytes:
    return struct.pack(">I", len(raw)) + raw


GOOD = [m.raw for m in (lambda f: [f.append(n) for n in range(3)])(Feed("g"))]


@pytest.mark.parametrize(
    "data, number, detail",
    [
        (MAGIC + record(GOOD[0]) + struct.pack(">I", LIMIT + 1) + b"x" * 10, 2, "over the"),
        (MAGIC + record(GOOD[0]) + record(GOOD[1])[:-5], 2, f"cut short: {len(GOOD[1]) - 5} of"),
        (MAGIC + record(GOOD[0]) + b"\x00\x00", 2, "length prefix is cut short"),
        (MAGIC + record(GOOD[0]) + struct.pack(">I", 0), 2, "length 0"),
        (MAGIC + b"\xff" * 64, 1, "over the message size"),
        (b"\xff" * 64, 1, "not a bundle"),
        (b"PAR1" + b"\0" * 60, 1, "not a bundle"),
        (record(GOOD[0]) + record(GOOD[1]), 1, "format 1"),
        (MAGIC[:2], 1, "not a bundle"),
    ],
    ids=[
        "over-limit",
        "truncated-body",
        "truncated-prefix",
        "zero-length",
        "garbage",
        "no-header",
        "parquet",
        "format-1",
        "header-cut-short",
    ],
)
def test_hostile_framing_is_refused_with_the_record_number(tmp_path, data, number, detail):
    with FeedStore(tmp_path / "s", map_size=2**22) as store:
        summary = ImportSummary()
        with pytest.raises(BadRecord, match=detail) as refused:
            import_messages(store, read_bundle(io.BytesIO(data), LIMIT), summary)
        assert refused.value.record == number
        assert summary.records == number - 1  # those before it were ingested
        assert store.feeds.get_by_seq(Feed("g").public, 1) is not None or number == 1


def test_garbage_inside_records_is_rejected_by_reason(tmp_path):
    rng = random.Random(11)
    junk = [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))) for _ in range(40)]
    tampered = break_signature(GOOD[1])
    data = MAGIC + b"".join(record(raw) for raw in [GOOD[0], *junk, tampered, GOOD[2]])
    with FeedStore(tmp_path / "s", map_size=2**22) as store:
        summary = import_messages(store, read_bundle(io.BytesIO(data), LIMIT), ImportSummary())
        counts = summary.as_dict()
        assert counts["records"] == 43 and counts["accepted"] == 1
        assert sum(counts["rejected"].values()) == 42
        assert counts["rejected"]["bad-signature"] >= 1
        assert counts["rejected"]["missing-previous"] == 1  # GOOD[2] without GOOD[1]
        assert store.feeds.check().ok
