"""Timeline digests resumed from checkpoints: the same bytes as a full pass, whatever changed."""

import itertools
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tanglenode.protocol.message import TangleLink
from tanglenode.storage.engine.command_log import KEEP_ALL, LogRetention
from tanglenode.storage.engine.timeline_reader import TimelineReader
from tanglenode.storage.views import digest as digest_module
from tanglenode.storage.views.digest import _Cache, _Cached, order_digest
from tanglenode.storage.views.timelines import SPACETIME
from tests.factories import Feed, late_arrivals

_EXAMPLES = itertools.count()  # hypothesis may draw one (seed, chunk) twice: a store each


def _timelines(store, root):
    return [
        SPACETIME,
        store.timelines.timeline_name(None, order="causal-time"),
        store.timelines.timeline_name(root.id, "chat"),
        store.timelines.timeline_name(root.id, "chat", order="causal-time"),
    ]


def _check(store, names) -> None:
    for name in names:
        ids = [msg_id for _key, msg_id in store.timelines.timeline(name)]
        found = store.digests.timeline_digest(name)
        assert (found.count, found.digest) == (len(ids), order_digest(ids)), name
        assert found.version == store.timelines.timeline_version(name)


def _ingest_and_check(store, root, arrival, rng: random.Random) -> None:
    names = _timelines(store, root)
    store.writes.ingest([arrival[0].raw])
    at = 1
    while at < len(arrival):
        batch = arrival[at : at + rng.choice((1, 1, 1, 2, 5))]
        store.writes.ingest([m.raw for m in batch])
        at += len(batch)
        if rng.random() < 0.8:  # sometimes skip: a digest several ingests old
            _check(store, names)
    _check(store, names)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 2**32 - 1), chunk=st.sampled_from([1, 2, 3, 5]))
def test_resumed_digests_equal_the_full_pass_property(open_store, monkeypatch, seed, chunk):
    monkeypatch.setattr(digest_module, "CHUNK", chunk)
    monkeypatch.setattr(digest_module, "LOG_SHARE", 1)  # resume whenever the log allows
    rng = random.Random(seed)
    root, arrival = late_arrivals(rng, feeds=3, per_feed=rng.randint(2, 6), fork=rng.random() < 0.5)
    _ingest_and_check(open_store(f"p{seed}-{chunk}-{next(_EXAMPLES)}"), root, arrival, rng)


@pytest.mark.parametrize("log_share", [1, 8])
def test_both_paths_run_over_many_versions(open_store, monkeypatch, log_share):
    """With LOG_SHARE 8 on small timelines most passes are full (the fallback); with 1 most
    resume; either way every digest equals the full order's."""
    monkeypatch.setattr(digest_module, "CHUNK", 2)
    monkeypatch.setattr(digest_module, "LOG_SHARE", log_share)
    passes = {"full": 0, "resumed": 0}
    kinds: set[str] = set()
    for seed in range(4):
        store = open_store(f"s{seed}")
        rng = random.Random(seed)
        root, arrival = late_arrivals(rng, feeds=4, per_feed=8, fork=True)
        _ingest_and_check(store, root, arrival, rng)
        kinds |= {type(c).__name__ for c in store.timelines.timeline_commands(SPACETIME, 0)}
        for path, count in store.digests.cache.passes.items():
            passes[path] += count
    assert passes["resumed"] > 20 and passes["full"] > 20
    assert kinds == {"Insert", "Move", "Delete"}


def test_the_pass_resumes_at_the_last_checkpoint_at_or_below_the_lowest_change(
    open_store, monkeypatch
):
    """Replies naming the root all rank 1, in id order: a late one lands where its id
    sorts. Landing at 3, 4, 7 and 8 with CHUNK 4, the pass must restart at 0, 4, 4 and 8:
    one later would hash a changed entry out of its checkpoint, one earlier wastes a chunk."""
    monkeypatch.setattr(digest_module, "CHUNK", 4)
    monkeypatch.setattr(digest_module, "LOG_SHARE", 1)
    starts: list[tuple[bytes, int]] = []
    entries = TimelineReader.entries

    def spied(self, name, start=0, stop=None):
        starts.append((name, start))
        return entries(self, name, start, stop)

    monkeypatch.setattr(TimelineReader, "entries", spied)
    root = Feed("o-root").root("chat")
    replies = [
        Feed(f"o-{n}").append(n, tangles={"chat": TangleLink(root.id, (root.id,))})
        for n in range(1000)
    ]
    store = open_store()
    store.writes.ingest([root.raw] + [m.raw for m in replies[:11]])
    held = sorted(m.id for m in replies[:11])
    pool = replies[11:]
    name = store.timelines.timeline_name(root.id, "chat")
    store.digests.timeline_digest(name)  # 12 entries: checkpoints after 4, 8 and 12
    for position in (3, 4, 7, 8, 12, 5):
        late = next(m for m in pool if 1 + sum(i < m.id for i in held) == position)
        pool.remove(late)
        held = sorted([*held, late.id])
        store.writes.ingest([late.raw])
        starts.clear()
        found = store.digests.timeline_digest(name)
        ids = [msg_id for _rank, msg_id in store.timelines.timeline(name)]
        assert ids.index(late.id) == position
        assert found.digest == order_digest(ids)
        assert next(start for n, start in starts if n == name) == position // 4 * 4


def test_a_log_too_long_or_incomplete_means_a_full_pass(open_store, monkeypatch):
    monkeypatch.setattr(digest_module, "CHUNK", 2)
    root, arrival = late_arrivals(random.Random(7), feeds=3, per_feed=6)
    store = open_store()
    store.writes.ingest([m.raw for m in arrival[:12]])
    name = store.timelines.timeline_name(root.id, "chat")
    store.digests.timeline_digest(name)
    passes = store.digests.cache.passes
    store.writes.ingest([m.raw for m in arrival[12:14]])  # 2 commands or more > 12 // 8
    full = passes["full"]
    assert store.digests.timeline_digest(name).digest == order_digest(
        msg_id for _rank, msg_id in store.timelines.timeline(name)
    )
    assert passes["full"] == full + 1
    monkeypatch.setattr(digest_module, "LOG_SHARE", 1)
    monkeypatch.setattr(TimelineReader, "commands_since", lambda *_args: [])  # a lost log
    store.writes.ingest([arrival[14].raw])
    assert store.digests.timeline_digest(name).digest == order_digest(
        msg_id for _rank, msg_id in store.timelines.timeline(name)
    )
    assert passes["full"] == full + 2 and passes["resumed"] == 0


def test_a_digest_cached_below_the_log_floor_is_hashed_again_not_advanced(open_store, monkeypatch):
    """The log's retention dropped the commands since the cached version: the digest is
    never advanced through what is left of the log; it is computed again, and equals the
    digest of a store that keeps every command, batch after batch."""
    monkeypatch.setattr(digest_module, "CHUNK", 2)
    monkeypatch.setattr(digest_module, "LOG_SHARE", 1)  # resume whenever the log allows
    rng = random.Random(7)
    root, arrival = late_arrivals(rng, feeds=3, per_feed=8, fork=True)
    kept = open_store("kept", retention=LogRetention(keep=2, slack=0))
    full = open_store("full", retention=KEEP_ALL)
    names = _timelines(kept, root)
    at = 0
    while at < len(arrival):
        batch = [m.raw for m in arrival[at : at + rng.choice((1, 3))]]
        cached = {n: kept.digests.timeline_digest(n).version for n in names} if at else {}
        for store in (kept, full):
            store.writes.ingest(batch)
        at += len(batch)
        for name in names:
            assert kept.digests.timeline_digest(name) == full.digests.timeline_digest(name)
        below = [n for n, v in cached.items() if kept.timelines.timeline_floor(n) > v]
        if len(batch) == 3 and at > 12:
            assert below  # three messages passed a window of two commands
    _check(kept, names)
    assert kept.digests.cache.passes["resumed"] > 0  # the log still served when it could


def test_checkpoints_are_bounded_least_recently_used_first_out():
    def cached(version: int, states: int) -> _Cached:
        digest = digest_module.TimelineDigest(version, 0, b"")
        return _Cached(digest, tuple(object() for _ in range(states)))

    cache = _Cache(slots=3, budget=5)
    cache.put(b"a", cached(1, 3), resumed=False)
    cache.put(b"b", cached(1, 2), resumed=False)
    assert cache.states() == 5
    cache.put(b"c", cached(1, 2), resumed=False)  # a, least recently used, loses its own
    assert cache.states() == 4 and cache.get(b"a").checkpoints == ()
    assert cache.get(b"a").digest.version == 1  # the digest stays
    cache.put(b"d", cached(1, 9), resumed=False)  # alone over the budget: keeps none
    assert cache.get(b"d").checkpoints == () and cache.get(b"b") is None  # 3 slots
    cache.put(b"c", cached(0, 1), resumed=False)  # an older moment does not replace
    assert cache.get(b"c").digest.version == 1 and cache.states() == 2


def test_a_removal_that_lowers_a_member_below_it_resumes_below_both(open_store, monkeypatch):
    """carol:1 names alice:2 only; when alice forks at 2, alice:2 leaves (`del`) and carol:1
    falls to rank 0, below it (`mov` down): the lowest change is the move's destination."""
    monkeypatch.setattr(digest_module, "CHUNK", 2)
    monkeypatch.setattr(digest_module, "LOG_SHARE", 1)
    alice = Feed("l-alice")
    first, second = alice.append(1), alice.append(2)
    fillers = [Feed(f"l-{n}").append(n) for n in range(8)]
    rank_zero = [first.id] + [m.id for m in fillers]
    carols = (Feed(f"l-carol{n}").append("c", timeframe={alice.public: 2}) for n in range(200))
    carol = next(m for m in carols if sum(i < m.id for i in rank_zero) < 2)
    store = open_store()
    store.writes.ingest([first.raw, second.raw, carol.raw] + [m.raw for m in fillers])
    before = store.digests.timeline_digest(SPACETIME)
    twin = Feed(alice.keypair)
    twin.messages = [first]
    store.writes.ingest([twin.append("other").raw])  # a fork at 2
    commands = store.timelines.timeline_commands(SPACETIME, before.version)
    assert [type(c).__name__ for c in commands] == ["Delete", "Move"]
    assert commands[1].dst < 2 <= commands[0].pos
    found = store.digests.timeline_digest(SPACETIME)
    ids = [msg_id for _rank, msg_id in store.timelines.timeline(SPACETIME)]
    assert (found.count, found.digest) == (len(ids), order_digest(ids))


def test_forget_makes_the_next_digest_a_full_pass(open_store, monkeypatch):
    """bench/digest.py times `forget` then a digest as the full pass: nothing may resume,
    every checkpoint is gone, and the digest is the same bytes."""
    monkeypatch.setattr(digest_module, "CHUNK", 2)
    monkeypatch.setattr(digest_module, "LOG_SHARE", 1)  # resume whenever the log allows
    root, arrival = late_arrivals(random.Random(3), feeds=3, per_feed=6)
    store = open_store()
    store.writes.ingest([m.raw for m in arrival[:-2]])
    names = _timelines(store, root)
    for name in names:
        store.digests.timeline_digest(name)
    passes = store.digests.cache.passes
    store.writes.ingest([arrival[-2].raw])
    store.digests.timeline_digest(SPACETIME)
    assert passes["resumed"] == 1 and store.digests.cache.states() > 0  # without forget
    store.writes.ingest([arrival[-1].raw])
    store.digests.forget()
    assert store.digests.cache.states() == 0
    full = passes["full"]
    _check(store, names)
    assert passes["resumed"] == 1 and passes["full"] == full + len(names)
