"""The document engine through FeedStore: edits at the frontier, concurrent inserts, long
pastes, the splice log, and the errors of `edit_document` and the reads (docs/DOCUMENTS.md).
Edits set aside are in test_document_set_aside.py."""

from __future__ import annotations

import itertools

import pytest

from tanglenode.protocol.document import (
    EDIT,
    SELF,
    TANGLE,
    AtomRef,
    Delete,
    Insert,
    Undelete,
    edit_content,
)
from tanglenode.protocol.message import TangleLink
from tanglenode.storage.documents.rows import BlameSpan, DyeSpan, Version
from tanglenode.storage.errors import BadSplice, UnknownDocument
from tanglenode.storage.feeds.ingest import Outcome
from tanglenode.storage.store import FeedStore
from tests.factories import Feed, keypair

ME = keypair("me")  # the `store` fixture's identity


def everything(store: FeedStore) -> list[bytes]:
    """Every message a store holds, feed by feed in seq order."""
    return [raw for feed in store.feeds.held() for raw in store.feeds.read_feed_raw(feed.author)]


def ingest_all(store: FeedStore, raws: list[bytes]) -> None:
    results = store.writes.ingest(raws)
    assert all(r.outcome in (Outcome.ACCEPTED, Outcome.DUPLICATE) for r in results), [
        (r.reason, r.detail) for r in results
    ]


def sync(source: FeedStore, target: FeedStore) -> None:
    ingest_all(target, everything(source))


def apply_splices(text: str, splices) -> str:
    for kind, position, value in splices:
        if kind == "ins":
            text = text[:position] + value + text[position:]
        else:
            text = text[:position] + text[position + value :]
    return text


def own_head(store: FeedStore) -> int:
    return next((f.head_seq for f in store.feeds.held() if f.author == store.keypair.public), 0)


# -- editing at the frontier -------------------------------------------------------------


def test_insert_delete_undelete_at_the_frontier(store):
    doc = store.documents.create_document("notes").id
    assert store.documents.document_text(doc) == ""
    [typed] = store.documents.edit_document(doc, [("ins", 0, "hello world")])
    assert typed.content == edit_content([Insert(AtomRef(doc, 0), "hello world")])
    [cut] = store.documents.edit_document(doc, [("del", 5, 6)])
    assert cut.content == edit_content([Delete(AtomRef(typed.id, 5), 6)])
    assert store.documents.document_text(doc) == "hello"

    # Undelete backspaces 1..3 of the six (" world"): "wor" comes back, in its place.
    some = store.writes.publish(edit_content([Undelete(AtomRef(cut.id, 1), 3)]), {TANGLE: doc})
    assert store.documents.document_text(doc) == "hellowor"
    rest = store.writes.publish(
        edit_content([Undelete(AtomRef(cut.id, 0), 1), Undelete(AtomRef(cut.id, 4), 2)]),
        {TANGLE: doc},
    )
    assert store.documents.document_text(doc) == "hello world"
    assert store.documents.document_set_aside(doc) == []

    # A new backspace hides "world" again; undoing the old backspaces once more cannot show
    # it while the new one is live.
    [again] = store.documents.edit_document(doc, [("del", 6, 5)])
    assert store.documents.document_text(doc) == "hello "
    store.writes.publish(edit_content([Undelete(AtomRef(cut.id, 1), 5)]), {TANGLE: doc})
    assert store.documents.document_text(doc) == "hello "
    store.writes.publish(edit_content([Undelete(AtomRef(again.id, 0), 5)]), {TANGLE: doc})
    assert store.documents.document_text(doc) == "hello world"

    # Every version keeps its own text.
    assert [
        store.documents.document_revision(doc, m.id) for m in (typed, cut, some, rest, again)
    ] == [
        "hello world",
        "hello",
        "hellowor",
        "hello world",
        "hello ",
    ]
    assert [store.documents.document_revision(doc, n) for n in range(6)] == [
        "",
        "hello world",
        "hello",
        "hellowor",
        "hello world",
        "hello ",
    ]
    versions = store.documents.document_versions(doc)
    assert [(v.number, v.msg_id, v.author, v.inserted, v.deleted) for v in versions[:4]] == [
        (0, doc, ME.public, 0, 0),
        (1, typed.id, ME.public, 11, 0),
        (2, cut.id, ME.public, 0, 6),
        (3, some.id, ME.public, 0, 0),
    ]
    assert versions[1] == Version(1, typed.id, ME.public, typed.timestamp, 11, 0)
    assert (
        len(versions) == 8
        and store.documents.document_versions(doc, since=6, limit=1)[0].number == 6
    )


def test_edits_in_the_middle_and_across_pieces(store):
    doc = store.documents.create_document("notes").id
    text = ""
    for splices in (
        [("ins", 0, "abcdef")],
        [("ins", 3, "XYZ")],  # splits the first run
        [("del", 2, 3)],  # across both runs
        [("ins", 0, "é😀"), ("ins", 8, "!"), ("del", 1, 2)],
        [("del", 0, 1), ("ins", 0, "<"), ("ins", 6, ">")],
    ):
        text = apply_splices(text, splices)
        store.documents.edit_document(doc, splices)
        assert store.documents.document_text(doc) == text
    assert store.documents.document_snapshot(doc) == (5, text)
    assert "".join(span.text for span in store.documents.document_blame(doc)) == text


def test_nothing_to_change_publishes_nothing(store):
    doc = store.documents.create_document("notes").id
    store.documents.edit_document(doc, [("ins", 0, "abc")])
    head = own_head(store)
    assert store.documents.edit_document(doc, []) == []
    assert store.documents.edit_document(doc, [("ins", 1, "xy"), ("del", 1, 2)]) == []
    assert own_head(store) == head
    assert store.documents.document_text(doc) == "abc"


def test_inserts_of_one_message_after_one_atom_go_higher_index_first(store):
    doc = store.documents.create_document("notes").id
    store.writes.publish(
        edit_content([Insert(AtomRef(doc, 0), "ab"), Insert(AtomRef(doc, 0), "cd")]),
        {TANGLE: doc},
    )
    assert store.documents.document_text(doc) == "cdab"
    # "X" is typed after this message's atom 0 ("a"), like "b": X is the higher index.
    store.writes.publish(
        edit_content([Insert(AtomRef(doc, 0), "ab"), Insert(AtomRef(SELF, 0), "X")]),
        {TANGLE: doc},
    )
    assert store.documents.document_text(doc) == "aXbcdab"


def test_documents_lists_each_with_its_counts(store):
    notes = store.documents.create_document("notes")
    store.documents.edit_document(notes.id, [("ins", 0, "héllo")])
    store.documents.edit_document(notes.id, [("del", 0, 1)])
    todo = store.documents.create_document("todo")
    bad = Feed("mallory").append(
        {"ops": [], "refs": [], "type": EDIT},
        tangles={TANGLE: TangleLink(notes.id, (notes.id,))},
        timeframe={ME.public: 3},
    )
    ingest_all(store, [bad.raw])
    infos = store.documents.held()
    assert [
        (i.id, i.title, i.author, i.created, i.length, i.versions, i.set_aside) for i in infos
    ] == [
        (notes.id, "notes", ME.public, notes.timestamp, 4, 2, 1),
        (todo.id, "todo", ME.public, todo.timestamp, 0, 0, 0),
    ]


# -- concurrent inserts ------------------------------------------------------------------


def two_authors(open_store, creator_is_lower: bool) -> tuple[FeedStore, FeedStore]:
    """Two authors' stores, the creator's key below (or above) the other's."""
    first, second = sorted([keypair("alice"), keypair("bob")], key=lambda k: k.public)
    if not creator_is_lower:
        first, second = second, first
    return open_store("creator", keypair=first), open_store("other", keypair=second)


@pytest.mark.parametrize("creator_is_lower", [True, False], ids=["creator-key-low", "high"])
def test_concurrent_inserts_at_one_place_follow_the_weft_rule(open_store, creator_is_lower):
    alice, bob = two_authors(open_store, creator_is_lower)
    doc = alice.documents.create_document("notes").id
    [typed] = alice.documents.edit_document(doc, [("ins", 0, "ab")])
    sync(alice, bob)
    [x] = alice.documents.edit_document(doc, [("ins", 1, "X")])  # weft {alice: 3}
    [y] = bob.documents.edit_document(doc, [("ins", 1, "Y")])  # weft {alice: 2, bob: 1}
    assert (alice.documents.document_text(doc), bob.documents.document_text(doc)) == ("aXb", "aYb")
    # weft1: seqs over feed keys ascending. The lower key decides: alice's 3 > 2 when hers is
    # lower; bob's 1 > 0 when his is.
    expected = "aXYb" if creator_is_lower else "aYXb"
    alice_raws, bob_raws = (
        alice.feeds.read_feed_raw(alice.keypair.public),
        bob.feeds.read_feed_raw(bob.keypair.public),
    )
    sync(bob, alice)
    sync(alice, bob)
    late = open_store("late")  # bob's feed first: it waits for alice's
    ingest_all(late, bob_raws)
    ingest_all(late, alice_raws)
    early = open_store("early")
    ingest_all(early, alice_raws)
    ingest_all(early, bob_raws)
    together = open_store("together")
    ingest_all(together, bob_raws + alice_raws)
    stores = [alice, bob, late, early, together]
    for store in stores:
        assert store.documents.document_text(doc) == expected
        assert store.documents.document_atoms(doc) == stores[0].documents.document_atoms(doc)
        assert store.documents.document_revision(doc, x.id) == "aXb"
        assert store.documents.document_revision(doc, y.id) == "aYb"
        assert store.documents.document_blame(doc) == [
            BlameSpan("a", alice.keypair.public, typed.id),
            *(
                [
                    BlameSpan("X", alice.keypair.public, x.id),
                    BlameSpan("Y", bob.keypair.public, y.id),
                ]
                if creator_is_lower
                else [
                    BlameSpan("Y", bob.keypair.public, y.id),
                    BlameSpan("X", alice.keypair.public, x.id),
                ]
            ),
            BlameSpan("b", alice.keypair.public, typed.id),
        ]

    # An author who saw both inserts types at the same place: aware of them, it comes first.
    [z] = bob.documents.edit_document(doc, [("ins", 1, "Z")])
    [w] = alice.documents.edit_document(
        doc, [("ins", 3, "W")]
    )  # after the second of X, Y: concurrent
    for store in stores[2:]:
        ingest_all(store, [z.raw, w.raw])
    sync(alice, bob)
    sync(bob, alice)
    final = "aZ" + expected[1:3] + "W" + "b"
    for store in stores:
        assert store.documents.document_text(doc) == final
        assert store.documents.document_atoms(doc) == stores[0].documents.document_atoms(doc)


def test_dye_and_blame_name_who_changed_what(open_store):
    alice, bob = two_authors(open_store, True)
    doc = alice.documents.create_document("notes").id
    [hello] = alice.documents.edit_document(doc, [("ins", 0, "hello")])
    sync(alice, bob)
    [help_] = bob.documents.edit_document(doc, [("del", 3, 2), ("ins", 3, "p!")])
    a, b = alice.keypair.public, bob.keypair.public
    assert bob.documents.document_dye(doc, hello.id, help_.id) == [
        DyeSpan("hel", None, None),
        DyeSpan("p!", b, None),
        DyeSpan("lo", None, b),
    ]
    # From the init (by id, or as version 0) to the frontier: "lo" was never visible in
    # either, so it is not there at all.
    for old, new in [(doc, help_.id), (0, None)]:
        assert bob.documents.document_dye(doc, old, new) == [
            DyeSpan("hel", a, None),
            DyeSpan("p!", b, None),
        ]
    # Backwards: "p!" is outside the newer weft, so nobody removed it; "lo" comes back.
    assert bob.documents.document_dye(doc, help_.id, hello.id) == [
        DyeSpan("help!", None, None),
        DyeSpan("lo", a, None),
    ]
    assert bob.documents.document_blame(doc) == [
        BlameSpan("hel", a, hello.id),
        BlameSpan("p!", b, help_.id),
    ]
    assert bob.documents.document_blame(doc, hello.id) == [BlameSpan("hello", a, hello.id)]


# -- long pastes -------------------------------------------------------------------------


def test_a_long_paste_spans_several_messages_and_keeps_the_exact_text(store, open_store):
    doc = store.documents.create_document("notes").id
    store.documents.edit_document(doc, [("ins", 0, "[]")])
    paste = "".join(f"line {n}: é😀 ünïcode\n" for n in range(2000))  # ~50 KB of UTF-8
    assert len(paste.encode()) > 3 * 16 * 1024
    messages = store.documents.edit_document(doc, [("ins", 1, paste)])
    assert len(messages) >= 4
    assert all(len(m.raw) <= store.limits.max_message_bytes for m in messages)
    assert store.documents.document_text(doc) == "[" + paste + "]"
    # Each message's run is typed after the last atom of the one before it.
    assert [span.msg_id for span in store.documents.document_blame(doc)] == [
        store.documents.document_versions(doc)[1].msg_id,
        *(m.id for m in messages),
        store.documents.document_versions(doc)[1].msg_id,
    ]
    for previous, message in itertools.pairwise(messages):
        assert message.content["refs"] == [previous.id]
    # A second paste into the middle of the first, then a cut across message boundaries.
    middle = len(paste) // 2
    store.documents.edit_document(doc, [("ins", middle, paste)])
    store.documents.edit_document(doc, [("del", middle - 3000, 6000)])
    expected = apply_splices(
        "[" + paste + "]", [("ins", middle, paste), ("del", middle - 3000, 6000)]
    )
    assert store.documents.document_text(doc) == expected
    other = open_store("other")
    ingest_all(other, everything(store))
    assert other.documents.document_text(doc) == expected
    assert other.documents.document_atoms(doc) == store.documents.document_atoms(doc)
    assert other.documents.document_revision(doc, messages[-1].id) == "[" + paste + "]"


@pytest.mark.parametrize(
    "splices",
    [
        [("del", 0, 20_000)],  # a long cut
        [("del", 0, 10_000), ("ins", 0, "b" * 10_000)],  # select all, paste over it
    ],
    ids=["cut", "replace"],
)
def test_a_long_cut_or_replace_spans_several_messages(store, splices):
    doc = store.documents.create_document("notes").id
    store.documents.edit_document(doc, [("ins", 0, "a" * 10_000)])
    store.documents.edit_document(doc, [("ins", 10_000, "a" * 10_000)])
    text = store.documents.document_text(doc)
    messages = store.documents.edit_document(doc, splices)
    assert len(messages) >= 2
    assert store.documents.document_text(doc) == apply_splices(text, splices)


# -- the splice log ----------------------------------------------------------------------


def test_splices_since_any_snapshot_replay_to_the_current_text(open_store):
    alice, bob = two_authors(open_store, True)
    doc = alice.documents.create_document("notes").id
    snapshots = [alice.documents.document_snapshot(doc)]
    alice.documents.edit_document(doc, [("ins", 0, "the quick fox")])
    snapshots.append(alice.documents.document_snapshot(doc))
    sync(alice, bob)
    bob.documents.edit_document(
        doc, [("ins", 4, "very "), ("del", 14, 4)]
    )  # concurrent with alice's
    [cut] = alice.documents.edit_document(doc, [("del", 0, 4), ("ins", 5, "brown ")])
    snapshots.append(alice.documents.document_snapshot(doc))
    sync(bob, alice)  # bob's edit lands in the middle of alice's text: frontier splices
    snapshots.append(alice.documents.document_snapshot(doc))
    # The cut's ops: its insert first (atoms 0..5), then its delete (backspaces 6..9).
    assert cut.content["ops"][1][0] == "del"
    alice.writes.publish(edit_content([Undelete(AtomRef(cut.id, 6), 4)]), {TANGLE: doc})
    snapshots.append(alice.documents.document_snapshot(doc))
    alice.documents.edit_document(doc, [("ins", 0, "é😀")])
    head, text = alice.documents.document_snapshot(doc)
    assert alice.documents.document_set_aside(doc) == []
    assert [version for version, _text in snapshots] == [0, 1, 2, 3, 4]
    assert text == alice.documents.document_text(doc)
    for version, snapshot in snapshots:
        found_head, entries = alice.documents.document_splices(doc, version)
        assert found_head == head
        assert [entry.version for entry in entries] == list(range(version + 1, head + 1))
        assert [entry.msg_id for entry in entries] == [
            v.msg_id for v in alice.documents.document_versions(doc, since=version + 1)
        ]
        replayed = snapshot
        for entry in entries:
            assert entry.splices is not None
            replayed = apply_splices(replayed, entry.splices)
        assert replayed == text
    # Paged: `limit` entries at a time, the head given each time.
    page_head, page = alice.documents.document_splices(doc, 1, limit=2)
    assert page_head == head and [entry.version for entry in page] == [2, 3]
    assert alice.documents.document_splices(doc, head) == (head, [])


def test_the_splice_log_names_each_edits_frontier_splices(store):
    doc = store.documents.create_document("notes").id
    [typed] = store.documents.edit_document(doc, [("ins", 0, "abcdef")])
    [changed] = store.documents.edit_document(doc, [("del", 1, 2), ("ins", 3, "XY")])
    head, entries = store.documents.document_splices(doc, 0)
    assert head == 2
    assert [(e.version, e.msg_id) for e in entries] == [(1, typed.id), (2, changed.id)]
    assert entries[0].splices == (("ins", 0, "abcdef"),)
    assert apply_splices("abcdef", entries[1].splices) == "adeXYf"


# -- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "splices",
    [
        [("ins", 6, "x")],
        [("ins", -1, "x")],
        [("ins", True, "x")],
        [("ins", 0, "")],
        [("ins", 0, 5)],
        [("del", 5, 1)],
        [("del", 0, 6)],
        [("del", 2, 0)],
        [("del", 2, -1)],
        [("mov", 0, 1)],
        [("ins", 0)],
        ["ins"],
        [("ins", 0, "ab"), ("del", 3, 5)],  # fine until the last: still nothing published
        [("del", 0, 5), ("ins", 1, "x")],
    ],
    ids=repr,
)
def test_bad_splices_raise_and_publish_nothing(store, splices):
    doc = store.documents.create_document("notes").id
    store.documents.edit_document(doc, [("ins", 0, "hello")])
    head, versions = own_head(store), store.documents.document_versions(doc)
    with pytest.raises(BadSplice):
        store.documents.edit_document(doc, splices)
    assert own_head(store) == head
    assert store.documents.document_versions(doc) == versions
    assert store.documents.document_text(doc) == "hello"
    assert store.documents.edit_document(doc, [("ins", 5, "!")])  # the store still edits


def test_an_unknown_document_raises(store):
    doc = store.documents.create_document("notes").id
    [typed] = store.documents.edit_document(doc, [("ins", 0, "hi")])
    post = store.writes.publish({"type": "post"})
    head = own_head(store)
    for unknown in (bytes(32), post.id, typed.id):
        with pytest.raises(UnknownDocument):
            store.documents.edit_document(unknown, [("ins", 0, "x")])
        for read in (
            store.documents.document_text,
            store.documents.document_snapshot,
            store.documents.document_revision,
            store.documents.document_atoms,
            store.documents.document_blame,
            store.documents.document_versions,
        ):
            with pytest.raises(UnknownDocument):
                read(unknown)
        with pytest.raises(UnknownDocument):
            store.documents.document_dye(unknown, None, None)
        with pytest.raises(UnknownDocument):
            store.documents.document_splices(unknown, 0)
    assert own_head(store) == head
    with pytest.raises(UnknownDocument):
        store.documents.document_revision(doc, 2)  # no version 2
    with pytest.raises(UnknownDocument):
        store.documents.document_revision(doc, bytes(32))  # no such message to take a weft from
