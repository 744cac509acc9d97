"""The replication scope: contact messages, the feeds a node carries, and processing that
never waits for a feed it does not carry (storage/scope.py, storage/views/contacts.py)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tanglenode.protocol.contacts import (
    BLOCK,
    FOLLOW,
    UNBLOCK,
    UNFOLLOW,
    ContactSaid,
    Stance,
    contact_content,
    contact_said,
    fold,
)
from tanglenode.protocol.identity import feed_text
from tanglenode.protocol.message import ROOT_LINK, Message, TangleLink, decode_message
from tanglenode.storage.feeds.witnesses import MAX_WITNESS_DEPTH, names_of
from tanglenode.storage.scope import (
    BLOCKED,
    EVERY_FEED,
    FOLLOWED,
    GROUP,
    HOP,
    OURS,
    Scope,
    Why,
)
from tanglenode.storage.store import FeedStore
from tests.factories import Feed, keypair
from tests.storage.test_invalidation import state


def contact(feed: Feed, whom: Feed, flags: tuple[bool | None, bool | None]):
    return feed.append(contact_content(whom.public, following=flags[0], blocking=flags[1]))


def store_of(path, owner: str = "me") -> FeedStore:
    return FeedStore(path / owner, keypair=keypair(owner))


def test_a_contact_message_says_what_it_says_and_nothing_when_malformed():
    me, you = keypair("me").public, keypair("you").public
    good = contact_content(you, following=True, blocking=None)
    assert contact_said(good, me) == ContactSaid(you, True, None)
    for bad in (
        {**good, "following": "yes"},
        {**good, "contact": "@nobody"},
        {**good, "contact": feed_text(me)},  # itself
        {"type": "contact", "contact": feed_text(you)},  # no flag
        {**good, "type": "post"},
        ["contact"],
    ):
        assert contact_said(bad, me) is None, bad


def test_stances_fold_each_flag_in_seq_order():
    you = keypair("you").public
    said = [ContactSaid(you, *FOLLOW), ContactSaid(you, *BLOCK), ContactSaid(you, *UNBLOCK)]
    assert fold(said[:1]).follows
    assert fold(said[:2]) == Stance(following=False, blocking=True)
    assert fold(said) == Stance(following=False, blocking=False)  # unblock does not refollow
    assert not fold([ContactSaid(you, *FOLLOW), ContactSaid(you, *UNFOLLOW)]).follows


def test_the_scope_reaches_as_many_hops_as_asked_and_never_a_blocked_feed(tmp_path):
    me, bob, carol, dave, eve = (Feed(name) for name in ("me", "bob", "carol", "dave", "eve"))
    with store_of(tmp_path) as store:
        contact(bob, carol, FOLLOW)
        contact(carol, dave, FOLLOW)
        contact(bob, eve, FOLLOW)
        for feed in (bob, carol):
            for message in feed.messages:
                store.writes.ingest([message.raw])
        store.writes.publish(contact_content(bob.public, following=True, blocking=False))

        def carried(hops):
            return set(store.feeds.computed_scope(me.public, hops).feeds)

        assert carried(0) == {me.public}
        assert carried(1) == {me.public, bob.public}
        assert carried(2) == {me.public, bob.public, carol.public, eve.public}
        assert carried(3) == carried(2) | {dave.public}
        scope = store.feeds.computed_scope(me.public, 2)
        assert scope.feeds[me.public] == Why(OURS)
        assert scope.feeds[bob.public] == Why(FOLLOWED, 1)
        assert scope.feeds[carol.public] == Why(HOP, 2, bob.public)

        store.writes.publish(contact_content(carol.public, following=False, blocking=True))
        scope = store.feeds.computed_scope(me.public, 3)
        assert carol.public in scope.blocked and not scope.carries(carol.public)
        assert dave.public not in scope.feeds  # reached only through the blocked feed
        every = store.feeds.computed_scope(me.public, None)
        assert every.carries(dave.public) and not every.carries(carol.public)

        store.writes.publish(contact_content(bob.public, following=False, blocking=None))
        assert carried(3) == {me.public}


def test_group_members_are_carried_unless_blocked(tmp_path):
    me, ann, ben = Feed("me"), Feed("ann"), Feed("ben")
    group = b"g" * 32
    with store_of(tmp_path) as store:
        store.writes.publish(contact_content(ben.public, following=False, blocking=True))
        scope = store.feeds.computed_scope(me.public, 1, {ann.public: group, ben.public: group})
        assert scope.feeds[ann.public] == Why(GROUP, 0, group)
        assert not scope.carries(ben.public)


def test_the_chosen_scope_is_kept_and_read_back(tmp_path):
    me, bob = Feed("me"), Feed("bob")
    with store_of(tmp_path) as store:
        assert store.feeds.scope() == EVERY_FEED
        store.writes.publish(contact_content(bob.public, following=True, blocking=False))
        scope = store.feeds.computed_scope(me.public, 2)
        assert store.writes.set_scope(scope) is True
        assert store.writes.set_scope(scope) is False  # kept already: nothing written
    with store_of(tmp_path) as store:
        assert store.feeds.scope() == scope
        assert store.feeds.scope().carries(bob.public)
        assert not store.feeds.scope().carries(Feed("stranger").public)


def after_a_stranger():
    """Bob, a stranger, and bob's message naming a message of the stranger's."""
    bob, stranger = Feed("bob"), Feed("stranger")
    unseen = stranger.append({"type": "post", "text": "never replicated here"})
    text = {"type": "post", "text": "after the stranger"}
    return bob, stranger, bob.append(text, timeframe={stranger.public: unseen})


def processed_positions(store) -> list[tuple[bytes, int]]:
    return [(feed, seq) for _i, feed, seq in store.feeds.processed(0, 10_000)]


@pytest.mark.parametrize("answer", ["witness", "given up"])
def test_a_message_naming_a_feed_not_carried_waits_for_its_witness_or_its_giving_up(
    tmp_path, answer
):
    bob, stranger, reply = after_a_stranger()
    unseen = stranger.messages[0]
    entry = (stranger.public, 1, unseen.id[:16])
    with store_of(tmp_path) as store:
        store.writes.publish(contact_content(bob.public, following=True, blocking=False))
        store.writes.set_scope(store.feeds.computed_scope(keypair("me").public, 1))
        store.writes.ingest([reply.raw])
        assert (bob.public, 1) not in processed_positions(store)
        (stall,) = store.feeds.stalls()
        assert (stall.needs_feed, stall.needs_seq, stall.witness) == (stranger.public, 1, True)
        assert store.feeds.witnesses_wanted() == [entry]
        if answer == "witness":
            assert store.writes.add_witnesses([unseen.raw]) == [entry]
            assert store.writes.add_witnesses([unseen.raw]) == []  # no longer wanted
        else:
            assert store.writes.give_up_witnesses([entry]) == [entry]
        assert (bob.public, 1) in processed_positions(store)
        assert (stranger.public, 1) not in processed_positions(store)  # kept apart
        assert store.feeds.get(unseen.id) is None and store.feeds.witness_answers([entry]) == {}
        assert store.feeds.stalls() == [] and store.feeds.witnesses_wanted() == []


def test_narrowing_the_scope_releases_what_waited_on_a_feed_no_longer_carried(tmp_path):
    bob, stranger, reply = after_a_stranger()
    with store_of(tmp_path) as store:
        store.writes.ingest([reply.raw])  # every feed carried: it waits for the stranger
        assert [stall.needs_feed for stall in store.feeds.stalls()] == [stranger.public]
        store.writes.publish(contact_content(bob.public, following=True, blocking=False))
        assert store.writes.set_scope(store.feeds.computed_scope(keypair("me").public, 2))
        (stall,) = store.feeds.stalls()  # it waits for the stranger's message as a witness now
        assert (stall.needs_feed, stall.witness) == (stranger.public, True)
        store.writes.give_up_witnesses(store.feeds.witnesses_wanted())
        assert store.feeds.stalls() == []
        assert (bob.public, 1) in processed_positions(store)


def test_contacts_past_a_feeds_invalid_boundary_are_not_read(tmp_path):
    bob, carol = Feed("bob"), Feed("carol")
    first = bob.append({"type": "post", "text": "one"})
    follow = contact(bob, carol, FOLLOW)
    twin = Feed(bob.keypair)
    twin.messages = [first]
    other = twin.append({"type": "post", "text": "the other branch"})
    with store_of(tmp_path) as store:
        store.writes.ingest([first.raw, follow.raw])
        assert store.feeds.stances(bob.public)[carol.public].follows
        assert store.writes.add_evidence([follow.raw, other.raw])[0] == "new"
        assert store.feeds.stances(bob.public) == {}
        assert store.feeds.check().ok


@pytest.mark.parametrize("hops", [None, 0, 3])
def test_a_scope_row_says_why(hops):
    scope = Scope(hops, {b"a" * 32: Why(OURS)}, frozenset({b"b" * 32}))
    assert scope.rows()[b"b" * 32] == Why(BLOCKED).encode()
    assert Why.decode(scope.rows()[b"a" * 32]) == Why(OURS)


# -- convergence within a scope (Hypothesis) -------------------------------------------

PEOPLE = ("ann", "ben", "cat", "dan", "eve")


@st.composite
def worlds(draw):
    """Feeds that post into a few tangles, each message naming the newest message it saw of
    a few other feeds (a world where strangers' heads are named too), and whom `me`
    follows among them."""
    feeds = {name: Feed(f"scope-{name}") for name in PEOPLE}
    seen: dict[str, Message] = {}
    roots: dict[int, Message] = {}
    for _ in range(draw(st.integers(4, 24))):
        name = draw(st.sampled_from(PEOPLE))
        others = [other for other in seen if other != name]
        named = draw(st.lists(st.sampled_from(others), unique=True, max_size=3)) if others else []
        tangle = draw(st.integers(0, 2))
        link = (
            {"chat": TangleLink(roots[tangle].id, (roots[tangle].id,))}
            if tangle in roots
            else {"chat": ROOT_LINK}
        )
        message = feeds[name].append(
            {"type": "post", "n": len(seen)},
            tangles=link,
            timeframe={feeds[other].public: seen[other] for other in named},
        )
        roots.setdefault(tangle, message)
        seen[name] = message
    followed = draw(st.lists(st.sampled_from(PEOPLE), unique=True, min_size=1, max_size=3))
    return feeds, followed


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(world=worlds(), orders=st.lists(st.randoms(use_true_random=False), min_size=2, max_size=2))
def test_nodes_of_one_scope_converge_and_never_process_a_message_before_what_its_author_had(
    tmp_path_factory, world, orders
):
    """The property of docs/PROCESSING.md, "Witnesses": with witnesses at hand, no message of
    a carried feed is processed before a message of a carried feed its author had processed
    (reached through at most MAX_WITNESS_DEPTH messages of feeds not carried)."""
    feeds, followed = world
    me = Feed("scope-me")
    follows = [contact(me, feeds[name], FOLLOW) for name in followed]
    carried = {feeds[name].public for name in followed} | {me.public}
    everything = {(m.author, m.seq): m for feed in feeds.values() for m in feed.messages}
    by_entry = {(m.author, m.seq, m.id[:16]): m.raw for m in everything.values()}
    pool = [m.raw for m in everything.values() if m.author in carried]
    states = []
    for rng in orders:
        path = tmp_path_factory.mktemp("scope")
        with FeedStore(path / "node", keypair=me.keypair) as store:
            store.writes.ingest([m.raw for m in follows])
            store.writes.set_scope(store.feeds.computed_scope(me.public, 1))
            assert set(store.feeds.scope().feeds) == carried
            shuffled = rng.sample(pool, len(pool))
            while shuffled:  # random batches; a message whose previous is missing comes again
                batch, shuffled = shuffled[:3], shuffled[3:]
                results = store.writes.ingest(batch)
                shuffled += [
                    raw for raw, r in zip(batch, results, strict=True) if r.outcome == "rejected"
                ]
                while wanted := store.feeds.witnesses_wanted():  # a peer answers each ask
                    store.writes.add_witnesses([by_entry[entry] for entry in wanted])
            assert store.feeds.stalls() == []  # nothing waits for a feed not carried
            order = {(feed, seq): index for index, feed, seq in store.feeds.processed(0, 10_000)}
            assert len(order) == len(pool) + len(follows)
            for raw in pool:
                message = decode_message(raw)
                for needed in had_processed(message, everything, carried):
                    assert order[needed] < order[(message.author, message.seq)]
            states.append(state(store))
    assert states[0] == states[1]


def had_processed(message, everything, carried) -> set[tuple[bytes, int]]:
    """The carried messages `message`'s author had processed that the node must process first
    (beyond its own feed's chain): those its timeframe names, and those named through at most
    MAX_WITNESS_DEPTH messages of feeds not carried (each step a `prev` or timeframe entry)."""
    named = [(feed, seq) for feed, seq, _tag in names_of(message) if feed != message.author]
    found = {(feed, seq) for feed, seq in named if feed in carried}
    layer = [everything[(feed, seq)] for feed, seq in named if feed not in carried]
    for depth in range(1, MAX_WITNESS_DEPTH + 1):
        deeper = []
        for witness in layer:
            for feed, seq, _tag in names_of(witness):
                if feed in carried:
                    found.add((feed, seq))
                elif depth < MAX_WITNESS_DEPTH:
                    deeper.append(everything[(feed, seq)])
        layer = deeper
    return found


def test_a_blocked_feeds_messages_are_refused_with_their_reason(tmp_path):
    spammer = Feed("spammer")
    first, second = (spammer.append({"type": "post", "n": n}) for n in range(2))
    with store_of(tmp_path) as store:
        assert store.writes.ingest([first.raw])[0].outcome == "accepted"
        store.writes.publish(contact_content(spammer.public, following=False, blocking=True))
        store.writes.set_scope(store.feeds.computed_scope(keypair("me").public, 2))
        (refused,) = store.writes.ingest([second.raw])
        assert (refused.outcome, refused.reason) == ("rejected", "blocked-feed")
        assert store.feeds.get(second.id) is None
        assert store.feeds.get(first.id) is None  # what was held of it left too
        store.writes.publish(contact_content(spammer.public, following=None, blocking=False))
        store.writes.set_scope(store.feeds.computed_scope(keypair("me").public, None))
        outcomes = [result.outcome for result in store.writes.ingest([first.raw, second.raw])]
        assert outcomes == ["accepted", "accepted"]  # unblocked: fetched again from seq 1


# -- blocking takes a feed out of every view (Hypothesis) ------------------------------


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(world=worlds(), blocked_name=st.sampled_from(PEOPLE))
def test_blocking_a_feed_leaves_the_node_as_if_it_never_held_it_and_unblocking_brings_it_back(
    tmp_path_factory, world, blocked_name
):
    feeds, _followed = world
    blocked = feeds[blocked_name].public
    everything = [m.raw for feed in feeds.values() for m in feed.messages]
    theirs = [m.raw for m in feeds[blocked_name].messages]
    me = keypair("scope-me")
    block, open_scope = Scope(None, {}, frozenset({blocked})), Scope(None)

    def node(name: str) -> FeedStore:
        return FeedStore(tmp_path_factory.mktemp("block") / name, keypair=me)

    with node("held-then-blocked") as held, node("blocked-first") as first:
        held.writes.ingest(everything)
        assert held.writes.set_scope(block)
        first.writes.set_scope(block)
        first.writes.ingest(everything)
        assert state(held) == state(first)
        assert blocked not in {feed for _i, feed, _seq in held.feeds.processed(0, 10_000)}
        assert held.feeds.stalls() == [] and held.feeds.check().ok
        held.writes.set_scope(open_scope)  # unblocked: its messages come again
        held.writes.ingest(theirs)
        with node("never-blocked") as never:
            never.writes.ingest(everything)
            assert state(held) == state(never)
            processed = [(feed, seq) for _i, feed, seq in held.feeds.processed(0, 10_000)]
            assert sorted(processed) == sorted(
                (feed, seq) for _i, feed, seq in never.feeds.processed(0, 10_000)
            )  # each once, though the blocked feed's first round left empty rows


def test_blocking_a_feed_takes_its_edits_out_of_a_document(open_store):
    alice = open_store("alice", keypair=keypair("doc-alice"))
    mallory = open_store("mallory", keypair=keypair("doc-mallory"))
    doc = alice.documents.create_document("notes").id
    alice.documents.edit_document(doc, [("ins", 0, "kept")])
    mallory.writes.ingest([raw for raw in alice.feeds.iter_raw()])
    mallory.documents.edit_document(doc, [("ins", 4, " and vandalised")])
    reader = open_store("reader", keypair=keypair("doc-reader"))
    reader.writes.ingest([*alice.feeds.iter_raw(), *mallory.feeds.iter_raw()])
    assert reader.documents.document_text(doc) == "kept and vandalised"
    reader.writes.set_scope(Scope(None, {}, frozenset({keypair("doc-mallory").public})))
    assert reader.documents.document_text(doc) == "kept"
    assert reader.feeds.check().ok


def test_a_witness_naming_the_candidates_own_future_does_not_hold_it(tmp_path):
    carol, stranger = Feed("own-carol"), Feed("own-stranger")
    twin = Feed(carol.keypair)  # another branch of carol's, signed ahead of her
    twin.append({"n": 1})
    ahead = twin.append({"n": 2})
    x = stranger.append({"type": "post"}, timeframe={carol.public: ahead})
    m = carol.append({"type": "post", "after": "x"}, timeframe={stranger.public: x})
    with store_of(tmp_path) as store:
        store.writes.publish(contact_content(carol.public, following=True, blocking=False))
        store.writes.set_scope(store.feeds.computed_scope(keypair("me").public, 1))
        store.writes.ingest([m.raw])
        assert store.writes.add_witnesses([x.raw])
        assert (carol.public, 1) in processed_positions(store)  # never waits on carol's seq 2
        assert store.feeds.stalls() == []


def test_blocking_a_feed_takes_its_name_and_its_follows_out(tmp_path):
    mallory, carol = Feed("named-mallory"), Feed("named-carol")
    mallory.append({"type": "about", "about": feed_text(mallory.public), "name": "mallory"})
    contact(mallory, carol, FOLLOW)
    with store_of(tmp_path) as store:
        store.writes.ingest([m.raw for m in mallory.messages])
        assert store.feeds.about_name(mallory.public) == "mallory"
        assert store.feeds.stances(mallory.public)[carol.public].follows
        store.writes.set_scope(Scope(None, {}, frozenset({mallory.public})))
        assert store.feeds.about_name(mallory.public) is None
        assert mallory.public not in store.feeds.about_names()
        assert store.feeds.stances(mallory.public) == {}
        assert store.feeds.check().ok
        store.writes.set_scope(Scope(None))  # unblocked: fetched again, named again
        store.writes.ingest([m.raw for m in mallory.messages])
        assert store.feeds.about_name(mallory.public) == "mallory" and store.feeds.check().ok
