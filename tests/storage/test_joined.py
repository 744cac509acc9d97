"""The joined view of tangles (the joining recipe): states, the joined timeline, tips."""

import pytest

from tanglenode.protocol.message import TangleLink
from tanglenode.storage.engine.timeline import Insert
from tanglenode.storage.errors import UnknownTangle
from tanglenode.storage.feeds.ingest import Outcome
from tests.factories import Feed, keypair
from tests.tamper import tamper_views


def link(root, *previous):
    return {"chat": TangleLink(root.id, tuple(sorted(m.id for m in previous)))}


def views(store, root):
    """(full order with states, joined order) of tangle chat/root."""
    full = store.timelines.timeline_at(store.timelines.timeline_name(root.id, "chat"), states=True)[
        1
    ]
    joined = store.timelines.timeline(store.timelines.timeline_name(root.id, "chat", "joined"))
    return full, joined


def states(store, root):
    return {entry[1]: entry[2] for entry in views(store, root)[0]}


def joined_log_is_inserts_only(store, root):
    name = store.timelines.timeline_name(root.id, "chat", "joined")
    commands = store.timelines.timeline_commands(name, 0)
    return all(isinstance(command, Insert) for command in commands) and len(commands) == len(
        store.timelines.timeline(name)
    )


def ingest(store, *messages):
    results = store.writes.ingest([m.raw for m in messages])
    assert {r.outcome for r in results} == {Outcome.ACCEPTED}, results


def test_members_arriving_in_order_join_at_once(store):
    alice, bob = Feed("alice"), Feed("bob")
    root = alice.root("chat")
    a = alice.append(tangles=link(root, root))
    b = bob.append(tangles=link(root, root))
    m = alice.append(tangles=link(root, a, b))
    ingest(store, root, a, b, m)
    full, joined = views(store, root)
    assert [entry[2] for entry in full] == ["joined"] * 4
    assert joined == [entry[:2] for entry in full]
    assert store.tangles.tangle_tips(root.id, "chat") == [m.id]
    assert joined_log_is_inserts_only(store, root)
    assert store.feeds.check().ok


def test_set_aside_members_join_when_what_they_name_arrives(store):
    alice, bob, carol = Feed("alice"), Feed("bob"), Feed("carol")
    root = alice.root("chat")
    a = bob.append(tangles=link(root, root))
    b = carol.append(tangles=link(root, a))
    c = carol.append(tangles=link(root, b))
    ingest(store, b, c)
    assert states(store, root) == {b.id: "pending", c.id: "pending"}
    assert store.timelines.timeline(store.timelines.timeline_name(root.id, "chat", "joined")) == []
    assert store.tangles.tangle_tips(root.id, "chat") == []
    _placement, state = store.timelines.timeline_member(
        store.timelines.timeline_name(root.id, "chat"), c.id
    )
    assert (state.state, state.waiting) == ("pending", (b.id,))
    ingest(store, root)
    assert states(store, root) == {root.id: "joined", b.id: "pending", c.id: "pending"}
    assert store.tangles.tangle_tips(root.id, "chat") == [root.id]
    ingest(store, a)  # joins, and b and c after it
    full, joined = views(store, root)
    assert set(states(store, root).values()) == {"joined"}
    assert joined == [entry[:2] for entry in full]
    assert store.tangles.tangle_tips(root.id, "chat") == [c.id]
    assert joined_log_is_inserts_only(store, root)
    assert store.feeds.check().ok


def test_a_previous_outside_the_tangle_makes_a_member_invalid_in_either_order(open_store):
    alice, bob = Feed("alice"), Feed("bob")
    root = alice.root("chat")
    elsewhere = alice.root("other")
    good = bob.append(tangles=link(root, root))
    bad = bob.append(tangles={"chat": TangleLink(root.id, tuple(sorted((good.id, elsewhere.id))))})
    late = bob.append(tangles=link(root, bad))  # waits on an invalid member: pending for ever
    first, second = open_store("first"), open_store("second")
    ingest(first, root, elsewhere, good, bad, late)
    ingest(second, good, bad, late)
    assert states(second, root)[bad.id] == "pending"
    ingest(second, root)
    ingest(second, elsewhere)
    for store in (first, second):
        assert states(store, root) == {
            root.id: "joined",
            good.id: "joined",
            bad.id: "invalid",
            late.id: "pending",
        }
        name = store.timelines.timeline_name(root.id, "chat")
        assert store.timelines.timeline_member(name, bad.id)[1].reason == "previous-outside-tangle"
        assert store.timelines.timeline_member(name, late.id)[1].waiting == (bad.id,)
        assert store.tangles.tangle_tips(root.id, "chat") == [good.id]
        assert store.feeds.check().ok
    assert views(first, root) == views(second, root)


def test_a_root_that_does_not_root_the_tangle_makes_its_members_invalid(open_store):
    alice, bob = Feed("alice"), Feed("bob")
    post = alice.append({"just": "a post"})
    member = bob.append(tangles={"chat": TangleLink(post.id, (post.id,))})
    follower = bob.append(tangles={"chat": TangleLink(post.id, (member.id,))})
    first = open_store("first", keypair=keypair("me"))
    second = open_store("second", keypair=keypair("me"))
    ingest(first, post, member, follower)
    ingest(second, member, follower)
    assert set(states(second, post).values()) == {"pending"}
    ingest(second, post)
    for store in (first, second):
        assert states(store, post) == {member.id: "invalid", follower.id: "invalid"}
        name = store.timelines.timeline_name(post.id, "chat")
        assert store.timelines.timeline_member(name, follower.id)[1].reason == "root-not-a-root"
        assert store.tangles.tangle_tips(post.id, "chat") == []
        with pytest.raises(UnknownTangle):
            store.writes.publish({"x": 1}, {"chat": post.id})
        assert store.feeds.check().ok


def test_publish_cites_only_joined_tips(store):
    alice, bob = Feed("alice"), Feed("bob")
    root = alice.root("chat")
    a = alice.append(tangles=link(root, root))
    b = bob.append(tangles=link(root, root))
    waiting = bob.append(tangles=link(root, a, b))  # pending on a
    ingest(store, b, waiting)
    with pytest.raises(UnknownTangle):  # nothing joined yet: no root
        store.writes.publish({"x": 1}, {"chat": root.id})
    ingest(store, root)
    mine = store.writes.publish({"x": 2}, {"chat": root.id})
    assert mine.tangles["chat"].previous == (b.id,)  # not `waiting`
    assert states(store, root)[mine.id] == "joined"
    assert store.feeds.check().ok


def test_check_finds_a_wrong_state_row(open_store, tmp_path):
    alice = Feed("alice")
    root = alice.root("chat")
    store = open_store("tampered")
    ingest(store, root, alice.append(tangles=link(root, root)))
    store.close()
    with tamper_views(tmp_path / "tampered") as (txn, _tables, views):
        key = next(iter(txn.cursor(db=views[b"tangle-state"]).iternext(values=False)))
        txn.put(key, b"p\x00\x00", db=views[b"tangle-state"])
    report = open_store("tampered").feeds.check()
    assert any("tangle-state differs" in problem for problem in report.problems)


def test_a_removed_member_takes_its_joined_descendants_out_of_the_view(open_store):
    alice, bob = Feed("alice"), Feed("bob")
    root = bob.root("chat")
    a = alice.append(tangles=link(root, root))
    b = bob.append(tangles=link(root, a), timeframe={alice.public: 1})
    c = bob.append(tangles=link(root, b), timeframe={alice.public: 1})
    twin = Feed(alice.keypair)
    other = twin.append({"n": "other 1"})
    late, never = open_store("late"), open_store("never")
    ingest(late, root, a, b, c)
    assert set(states(late, root).values()) == {"joined"}
    (result,) = late.writes.ingest([other.raw])
    assert result.outcome is Outcome.FORK
    ingest(never, root, b, c)
    never.writes.add_evidence([a.raw, other.raw])
    for store in (late, never):
        assert states(store, root) == {root.id: "joined", b.id: "pending", c.id: "pending"}
        assert store.timelines.timeline(
            store.timelines.timeline_name(root.id, "chat", "joined")
        ) == [(0, root.id)]
        assert store.tangles.tangle_tips(root.id, "chat") == [root.id]
        assert store.feeds.check().ok


def test_a_crafted_previous_list_never_crashes_nor_splits_stores(open_store):
    alice, mallory = Feed("alice"), Feed("mallory")
    root = alice.root("chat")
    other = alice.root("other")
    member = alice.append(tangles=link(root, root))
    # the limit's worth of previous: the root, a member, another tangle's root, ids never
    # written; and a second tangle claiming a root that roots only "chat"
    crafted = sorted({root.id, member.id, other.id, *(bytes([n]) * 32 for n in range(13))})
    hostile = mallory.append(
        tangles={
            "chat": TangleLink(root.id, tuple(crafted[:16])),
            "other": TangleLink(root.id, (member.id,)),  # claims a root that roots "chat" only
        }
    )
    first, second = open_store("first"), open_store("second")
    ingest(first, root, other, member, hostile)
    ingest(second, hostile, member, other, root)
    for store in (first, second):
        name = store.timelines.timeline_name(root.id, "chat")
        assert (
            store.timelines.timeline_member(name, hostile.id)[1].reason == "previous-outside-tangle"
        )
        other_name = store.timelines.timeline_name(root.id, "other")
        assert (
            store.timelines.timeline_member(other_name, hostile.id)[1].reason == "root-not-a-root"
        )
        assert store.tangles.tangle_tips(root.id, "chat") == [member.id]
        assert store.feeds.check().ok
    assert views(first, root) == views(second, root)


def test_state_rows_are_keyed_by_the_tangles_timeline_number_and_the_members_ref_number(
    open_store,
):
    """tangle-state: tangle timeline no. (u32) + member ref no. (u32), each tangle's rows in
    arrival order; `check` reads them back as tangle key + id."""
    alice, bob = Feed("alice"), Feed("bob")
    chat, other = alice.root("chat"), bob.root("other")
    a = alice.append(tangles=link(chat, chat))
    b = bob.append(tangles={"other": TangleLink(other.id, (other.id,))})
    m = alice.append(tangles=link(chat, a))
    store = open_store("numbered")
    ingest(store, chat, other, a, b, m)
    assert store.feeds.check().ok
    timelines = store.ctx.timeline_tables
    with store.ctx.read() as txn:
        names = {bytes(k): bytes(v) for k, v in txn.cursor(db=timelines.names)}
        find = timelines.ref_numbers(txn).find
        refs = {x.id: find(x.id) for x in (chat, other, a, b, m)}
        state = store.ctx.view_tables[b"tangle-state"]
        rows = [bytes(k) for k in txn.cursor(db=state).iternext(values=False)]
    chat_no = names[store.timelines.timeline_name(chat.id, "chat")]
    other_no = names[store.timelines.timeline_name(other.id, "other")]
    assert rows == sorted(
        [chat_no + refs[x.id] for x in (chat, a, m)] + [other_no + refs[x.id] for x in (other, b)]
    )
    assert [row[4:] for row in rows if row[:4] == chat_no] == [refs[x.id] for x in (chat, a, m)], (
        "a tangle's rows in the order its members arrived"
    )


def test_a_refused_request_of_a_batch_leaves_no_state_behind(store):
    """Each request of a batch has its own nested transaction, and its own cache of state
    rows: one refused after its message joined leaves nothing the next one reads."""
    root = store.writes.publish({"t": "root"}, {"chat": None})
    results = store.writes.publish_batch(
        [
            ({"n": 1}, {"chat": root.id}),
            ({"n": 2}, {"chat": root.id, "lost": b"\x07" * 32}),  # refused: no such tangle
            ({"n": 3}, {"chat": root.id}),
        ]
    )
    assert isinstance(results[1], UnknownTangle)
    assert results[2].tangles["chat"].previous == (results[0].id,)
    chat = store.timelines.timeline_name(root.id, "chat")
    assert [entry[2] for entry in store.timelines.timeline_at(chat, states=True)[1]] == [
        "joined"
    ] * 3
    assert store.tangles.tangle_tips(root.id, "chat") == [results[2].id]
    assert store.feeds.check().ok
