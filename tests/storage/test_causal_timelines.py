"""The node's causal-time timelines, kept by ingest and invalidation, against the
one-shot causal-time order (storage.engine.causal_time) on the present messages."""

import random

import lmdb

from tanglenode.protocol.message import TangleLink
from tanglenode.storage.engine.causal_time import causal_time_order
from tanglenode.storage.engine.timeline import TimelineTables, apply_commands
from tanglenode.storage.feeds.layout import MAX_NAMED_DATABASES, feed_key
from tests.factories import ROOT_LINK, Feed
from tests.storage.test_invalidation import deliver


def spacetime_expected(messages):
    """The causal-time order of the spacetime: links are prev and every timeframe entry."""
    by_position = {feed_key(m.author, m.seq): m for m in messages}
    events = []
    for m in messages:
        links = [feed_key(feed, seq) for feed, seq in m.timeframe.items()]
        if m.seq > 1:
            links.append(feed_key(m.author, m.seq - 1))
        present = [by_position[p].id for p in links if p in by_position]
        events.append((m.id, present, m.timestamp))
    return causal_time_order(events)


def tangle_expected(messages, name):
    members = [m for m in messages if name in m.tangles]
    return causal_time_order([(m.id, m.tangles[name].previous or (), m.timestamp) for m in members])


def check_against_one_shot(store, messages, root):
    for name, expected in (
        (store.timelines.timeline_name(None, order="causal-time"), spacetime_expected(messages)),
        (
            store.timelines.timeline_name(root.id, "chat", order="causal-time"),
            tangle_expected(messages, "chat"),
        ),
    ):
        entries = store.timelines.timeline(name)
        assert [msg_id for _time, msg_id in entries] == expected
        times = {m.id: m.timestamp for m in messages}
        assert [time for time, _id in entries] == [times[i] for i in expected]
        assert apply_commands([], store.timelines.timeline_commands(name, 0)) == expected


def test_ingest_keeps_both_causal_time_timelines_equal_to_the_one_shot(open_store):
    rng = random.Random(15)
    feeds = [Feed(f"f{n}") for n in range(4)]
    root = feeds[0].root("chat")
    messages, tips = [root], [root.id]
    for _ in range(40):
        feed = rng.choice(feeds)
        frontier = {f.public: len(f.messages) for f in feeds if f is not feed and f.messages}
        timeframe = {k: v for k, v in frontier.items() if rng.random() < 0.5}
        previous = tuple(sorted(rng.sample(tips, min(len(tips), rng.randint(1, 2)))))
        message = feed.append(
            {"n": len(messages)},
            tangles={"chat": TangleLink(root.id, previous)} if rng.random() < 0.7 else {},
            timeframe=timeframe,
            timestamp=rng.choice([5_000, rng.randint(0, 10_000)]),  # equal, falling, rising
        )
        if "chat" in message.tangles:
            tips = [t for t in tips if t not in previous] + [message.id]
        messages.append(message)
    for seed in range(3):
        store = open_store(f"s{seed}")
        raws = [m.raw for m in messages]
        random.Random(seed).shuffle(raws)
        for start in range(0, len(raws), 7):  # batches, referenced messages often later
            store.writes.ingest(raws[start : start + 7])
        deliver(store, raws)
        check_against_one_shot(store, messages, root)
        placement = store.timelines.timeline_placement(
            store.timelines.timeline_name(root.id, "chat", order="causal-time"), root.id
        )
        assert placement.time == root.timestamp
        assert store.feeds.check().ok


def test_a_fork_found_late_takes_the_branch_out_of_the_causal_time_timelines(open_store):
    alice, carol = Feed("alice"), Feed("carol")
    root = alice.append(tangles={"chat": ROOT_LINK}, timestamp=900)
    second = alice.append(tangles={"chat": TangleLink(root.id, (root.id,))}, timestamp=100)
    reply = carol.append(
        tangles={"chat": TangleLink(root.id, (second.id,))},
        timeframe={alice.public: 2},
        timestamp=50,
    )
    twin = Feed(alice.keypair)
    twin.messages = alice.messages[:1]
    other = twin.append(timestamp=10)
    store = open_store()
    deliver(store, [root.raw, second.raw, reply.raw])
    check_against_one_shot(store, [root, second, reply], root)
    store.writes.ingest([other.raw])
    assert store.feeds.invalid_feeds() == {alice.public: 2}
    check_against_one_shot(store, [root, reply], root)


def test_check_finds_a_damaged_causal_time_row(open_store, tmp_path):
    alice = Feed("alice")
    first, second = alice.append(timestamp=300), alice.append(timestamp=100)
    store = open_store()
    store.writes.ingest([first.raw, second.raw])
    assert store.feeds.check().ok
    store.close()
    env = lmdb.open(str(tmp_path / "store"), max_dbs=MAX_NAMED_DATABASES)
    try:
        tables = TimelineTables.open(env)
        with env.begin(write=True) as txn:
            key, row = next(iter(txn.cursor(db=tables.causal_nodes)))
            txn.put(key, b"\x00\x00\x00\x07" + row[4:], db=tables.causal_nodes)  # height
    finally:
        env.close()
    report = open_store().feeds.check()
    assert any("causal-time" in problem for problem in report.problems)
