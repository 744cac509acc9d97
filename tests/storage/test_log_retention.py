"""Command logs with a retention (storage/engine/command_log.py), in real stores: each log
keeps its newest commands from an event boundary on, its floor committed with the trim; the
snapshot at the floor and the log after it give the order a store keeping everything has."""

import random

import pytest

from tanglenode.protocol.message import TangleLink
from tanglenode.storage.engine.command_log import (
    DEFAULT_KEEP_COMMANDS,
    DEFAULT_RETENTION,
    KEEP_ALL,
    MIN_SLACK,
    NO_LOG,
    LogRetention,
)
from tanglenode.storage.engine.keys import U64
from tanglenode.storage.engine.timeline import Insert, Move, apply_commands
from tanglenode.storage.errors import BelowLogFloor
from tanglenode.storage.registry import view_names
from tanglenode.storage.reindex import reindex
from tanglenode.storage.views.timelines import SPACETIME
from tests.factories import Feed, late_arrivals
from tests.timeline_oracle import EngineHarness

WINDOW = LogRetention(keep=6, slack=2)
EVERYTHING = 10**6  # a limit no log here reaches


def timeline_names(store) -> list[bytes]:
    """Every timeline of the store: spacetime, tangles, joined views and causal-time twins."""
    tables = store.ctx.timeline_tables
    with store.ctx.read() as txn:
        return [bytes(name) for name in txn.cursor(db=tables.names).iternext(values=False)]


def log_rows(store, name: bytes) -> dict[int, bytes]:
    """The raw `tl-log` rows of one timeline: first version -> the event's encoded commands."""
    tables = store.ctx.timeline_tables
    with store.ctx.read() as txn:
        prefix = bytes(txn.get(name, db=tables.names))
        cursor = txn.cursor(db=tables.log)
        rows = {}
        if cursor.set_range(prefix):
            for key, value in cursor:
                if key[:4] != prefix:
                    break
                rows[U64.unpack(key[4:])[0]] = bytes(value)
        return rows


def ingest_both(stores, arrival, rng: random.Random, checks) -> None:
    """The same batches into every store, `checks()` after each."""
    at = 0
    while at < len(arrival):
        batch = [m.raw for m in arrival[at : at + rng.choice((1, 1, 2, 3, 7))]]
        for store in stores:
            store.writes.ingest(batch)
        at += len(batch)
        checks()


def assert_window(kept, full, retention: LogRetention) -> int:
    """Every log of `kept` is the newest part of `full`'s, cut at an event boundary and no
    longer than keep + slack; replayed on the order at its floor, it gives the order. The
    number of logs with a floor."""
    trimmed = 0
    names = timeline_names(full)
    assert timeline_names(kept) == names
    for name in names:
        version = kept.timelines.timeline_version(name)
        floor = kept.timelines.timeline_floor(name)
        assert version == full.timelines.timeline_version(name), name
        assert version - floor <= retention.keep + retention.slack, name
        all_rows, rows = log_rows(full, name), log_rows(kept, name)
        assert floor == version or floor + 1 in all_rows, name  # an event's first command
        assert rows == {first: row for first, row in all_rows.items() if first > floor}, name
        order = kept.timelines.timeline(name)
        assert order == full.timelines.timeline(name), name
        history = full.timelines.timeline_commands(name, 0, EVERYTHING)
        snapshot = apply_commands([], history[:floor])  # the order at the floor
        tail = kept.timelines.timeline_commands(name, floor, EVERYTHING)
        assert apply_commands(snapshot, tail) == [sort_id for _key, sort_id in order], name
        trimmed += floor > 0
    assert kept.timelines.spacetime_final() == full.timelines.spacetime_final()
    return trimmed


def test_each_log_keeps_its_newest_commands_from_an_event_boundary_across_reopening(open_store):
    rng = random.Random(28)
    _root, arrival = late_arrivals(rng, feeds=4, per_feed=10, fork=True)
    kept, full = open_store("kept", retention=WINDOW), open_store("full", retention=KEEP_ALL)
    floors: list[int] = []
    ingest_both(
        [kept, full], arrival[:25], rng, lambda: floors.append(assert_window(kept, full, WINDOW))
    )
    assert floors[-1] >= 4  # spacetime, tangle, both twins: trimmed
    kinds = {type(c) for c in full.timelines.timeline_commands(SPACETIME, 0, EVERYTHING)}
    assert Move in kinds  # events of several commands, so the boundary matters
    before = {name: kept.timelines.timeline_floor(name) for name in timeline_names(kept)}
    kept.close()
    kept = open_store("kept", retention=WINDOW)
    assert {name: kept.timelines.timeline_floor(name) for name in before} == before
    ingest_both([kept, full], arrival[25:], rng, lambda: assert_window(kept, full, WINDOW))


def test_a_store_reopened_keeping_everything_keeps_its_floor_and_trims_no_more(open_store):
    rng = random.Random(5)
    root, arrival = late_arrivals(rng, feeds=3, per_feed=8)
    kept = open_store("kept", retention=WINDOW)
    kept.writes.ingest([m.raw for m in arrival[:20]])
    name = kept.timelines.timeline_name(root.id, "chat")
    floor = kept.timelines.timeline_floor(name)
    assert floor > 0
    kept.close()
    kept = open_store("kept", retention=KEEP_ALL)
    kept.writes.ingest([m.raw for m in arrival[20:]])
    assert kept.timelines.timeline_floor(name) == floor
    held = kept.timelines.timeline_version(name) - floor
    assert held > WINDOW.keep + WINDOW.slack
    assert len(kept.timelines.timeline_commands(name, floor, EVERYTHING)) == held


def test_reads_below_the_floor_raise_and_from_the_floor_are_whole(open_store):
    rng = random.Random(11)
    root, arrival = late_arrivals(rng, feeds=3, per_feed=6)
    store = open_store(retention=WINDOW)
    store.writes.ingest([m.raw for m in arrival])
    name = store.timelines.timeline_name(root.id, "chat")
    version, floor = store.timelines.timeline_version(name), store.timelines.timeline_floor(name)
    assert 0 < floor < version
    for read in (
        lambda since: store.timelines.timeline_commands(name, since),
        lambda since: store.timelines.timeline_log(name, since)[1],
        lambda since: store.timelines.timeline_updates(name, since)[1],
    ):
        with pytest.raises(BelowLogFloor) as below:
            read(floor - 1)
        assert (below.value.since, below.value.floor) == (floor - 1, floor)
        assert len(read(floor)) == version - floor
        assert read(version) == []


def test_an_event_longer_than_the_window_empties_the_log(tmp_path):
    """b waits for x; c sorts after b; x arrives: `ins` x and `mov` b past both, one event
    of two commands, more than a window of one: the log empties, its floor at the head."""
    engine = EngineHarness(tmp_path / "tl", retention=LogRetention(keep=1, slack=0))
    try:
        assert engine.add(b"b", [b"x"]) == [Insert(0, b"b")]
        engine.add(b"c")
        assert engine.add(b"x") == [Insert(2, b"x"), Move(0, 2)]
        with engine.env.begin() as txn:
            reader = engine.reader(txn)
            assert (reader.version(b"t"), reader.floor(b"t")) == (4, 4)
            assert reader.commands_since(b"t", 4) == []
            with pytest.raises(BelowLogFloor):
                reader.commands_since(b"t", 3)
        engine.add(b"d", [b"x"])  # a log of one event, of one command: kept
        with engine.env.begin() as txn:
            assert engine.reader(txn).commands_since(b"t", 4) == [Insert(3, b"d")]
    finally:
        engine.close()


def test_a_rebuild_restarts_a_trimmed_log_above_its_head(open_store):
    rng = random.Random(3)
    root, arrival = late_arrivals(rng, feeds=3, per_feed=6)
    store = open_store(retention=WINDOW)
    store.writes.ingest([m.raw for m in arrival])
    name = store.timelines.timeline_name(root.id, "chat")
    old = store.timelines.timeline_version(name)
    reindex(store.ctx, store.views, view_names())
    floor = store.timelines.timeline_floor(name)
    assert floor == store.timelines.timeline_version(name) > old
    assert log_rows(store, name) == {}


def test_no_log_writes_no_command_and_drops_the_log_kept_before(open_store):
    """An offline import's retention (NO_LOG): the same timelines as a store keeping every
    command, no `tl-log` row, every floor at its version (a subscriber of an earlier one
    starts from a snapshot); a log kept before is dropped by the first write without one."""
    rng = random.Random(5)
    root, arrival = late_arrivals(rng, feeds=3, per_feed=6)
    half = len(arrival) // 2
    kept, bare = open_store("kept", retention=KEEP_ALL), open_store("bare", retention=WINDOW)
    kept.writes.ingest([m.raw for m in arrival])
    bare.writes.ingest([m.raw for m in arrival[:half]])
    name = bare.timelines.timeline_name(root.id, "chat")
    assert log_rows(bare, name) != {}  # a log kept under WINDOW until now
    bare.close()
    bare = open_store("bare", retention=NO_LOG)
    bare.writes.ingest([m.raw for m in arrival[half:]])
    for each in timeline_names(kept):
        assert bare.timelines.timeline_at(each)[1] == kept.timelines.timeline_at(each)[1]
        version = bare.timelines.timeline_version(each)
        assert bare.timelines.timeline_floor(each) == version
        assert log_rows(bare, each) == {}
        if version:
            with pytest.raises(BelowLogFloor):
                bare.timelines.timeline_log(each, version - 1, EVERYTHING)


def test_the_default_retention_keeps_small_tangles_whole():
    assert LogRetention(DEFAULT_KEEP_COMMANDS, DEFAULT_KEEP_COMMANDS // 8) == DEFAULT_RETENTION
    assert LogRetention.keeping(0) == KEEP_ALL
    assert LogRetention.keeping(100) == LogRetention(100, MIN_SLACK)  # one seek, many rows
    for bad in (-1, True, 1.5, "4096"):
        with pytest.raises(ValueError):
            LogRetention.keeping(bad)
    for keep, slack in ((0, 0), (-3, 0), (4, -1), (None, True)):
        with pytest.raises(ValueError):
            LogRetention(keep, slack)


def test_a_store_takes_only_a_retention(tmp_path):
    from tanglenode.storage.store import FeedStore

    with pytest.raises(TypeError, match="LogRetention"):
        FeedStore(tmp_path / "store", retention=4096)


def test_publishing_past_the_window_trims_in_the_publishing_transaction(open_store):
    """Our own messages go through the same writer: a publish that crosses keep + slack
    trims every log it appended to, and the floor is read back from the meta row."""
    from tests.factories import keypair

    store = open_store(keypair=keypair("retain-me"), retention=LogRetention(keep=4, slack=1))
    root = store.writes.publish("root", {"chat": None})
    for n in range(12):
        store.writes.publish(n, {"chat": root.id})
    other = Feed("retain-other")
    store.writes.ingest([other.append("x", tangles={"chat": TangleLink(root.id, (root.id,))}).raw])
    timelines = store.timelines
    for name in timeline_names(store):
        version, floor = timelines.timeline_version(name), timelines.timeline_floor(name)
        assert version - floor <= 5 and floor > 0, name
        assert len(store.timelines.timeline_commands(name, floor)) == version - floor
