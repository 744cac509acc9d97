"""Private documents (docs/DOCUMENTS.md, "Private documents"): sealed in a group, woven from
what each node can open, the same text on every member's node whatever it learnt first."""

from __future__ import annotations

import functools
import random
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tanglenode.protocol.document import TANGLE, init_content
from tanglenode.protocol.groups import seal_value
from tanglenode.protocol.identity import message_id
from tanglenode.protocol.message import author_of
from tanglenode.storage.errors import NotInGroup, SealedDocument
from tanglenode.storage.groups import state as groups
from tanglenode.storage.groups.doc_keys import refresh_document_keys
from tanglenode.storage.store import FeedStore
from tests.factories import keypair

ALICE, BOB, CAROL, DAVE = (keypair(f"pd-{name}") for name in ("alice", "bob", "carol", "dave"))
SECRET_TITLE, SECRET_TEXT = "Plans for the surprise", "The party is on Friday"


def sync(source: FeedStore, target: FeedStore) -> None:
    target.writes.ingest(list(source.feeds.iter_raw()))


def club_with(store: FeedStore, members) -> bytes:
    club = store.writes.publish(*groups.create(ALICE, "club")).id
    if members:
        store.writes.publish(*groups.add(groups.read_group(store, ALICE, club), ALICE, members))
    refresh_document_keys(store, ALICE)
    return club


def a_private_document(store: FeedStore, club: bytes) -> bytes:
    doc = store.documents.create_document(SECRET_TITLE, group=club).id
    store.documents.edit_document(doc, [("ins", 0, SECRET_TEXT)])
    return doc


def test_a_non_member_holding_every_message_reads_neither_title_nor_text(open_store):
    alice = open_store("alice", keypair=ALICE)
    carol = open_store("carol", keypair=CAROL)
    club = club_with(alice, [BOB.public])
    doc = a_private_document(alice, club)
    raws = list(alice.feeds.iter_raw())
    for secret in (SECRET_TITLE, SECRET_TEXT, "surprise", "Friday"):
        assert not any(secret.encode() in raw for raw in raws)
    sync(alice, carol)
    refresh_document_keys(carol, CAROL)
    with pytest.raises(SealedDocument):
        carol.documents.document_text(doc)
    assert [info.id for info in carol.documents.held()] == []
    with pytest.raises(NotInGroup):
        carol.documents.create_document("mine", group=club)
    # the owner reads it as any document, and knows which group it is private to
    assert alice.documents.document_text(doc) == SECRET_TEXT
    [info] = alice.documents.held()
    assert (info.title, info.group) == (SECRET_TITLE, club)


def shared_with(open_store, member):
    """Alice's store, `member`'s, the club they are in and Alice's private document in it,
    as `member`'s node reads it once synced."""
    alice = open_store("alice", keypair=ALICE)
    other = open_store("member", keypair=member)
    club = club_with(alice, [member.public])
    doc = a_private_document(alice, club)
    sync(alice, other)
    refresh_document_keys(other, member)
    assert other.documents.document_text(doc) == SECRET_TEXT
    return alice, other, club, doc


def test_a_member_reads_and_edits_it_as_a_public_one(open_store):
    alice, bob, _club, doc = shared_with(open_store, BOB)
    bob.documents.edit_document(doc, [("ins", len(SECRET_TEXT), " at noon")])
    sync(bob, alice)
    assert alice.documents.document_text(doc) == bob.documents.document_text(doc)
    assert alice.documents.document_text(doc) == SECRET_TEXT + " at noon"
    assert alice.documents.document_set_aside(doc) == []


def test_messages_that_came_before_the_key_are_woven_when_it_comes(open_store):
    """Bob's node stores the document before the group message that carries his key, and
    weaves it when the key is read: versions go on past the old ones, and the text is
    what a node that held the key from the start reads."""
    alice = open_store("alice", keypair=ALICE)
    bob = open_store("bob", keypair=BOB)
    club = club_with(alice, [BOB.public])
    doc = a_private_document(alice, club)
    alice.documents.edit_document(doc, [("del", 0, 4)])
    documents = [m for m in alice.feeds.iter_raw()][-3:]  # init and the two edits
    bob.writes.ingest(documents)  # alice's earlier messages are missing: nothing processes
    sync(alice, bob)
    with pytest.raises(SealedDocument):
        bob.documents.document_text(doc)
    assert refresh_document_keys(bob, BOB)  # a key is new: the document is woven
    assert bob.documents.document_text(doc) == alice.documents.document_text(doc)
    assert bob.documents.document_text(doc) == SECRET_TEXT[4:]


def test_an_edit_outside_the_group_is_set_aside_on_every_member(open_store):
    """A plain edit of a private document, or one sealed in another group, would be read by
    some nodes and not others: each member's node sets it aside, alike."""
    alice = open_store("alice", keypair=ALICE)
    bob = open_store("bob", keypair=BOB)
    club = club_with(alice, [BOB.public])
    doc = a_private_document(alice, club)
    sync(alice, bob)
    other = bob.writes.publish(*groups.create(BOB, "other")).id
    refresh_document_keys(bob, BOB)
    bob_doc = bob.documents.create_document("bob's", group=other).id
    atom = alice.documents.document_atoms(doc)[0]
    plain = {"ops": [["ins", 1, atom[1], "!"]], "refs": [atom[0]], "type": "doc/edit"}
    bob.writes.publish(plain, {TANGLE: doc})
    sealed_elsewhere = seal_value(plain, *_current(bob, other))
    bob.writes.publish(sealed_elsewhere, {TANGLE: doc})
    # and the other way: an edit sealed in a group, to a public document
    public = alice.documents.create_document("public").id
    alice.documents.edit_document(public, [("ins", 0, "open")])
    sync(alice, bob)
    atom = bob.documents.document_atoms(public)[0]
    sealed = {"ops": [["ins", 1, atom[1], "?"]], "refs": [atom[0]], "type": "doc/edit"}
    bob.writes.publish(seal_value(sealed, *_current(bob, other)), {TANGLE: public})
    sync(bob, alice)
    for store in (alice, bob):
        assert store.documents.document_text(doc) == SECRET_TEXT
        assert store.documents.document_text(public) == "open"
        reasons = sorted(r for _id, r, _d in store.documents.document_set_aside(doc))
        assert reasons == ["wrong-group", "wrong-group"]
        assert [r for _id, r, _d in store.documents.document_set_aside(public)] == ["wrong-group"]
    assert bob.documents.document_text(bob_doc) == ""


def _current(store: FeedStore, group: bytes) -> tuple[bytes, bytes]:
    from tanglenode.storage.documents.sealed import current_key

    with store.ctx.read() as txn:
        epoch, key = current_key(txn, store.ctx.document_tables, group)
    return key, epoch


def test_an_excluded_member_keeps_what_it_read_and_reads_nothing_after_the_rekey(open_store):
    alice, dave, club, doc = shared_with(open_store, DAVE)
    view = groups.read_group(alice, ALICE, club)
    alice.writes.publish_batch(groups.exclusion(view, ALICE, [DAVE.public]), whole=True)
    refresh_document_keys(alice, ALICE)
    alice.documents.edit_document(doc, [("ins", 0, "Dave must not know: ")])
    raws = list(alice.feeds.iter_raw())
    assert not any(b"Dave must not know" in raw for raw in raws)
    sync(alice, dave)
    assert refresh_document_keys(dave, DAVE).epochs == []  # no key of the new epoch
    assert dave.documents.document_text(doc) == SECRET_TEXT
    with pytest.raises(NotInGroup):
        dave.documents.edit_document(doc, [("ins", 0, "x")])
    assert alice.documents.document_text(doc) == "Dave must not know: " + SECRET_TEXT


def test_a_forged_content_in_a_box_is_set_aside_by_every_holder_of_the_key(open_store):
    """The boxed content follows the content rules (canonical msgpack, bounded depth)."""
    alice = open_store("alice", keypair=ALICE)
    club = club_with(alice, [])
    doc = a_private_document(alice, club)
    key, epoch = _current(alice, club)
    deep: object = "x"
    for _ in range(40):
        deep = [deep]
    from nacl.secret import SecretBox

    from tanglenode.protocol.groups import GroupContent

    not_canonical = bytes(SecretBox(key).encrypt(b"\xd9\x01a"))  # str8 where fixstr belongs
    alice.writes.publish(GroupContent(epoch, not_canonical, ()).to_content(), {TANGLE: doc})
    alice.writes.publish(seal_value({"type": "doc/edit", "x": deep}, key, epoch), {TANGLE: doc})
    alice.writes.publish(seal_value(init_content("t"), bytes(32), epoch), {TANGLE: doc})
    reasons = sorted(r for _id, r, _d in alice.documents.document_set_aside(doc))
    assert reasons == ["unreadable", "unreadable", "unreadable"]
    assert alice.documents.document_text(doc) == SECRET_TEXT


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.randoms(use_true_random=False), st.integers(0, 3))
def test_members_converge_whatever_they_learn_first(tmp_path_factory, rng: random.Random, when):
    """Three members edit concurrently; a fourth node receives every message in a random
    order in random batches and reads the keys at a random moment: it ends with the text,
    and the set-aside edits of a node that had everything at once."""
    base = tmp_path_factory.mktemp("pd")
    stores = [
        FeedStore(base / name, keypair=kp, map_size=2**26)
        for name, kp in (("a", ALICE), ("b", BOB), ("c", CAROL))
    ]
    late = FeedStore(base / "late", keypair=DAVE, map_size=2**26)
    try:
        alice, bob, carol = stores
        club = club_with(alice, [BOB.public, CAROL.public, DAVE.public])
        doc = a_private_document(alice, club)
        for other, kp in ((bob, BOB), (carol, CAROL)):
            sync(alice, other)
            refresh_document_keys(other, kp)
        for _round in range(3):
            for store in stores:
                text = store.documents.document_text(doc)
                at = rng.randrange(len(text) + 1)
                if text and rng.random() < 0.3:
                    store.documents.edit_document(doc, [("del", min(at, len(text) - 1), 1)])
                else:
                    store.documents.edit_document(doc, [("ins", at, rng.choice("xyz") * 2)])
            a, b = rng.sample(stores, 2)
            sync(a, b)
        for a in stores:
            for b in stores:
                sync(a, b)
        feeds = [
            [r for r in s.feeds.iter_raw() if author_of(r) == s.keypair.public] for s in stores
        ]
        raws = []  # each feed in order (a gap is refused), the feeds interleaved at random
        while any(feeds):
            raws.append(rng.choice([feed for feed in feeds if feed]).pop(0))
        batches = [raws[i : i + 7] for i in range(0, len(raws), 7)]
        for number, batch in enumerate(batches):
            if number == when:
                refresh_document_keys(late, DAVE)
            late.writes.ingest(batch)
        refresh_document_keys(late, DAVE)
        texts = {store.documents.document_text(doc) for store in (*stores, late)}
        assert len(texts) == 1
        aside = {tuple(sorted(s.documents.document_set_aside(doc))) for s in (*stores, late)}
        assert len(aside) == 1
        assert late.documents.document_text(doc) != SECRET_TEXT  # the edits are in
    finally:
        for store in (*stores, late):
            store.close()


def test_a_member_added_after_a_rekey_reads_the_documents_from_before_it(open_store):
    """An add-member carries the keys of the group's earlier epochs (checked against each
    epoch's init), so a document older than the current epoch is readable to a newcomer;
    a key that does not open its epoch's init is not believed."""
    alice = open_store("alice", keypair=ALICE)
    carol = open_store("carol", keypair=CAROL)
    club = club_with(alice, [BOB.public])
    doc = a_private_document(alice, club)
    view = groups.read_group(alice, ALICE, club)
    alice.writes.publish_batch(groups.exclusion(view, ALICE, [BOB.public]), whole=True)
    refresh_document_keys(alice, ALICE)
    alice.documents.edit_document(doc, [("ins", 0, "New epoch. ")])
    alice.writes.publish(*groups.add(groups.read_group(alice, ALICE, club), ALICE, [CAROL.public]))
    sync(alice, carol)
    refresh_document_keys(carol, CAROL)
    assert carol.documents.document_text(doc) == "New epoch. " + SECRET_TEXT
    carol_view = groups.read_group(carol, CAROL, club)
    assert set(carol_view.keys) == set(carol_view.state.epochs)  # both epochs


def test_a_wrong_key_handed_down_is_not_believed(open_store):
    from tanglenode.protocol.groups import Kind, Private, seal_message

    alice = open_store("alice", keypair=ALICE)
    carol = open_store("carol", keypair=CAROL)
    club = club_with(alice, [])
    view = groups.read_group(alice, ALICE, club)
    alice.writes.publish_batch(groups.exclusion(view, ALICE, [BOB.public]), whole=True)
    view = groups.read_group(alice, ALICE, club)
    epoch = view.state.current_epoch
    lie = Private(Kind.ADD, (CAROL.public,), history=((club, bytes(32)),))
    content = seal_message(lie, view.key_of(epoch), epoch, key_for=(CAROL.public,))
    alice.writes.publish(content, {"group": club, "members": epoch})
    sync(alice, carol)
    carol_view = groups.read_group(carol, CAROL, club)
    assert epoch in carol_view.keys  # her own seal opens
    assert club not in carol_view.keys  # the zero key opens no init: not believed


class Forger:
    """A hand-signed feed: any content, any `doc` tangle link, a timeframe naming chosen
    messages (what a hostile peer can send)."""

    def __init__(self, kp) -> None:
        self.kp, self.messages = kp, []

    def post(self, content, root, previous, covers=()):
        from tanglenode.protocol.identity import tag_of
        from tanglenode.protocol.message import ROOT_LINK, Named, TangleLink, sign_message

        timeframe = {m.author: Named(m.seq, tag_of(m.id)) for m in covers}
        message = sign_message(
            self.kp,
            seq=len(self.messages) + 1,
            prev=self.messages[-1].id if self.messages else None,
            timestamp=1_800_000_000_000 + len(self.messages),
            timeframe=timeframe,
            tangles={TANGLE: ROOT_LINK if root is None else TangleLink(root, tuple(previous))},
            content=content,
        )
        self.messages.append(message)
        return message


MALLORY = keypair("pd-mallory")


@pytest.mark.parametrize("epoch", [b"", b"x" * 600, 7, None], ids=["empty", "long", "int", "nil"])
def test_a_hostile_envelope_is_set_aside_and_takes_no_honest_message_down(open_store, epoch):
    alice = open_store("alice", keypair=ALICE)
    club = club_with(alice, [])
    doc = a_private_document(alice, club)
    [edit] = alice.documents.edit_document(doc, [("ins", 0, ">")])
    innocent = Forger(keypair("pd-innocent")).post(init_content("fine"), None, ())
    hostile = {"group": 1, "epoch": epoch, "box": b"x", "seals": []}
    bad = Forger(MALLORY).post(hostile, doc, [edit.id], covers=[edit])
    results = alice.writes.ingest([innocent.raw, bad.raw])
    assert all(result.stored for result in results)
    assert [r for _id, r, _d in alice.documents.document_set_aside(doc)] == ["malformed"]
    assert alice.documents.document_text(innocent.id) == ""


def test_an_edit_sealed_in_another_groups_epoch_is_decided_alike_whatever_came_first(open_store):
    """Its epoch's init must lie in what its timeframe covers, so every node holds it when
    the edit is processed and reads which group it joins: set aside on both nodes, though
    one held the other group's init before the edit and the other after."""
    alice = open_store("alice", keypair=ALICE)
    bob = open_store("bob", keypair=BOB)
    carol = open_store("carol", keypair=CAROL)
    club = club_with(alice, [BOB.public])
    doc = a_private_document(alice, club)
    [edit] = alice.documents.edit_document(doc, [("ins", 0, ">")])
    sync(alice, bob)
    refresh_document_keys(bob, BOB)
    other = carol.writes.publish(*groups.create(CAROL, "other")).id
    carol.writes.publish(
        *groups.add(groups.read_group(carol, CAROL, other), CAROL, [MALLORY.public])
    )
    mallory = open_store("mallory", keypair=MALLORY)
    sync(carol, mallory)
    key = groups.read_group(mallory, MALLORY, other).keys[other]
    atom = alice.documents.document_atoms(doc)[0]
    plain = {"ops": [["ins", 1, atom[1], "!"]], "refs": [atom[0]], "type": "doc/edit"}
    forger = Forger(MALLORY)
    uncovered = forger.post(seal_value(plain, key, other), doc, [edit.id], covers=[edit])
    init = carol.feeds.get(other)
    covered = forger.post(seal_value(plain, key, other), doc, [edit.id], covers=[edit, init])
    sync(carol, alice)
    alice.writes.ingest([uncovered.raw, covered.raw])
    bob.writes.ingest([uncovered.raw, covered.raw])
    sync(carol, bob)
    for store, kp in ((alice, ALICE), (bob, BOB)):
        refresh_document_keys(store, kp)
    found = [
        sorted((i, r) for i, r, _d in s.documents.document_set_aside(doc)) for s in (alice, bob)
    ]
    assert found[0] == found[1]
    assert found[0] == sorted([(uncovered.id, "outside-weft"), (covered.id, "wrong-group")])


def test_a_key_sealed_by_an_outsider_does_not_lock_a_member_out(open_store):
    """Anyone may seal a key of their own making to a future member in a group message;
    a key is believed only if it opens its epoch's init."""
    from nacl.utils import random as random_bytes

    from tanglenode.protocol.groups import Kind, Private, seal_message

    alice = open_store("alice", keypair=ALICE)
    dave = open_store("dave", keypair=DAVE)
    mallory = open_store("mallory", keypair=MALLORY)
    club = club_with(alice, [BOB.public])
    doc = a_private_document(alice, club)
    sync(alice, mallory)
    bogus = seal_message(
        Private(Kind.POST, content={"x": 1}), random_bytes(32), club, (DAVE.public,)
    )
    mallory.writes.publish(bogus, {"group": club})
    sync(mallory, alice)
    alice.writes.publish(*groups.add(groups.read_group(alice, ALICE, club), ALICE, [DAVE.public]))
    sync(mallory, dave)
    sync(alice, dave)
    refresh_document_keys(dave, DAVE)
    assert dave.documents.document_text(doc) == SECRET_TEXT


# -- an excluded member that processed its own exclusion (issue 41, item 5a) ----------------


def _old_epoch(store: FeedStore, epoch: bytes) -> bytes:
    from tanglenode.storage.documents.sealed import read_key

    with store.ctx.read() as txn:
        return read_key(txn, store.ctx.document_tables, epoch)[1]


class ExcludedWriter:
    """Alice's club (Bob, Dave) and its private document. Alice excludes Dave; before Dave's
    node learns of it, Dave edits, comments and posts in the old epoch (concurrent with the
    exclusion: they count). Once Dave's node has processed its exclusion, Dave (an older
    build, or one that ignores the re-key) edits, comments and posts in the old epoch again,
    with the key it still holds, replies to his comment and starts a document of his own:
    each of these names the exclusion in its past. Bob, in the new epoch, edits too."""

    def __init__(self, open_store) -> None:
        from tanglenode.protocol.groups import Kind, Private, seal_message

        self.alice = alice = open_store("alice", keypair=ALICE)
        self.bob = bob = open_store("bob", keypair=BOB)
        self.dave = dave = open_store("dave", keypair=DAVE)
        self.club = club = club_with(alice, [BOB.public, DAVE.public])
        self.doc = doc = a_private_document(alice, club)
        for store, kp in ((bob, BOB), (dave, DAVE)):
            sync(alice, store)
            refresh_document_keys(store, kp)
        self.epoch = epoch = groups.read_group(dave, DAVE, club).state.current_epoch
        view = groups.read_group(alice, ALICE, club)
        self.exclusion, _ = alice.writes.publish_batch(
            groups.exclusion(view, ALICE, [DAVE.public]), whole=True
        )
        refresh_document_keys(alice, ALICE)

        def post(text: str):  # a group post in the old epoch, after the group's tips here
            private = Private(Kind.POST, content={"text": text})
            return dave.writes.publish(
                seal_message(private, _old_epoch(dave, epoch), epoch), {"group": club}
            )

        # Concurrent with the exclusion: Dave's node has not seen it.
        [self.early_edit] = dave.documents.edit_document(doc, [("ins", 0, "early ")])
        self.early_comment = dave.documents.comments.comment(doc, 0, 5, "seen before")
        self.early_post = post("before I knew")
        sync(alice, dave)  # Dave's node processes its exclusion
        sync(dave, alice)
        refresh_document_keys(dave, DAVE)
        with pytest.raises(NotInGroup):  # this build refuses to write in the old epoch
            dave.documents.edit_document(doc, [("ins", 0, "x")])
        # A build that ignores it: it seals in the old epoch as if still a member.
        dave.documents.set_keys({epoch: (club, _old_epoch(dave, epoch))}, {club: epoch})
        [self.late_edit] = dave.documents.edit_document(doc, [("ins", 0, "LEAK ")])
        self.late_comment = dave.documents.comments.comment(doc, 0, 5, "after I knew")
        self.late_reply = dave.documents.comments.reply(self.early_comment.id, "me again")
        self.late_doc = dave.documents.create_document("Dave's own", group=club)
        self.late_post = post("after I knew")
        dave.documents.set_keys({}, {club: None})
        sync(alice, bob)
        refresh_document_keys(bob, BOB)
        bob.documents.edit_document(doc, [("ins", len(bob.documents.document_text(doc)), "!")])
        for a, b in ((dave, bob), (bob, alice), (alice, dave), (bob, dave), (alice, bob)):
            sync(a, b)
        for store, kp in ((alice, ALICE), (bob, BOB), (dave, DAVE)):
            refresh_document_keys(store, kp)

    @property
    def stores(self) -> list[FeedStore]:
        return [self.alice, self.bob, self.dave]

    @property
    def excluded(self) -> set[tuple[bytes, str]]:
        late = (self.late_edit, self.late_comment, self.late_reply)
        return {(message.id, "excluded") for message in late}


def assert_the_one_rule(world: ExcludedWriter, store: FeedStore, kp) -> None:
    """On `store`: Dave's messages that name his exclusion are out, as a document's messages
    (set aside, `excluded`) and as a group post (invalid); those written concurrently with
    it are in, as both."""
    from tanglenode.protocol.group_state import EXCLUDED_IN_PAST

    aside = {(i, r) for i, r, _d in store.documents.document_set_aside(world.doc)}
    assert aside == world.excluded
    own = world.late_doc.id
    assert [(i, r) for i, r, _d in store.documents.document_set_aside(own)] == [(own, "excluded")]
    assert own not in {info.id for info in store.documents.held()}
    comments, _count = store.documents.comments.comments(world.doc)
    assert [c.id for c in comments] == [world.early_comment.id]
    assert comments[0].replies == ()
    state = groups.read_group(store, kp, world.club).state
    assert state.invalid[world.late_post.id] == EXCLUDED_IN_PAST
    assert world.early_post.id in state.valid and world.exclusion.id in state.valid


def test_an_excluded_member_that_processed_its_exclusion_writes_nothing_in_the_old_epoch(
    open_store,
):
    """The group's rule and the documents' rule are one (protocol.group_state.
    excluded_in_past): on every node, Dave's own included."""
    world = ExcludedWriter(open_store)
    text = world.alice.documents.document_text(world.doc)
    assert text == "early " + SECRET_TEXT + "!"
    assert world.bob.documents.document_text(world.doc) == text
    # Dave's node reads no new-epoch edit (Bob's "!"), and weaves nothing of his own late edit
    assert world.dave.documents.document_text(world.doc) == "early " + SECRET_TEXT
    for store, kp in ((world.alice, ALICE), (world.bob, BOB), (world.dave, DAVE)):
        assert_the_one_rule(world, store, kp)
    [(_id, _reason, detail)] = [
        row
        for row in world.bob.documents.document_set_aside(world.doc)
        if row[0] == world.late_edit.id
    ]
    assert "excluded its author" in detail


@functools.cache
def _excluded_writer_messages() -> tuple[ExcludedWriter, list[list[bytes]]]:
    """The world above, built once: its ids, and each feed's messages in feed order."""
    base = Path(tempfile.mkdtemp(prefix="pd-excluded-"))
    opened: list[FeedStore] = []

    def opener(name: str, **options) -> FeedStore:
        store = FeedStore(base / name, map_size=2**26, **options)
        opened.append(store)
        return store

    try:
        world = ExcludedWriter(opener)
        feeds = [
            [r for r in world.alice.feeds.iter_raw() if author_of(r) == kp.public]
            for kp in (ALICE, BOB, DAVE)
        ]
        return world, feeds
    finally:
        for store in opened:
            store.close()
        shutil.rmtree(base, ignore_errors=True)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.randoms(use_true_random=False), st.integers(0, 6), st.integers(1, 9))
def test_the_excluded_members_late_writes_are_out_in_every_delivery_order(
    tmp_path_factory, rng: random.Random, when: int, size: int
):
    """Two members' fresh nodes receive every message in random orders, in random batches,
    and read the group's keys (and exclusions) at a random moment: both end with the text
    and the set-aside messages of the nodes that wrote them, Dave's late edit and comment
    set aside as `excluded` whatever came first (the exclusion handed in before they were
    processed, or after, which weaves the document again)."""
    world, feeds = _excluded_writer_messages()
    base = tmp_path_factory.mktemp("pdx")
    nodes = [
        FeedStore(base / name, keypair=kp, map_size=2**26)
        for name, kp in (("b", BOB), ("a", ALICE))
    ]
    try:
        for node in nodes:
            queues = [list(feed) for feed in feeds]
            raws = []  # each feed in order (a gap is refused), the feeds interleaved at random
            while any(queues):
                raws.append(rng.choice([queue for queue in queues if queue]).pop(0))
            batches = [raws[i : i + size] for i in range(0, len(raws), size)]
            for number, batch in enumerate(batches):
                if number == when:
                    refresh_document_keys(node, node.keypair)
                node.writes.ingest(batch)
            refresh_document_keys(node, node.keypair)
        for node in nodes:
            assert node.documents.document_text(world.doc) == "early " + SECRET_TEXT + "!"
            assert_the_one_rule(world, node, node.keypair)
        assert nodes[0].documents.document_set_aside(world.doc) == nodes[
            1
        ].documents.document_set_aside(world.doc)
    finally:
        for node in nodes:
            node.close()


@pytest.mark.parametrize("order", ["key, then the rest", "dave first", "all at once"])
def test_an_exclusion_handed_in_after_the_late_edit_was_woven_sets_it_aside(open_store, order):
    """A node that holds the old epoch's key but reads the group's exclusions only after it
    wove Dave's late edit (the running node reads them after the transaction that stored
    them) weaves the document again, and ends as a node that had them first."""
    world, feeds = _excluded_writer_messages()
    alice_feed, bob_feed, dave_feed = feeds
    node = open_store("late", keypair=BOB)
    exclusion_at = next(
        n for n, raw in enumerate(alice_feed) if message_id(raw) == world.exclusion.id
    )
    if order == "key, then the rest":
        node.writes.ingest(alice_feed[:exclusion_at])
        assert refresh_document_keys(node, BOB).epochs == [world.epoch]
        node.writes.ingest(alice_feed[exclusion_at:] + dave_feed)
        assert "LEAK" in node.documents.document_text(world.doc)  # woven: no exclusion yet
        kept = refresh_document_keys(node, BOB)  # the new epoch's key, nothing waits for it
        assert set(kept.documents) == {world.doc, world.late_doc.id}  # for the exclusion
        assert "LEAK" not in node.documents.document_text(world.doc)
        node.writes.ingest(bob_feed)
    elif order == "dave first":
        node.writes.ingest(dave_feed)
        node.writes.ingest(bob_feed + alice_feed)
    else:
        node.writes.ingest(alice_feed + bob_feed + dave_feed)
    refresh_document_keys(node, BOB)
    assert node.documents.document_text(world.doc) == "early " + SECRET_TEXT + "!"
    assert_the_one_rule(world, node, BOB)


def test_a_proof_that_removes_the_exclusion_weaves_the_late_edit_back(open_store):
    """Alice forks her feed at the exclusion: a proof cuts it (and the new epoch) on every
    node. Dave's late edit then names nothing that excluded him and is woven, on a node
    that had set it aside and on one that never held the exclusion, alike."""
    from tanglenode.protocol.message import sign_message

    world, (alice_feed, bob_feed, dave_feed) = _excluded_writer_messages()
    at = next(n for n, raw in enumerate(alice_feed) if message_id(raw) == world.exclusion.id)
    twin = sign_message(
        ALICE,
        seq=world.exclusion.seq,
        prev=world.exclusion.prev,
        timestamp=world.exclusion.timestamp + 1,
        timeframe={},
        tangles={},
        content={"type": "post", "text": "the other branch"},
    )
    before = open_store("before", keypair=BOB)  # sets the late edit aside, then the proof
    before.writes.ingest(alice_feed + bob_feed + dave_feed)
    refresh_document_keys(before, BOB)
    assert_the_one_rule(world, before, BOB)
    before.writes.ingest([twin.raw])
    first = open_store("first", keypair=BOB)  # the proof before anything of the exclusion
    first.writes.ingest([*alice_feed[:at], twin.raw])
    first.writes.ingest(alice_feed[at:] + bob_feed + dave_feed)
    for node in (before, first):
        refresh_document_keys(node, BOB)
        assert node.feeds.get_by_seq(ALICE.public, world.exclusion.seq) is None  # cut
        assert "LEAK " in node.documents.document_text(world.doc)
        aside = {i for i, _r, _d in node.documents.document_set_aside(world.doc)}
        assert world.late_edit.id not in aside
        assert world.late_doc.id in {info.id for info in node.documents.held()}
    assert before.documents.document_text(world.doc) == first.documents.document_text(world.doc)
    assert sorted(before.documents.document_set_aside(world.doc)) == sorted(
        first.documents.document_set_aside(world.doc)
    )
