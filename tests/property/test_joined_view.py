"""Hypothesis: the joined view is the joining recipe run on the messages held, whatever the order.

A few feeds write into tangle `chat` (rooted, or not, at the first message),
into tangle `other`, and plain posts; members of `chat` name any earlier
message (of `chat`, of `other`, a post), an id that never exists, and now and
then claim a post as their root. A fork twin may cut a feed back (a proof,
storage.feeds.invalidation). Two stores get the pool in two random orders (each
feed in seq order), in random batches, one reopened between batches.

After every batch, each store's tangle states (joined / pending with what it
waits on / invalid with its reason), joined timelines, tips and joined logs
are what a from-scratch oracle gives for the messages that store holds at
that moment: the joining recipe (docs/FORMAT.md, "Tangles"), "start from the
root, add a member only when the graph holds each message in its `previous`,
otherwise set it aside until it does", and the joined timeline is the graph sorted by
(rank, id). At the end both stores agree, and pass `check()`.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tanglenode.protocol.limits import UNLIMITED
from tanglenode.protocol.message import ROOT_LINK, TangleLink, decode_message
from tanglenode.storage.engine.timeline import Insert
from tanglenode.storage.store import FeedStore
from tests.factories import ALL_VIEWS, Feed

MAP_SIZE = 2**24
NAMES = ("chat", "other")


@st.composite
def pools(draw):
    feeds = [Feed(f"joined-{index}") for index in range(draw(st.integers(2, 3)))]
    written = [feeds[0].root("chat")]
    if draw(st.booleans()):
        written.append(feeds[-1].root("other"))
    for _ in range(draw(st.integers(2, 12))):
        author = draw(st.sampled_from(feeds))
        kind = draw(st.sampled_from(["chat", "chat", "chat", "other", "post"]))
        if kind == "post":
            written.append(author.append({"post": len(written)}))
            continue
        roots = [m for m in written if m.tangles.get(kind) == ROOT_LINK]
        posts = [m for m in written if not m.tangles]
        if not roots and not posts:
            continue
        pick_post = posts and (not roots or draw(st.integers(0, 9)) == 0)
        root = draw(st.sampled_from(posts if pick_post else roots))
        chosen = draw(st.sets(st.integers(0, len(written) - 1), min_size=1, max_size=3))
        previous = {written[index].id for index in chosen}
        if draw(st.integers(0, 7)) == 0:
            previous.add(bytes([len(written)]) * 32)  # names a message that never exists
        link = TangleLink(root.id, tuple(sorted(previous)))
        written.append(author.append(tangles={kind: link}))
    pool = list(written)
    if draw(st.integers(0, 2)):  # a fork twin of one feed: its proof cuts that feed back
        base = draw(st.sampled_from(feeds))
        if base.messages:
            shared = draw(st.integers(0, len(base.messages) - 1))
            twin = Feed(base.keypair)
            twin.messages = base.messages[:shared]
            pool.append(twin.append({"twin": shared}))
    return feeds, pool


@st.composite
def deliveries(draw, pool):
    """A random interleaving keeping each feed's seq order, cut into batches."""
    order = draw(st.permutations(pool))
    by_feed: dict[bytes, list] = {}
    for message in sorted(pool, key=lambda m: m.seq):
        by_feed.setdefault(message.author, []).append(message)
    arrival = [by_feed[message.author].pop(0) for message in order]
    cuts = sorted(draw(st.sets(st.integers(1, len(arrival)), max_size=4)) | {len(arrival)})
    return [arrival[start:end] for start, end in zip([0, *cuts], cuts, strict=False)]


def oracle(held):
    """Per tangle (name, root): {id: state}, joined entries, tips, from the messages held."""
    by_id = {m.id: m for m in held}
    tangles: dict[tuple[str, bytes], dict] = {}
    for message in held:
        for name in message.tangles:
            tangles.setdefault((name, message.tangle_root(name)), {})[message.id] = message
    result = {}
    for (name, root), candidates in tangles.items():
        graph: dict[bytes, int] = {}  # id -> rank
        if root in candidates:
            graph[root] = 0
        grew = True
        while grew:  # the recipe, literally
            grew = False
            for msg_id, message in candidates.items():
                previous = message.tangles[name].previous
                if msg_id not in graph and previous and all(p in graph for p in previous):
                    graph[msg_id] = 1 + max(graph[p] for p in previous)
                    grew = True
        states = {}
        for msg_id, message in candidates.items():
            previous = message.tangles[name].previous or ()
            if msg_id in graph:
                states[msg_id] = ("joined", None, ())
            elif root in by_id and root not in candidates:
                states[msg_id] = ("invalid", "root-not-a-root", ())
            elif any(p in by_id and p not in candidates for p in previous):
                states[msg_id] = ("invalid", "previous-outside-tangle", ())
            else:
                states[msg_id] = ("pending", None, tuple(p for p in previous if p not in graph))
        named = {p for m in graph for p in candidates[m].tangles[name].previous or ()}
        result[(name, root)] = {
            "states": states,
            "joined": sorted((rank, msg_id) for msg_id, rank in graph.items()),
            "tips": sorted(m for m in graph if m not in named),
        }
    return result


def observed(store, keys):
    """The same, read from the store through its public reads."""
    result = {}
    for name, root in keys:
        full = store.timelines.timeline_name(root, name)
        joined = store.timelines.timeline_name(root, name, "joined")
        states = {}
        for _rank, msg_id, state in store.timelines.timeline_at(full, states=True)[1]:
            _placement, member = store.timelines.timeline_member(full, msg_id)
            assert member.state == state
            states[msg_id] = (state, member.reason, member.waiting)
        entries = store.timelines.timeline(joined)
        commands = store.timelines.timeline_commands(joined, 0)
        if all(isinstance(command, Insert) for command in commands):  # no removal happened
            assert len(commands) == len(entries)  # one `ins` per joined member, never a `mov`
        result[(name, root)] = {
            "states": states,
            "joined": entries,
            "tips": store.tangles.tangle_tips(root, name),
        }
    return result


def held_messages(store):
    return [decode_message(raw, UNLIMITED) for raw in store.feeds.iter_raw()]


def keys_of(pool):
    return {(n, m.tangle_root(n)) for m in pool for n in m.tangles}


@given(st.data())
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_joined_view_is_the_recipe_on_what_is_held(data):
    _feeds, pool = data.draw(pools())
    keys = keys_of(pool)
    finals = []
    with tempfile.TemporaryDirectory() as tmp:
        for number in range(2):
            batches = data.draw(deliveries(pool))
            reopen_at = data.draw(st.integers(0, len(batches)))
            path = Path(tmp) / f"store-{number}"
            store = FeedStore(path, map_size=MAP_SIZE, views=ALL_VIEWS)
            try:
                for index, batch in enumerate(batches):
                    if index == reopen_at:
                        store.close()
                        store = FeedStore(path, map_size=MAP_SIZE, views=ALL_VIEWS)
                    for _round in range(2):  # a twin's proof can come before its feed's tail
                        store.writes.ingest([message.raw for message in batch])
                    held = held_messages(store)
                    expected = oracle(held)
                    present_keys = {key for key in keys if key in expected}
                    seen = observed(store, present_keys)
                    assert seen == {key: expected[key] for key in present_keys}
                    report = store.feeds.check()
                    assert report.ok, report.problems
                finals.append((sorted(m.id for m in held_messages(store)), seen))
            finally:
                store.close()
    if finals[0][0] == finals[1][0]:  # the same messages held: the same joined views
        assert finals[0][1] == finals[1][1]
