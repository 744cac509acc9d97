"""Document edits set aside: the same reason on every store, whatever the delivery order,
and the document untouched (docs/DOCUMENTS.md, "What is set aside, and why")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from tanglenode.protocol.document import (
    EDIT,
    INIT,
    TANGLE,
    AtomRef,
    Delete,
    DocReason,
    Insert,
    Undelete,
    edit_content,
)
from tanglenode.protocol.message import ROOT_LINK, Message, TangleLink
from tanglenode.storage.errors import UnknownDocument
from tanglenode.storage.feeds.ingest import Outcome
from tanglenode.storage.store import FeedStore
from tests.factories import Feed
from tests.storage.test_documents import ME, everything, ingest_all, own_head


@dataclass
class World:
    """The author's store: a document "hello" cut to "hell", a plain message, a second
    document, and a doc-tangle root that is no doc/init. Seqs 1..8 of ME's feed."""

    store: FeedStore
    doc: bytes
    hello: Message  # typed "hello": atoms 0..4
    dropped: Message  # the backspace on "o": atom 0
    post: Message  # not a document message
    elsewhere: Message  # "zzz" in another document
    fake_root: Message  # roots a "doc" tangle with a post


@pytest.fixture
def world(store) -> World:
    doc = store.documents.create_document("notes").id
    [hello] = store.documents.edit_document(doc, [("ins", 0, "hello")])
    [dropped] = store.documents.edit_document(doc, [("del", 4, 1)])
    post = store.writes.publish({"text": "not a doc message", "type": "post"})
    other = store.documents.create_document("other").id
    [elsewhere] = store.documents.edit_document(other, [("ins", 0, "zzz")])
    fake_root = store.writes.publish({"type": "post"}, {TANGLE: None})
    assert store.documents.document_text(doc) == "hell"
    assert own_head(store) == 7
    return World(store, doc, hello, dropped, post, elsewhere, fake_root)


def in_doc(world: World) -> dict[str, TangleLink]:
    return {TANGLE: TangleLink(world.doc, (world.dropped.id,))}


def everywhere(open_store, world: World, bad: list[Message]) -> list[FeedStore]:
    """Three fresh stores given the world and the bad messages in three ways: the world
    first, all in one call, the bad ones first (they wait for their timeframe)."""
    good = everything(world.store)
    raws = [m.raw for m in bad]
    stores = []
    for number, batches in enumerate([[good, raws], [raws + good], [raws, good]]):
        store = open_store(f"peer{number}")
        for batch in batches:
            results = store.writes.ingest(batch)
            assert all(r.outcome is Outcome.ACCEPTED for r in results)
        assert all(store.feeds.get(m.id) == m for m in bad)  # stored, not refused
        stores.append(store)
    ingest_all(world.store, raws)
    return [world.store, *stores]


def assert_set_aside(stores, under: bytes, bad: Message, reason: DocReason, doc: bytes):
    """`bad` is set aside under `under` with `reason`, identically on every store, and the
    document is untouched."""
    asides = [store.documents.document_set_aside(under) for store in stores]
    assert [(msg_id, found) for msg_id, found, _detail in asides[0]] == [(bad.id, reason)]
    assert all(aside == asides[0] for aside in asides), asides
    for store in stores:
        assert store.documents.document_text(doc) == "hell"
        assert bad.id not in {v.msg_id for v in store.documents.document_versions(doc)}


# Each case: (ops or a raw content, the expected reason). Ops cite the world's atoms.
ENGINE_CASES: dict[str, tuple[Any, DocReason]] = {
    "missing-index": (lambda w: [Insert(AtomRef(w.hello.id, 5), "x")], DocReason.UNKNOWN_ATOM),
    "delete-past-the-run": (lambda w: [Delete(AtomRef(w.hello.id, 3), 3)], DocReason.UNKNOWN_ATOM),
    "undelete-past-the-run": (
        lambda w: [Undelete(AtomRef(w.dropped.id, 0), 2)],
        DocReason.UNKNOWN_ATOM,
    ),
    # A weft holds only messages of its document: others are outside it.
    "a-plain-message": (lambda w: [Insert(AtomRef(w.post.id, 0), "x")], DocReason.OUTSIDE_WEFT),
    "another-document": (
        lambda w: [Delete(AtomRef(w.elsewhere.id, 0), 1)],
        DocReason.OUTSIDE_WEFT,
    ),
    "a-later-op-fails": (
        lambda w: [Insert(AtomRef(w.doc, 0), "ok"), Delete(AtomRef(w.hello.id, 9), 1)],
        DocReason.UNKNOWN_ATOM,
    ),
    "delete-the-root": (lambda w: [Delete(AtomRef(w.doc, 0), 1)], DocReason.WRONG_KIND),
    "delete-a-backspace": (lambda w: [Delete(AtomRef(w.dropped.id, 0), 1)], DocReason.WRONG_KIND),
    "undelete-text": (lambda w: [Undelete(AtomRef(w.hello.id, 0), 1)], DocReason.WRONG_KIND),
    "undelete-the-root": (lambda w: [Undelete(AtomRef(w.doc, 0), 1)], DocReason.WRONG_KIND),
    "type-after-a-backspace": (
        lambda w: [Insert(AtomRef(w.dropped.id, 0), "x")],
        DocReason.WRONG_KIND,
    ),
    "delete-past-the-root": (lambda w: [Delete(AtomRef(w.doc, 0), 2)], DocReason.UNKNOWN_ATOM),
}


def raw_edit(ops: list, refs: list, **extra) -> dict:
    return {"ops": ops, "refs": refs, "type": EDIT, **extra}


MALFORMED_CASES: dict[str, tuple[Any, DocReason]] = {
    "ops-not-an-array": (lambda w: {"ops": {}, "refs": [], "type": EDIT}, DocReason.MALFORMED),
    "no-ops": (lambda w: raw_edit([], []), DocReason.BAD_OP),
    "an-extra-key": (lambda w: raw_edit([["ins", 1, 0, "x"]], [w.doc], x=1), DocReason.MALFORMED),
    "unknown-op": (lambda w: raw_edit([["mov", 1, 0, 1]], [w.doc]), DocReason.BAD_OP),
    "op-of-three": (lambda w: raw_edit([["ins", 1, 0]], [w.doc]), DocReason.MALFORMED),
    "ref-past-the-refs": (lambda w: raw_edit([["ins", 2, 0, "x"]], [w.doc]), DocReason.BAD_REF),
    "unused-ref": (
        lambda w: raw_edit([["ins", 1, 0, "x"]], sorted([w.doc, w.hello.id])),
        DocReason.BAD_REF,
    ),
    "refs-descending": (
        lambda w: raw_edit(
            [["ins", 1, 0, "x"], ["ins", 2, 0, "y"]], sorted([w.doc, w.hello.id], reverse=True)
        ),
        DocReason.BAD_REF,
    ),
    "short-ref": (lambda w: raw_edit([["ins", 1, 0, "x"]], [w.doc[:31]]), DocReason.BAD_REF),
    "self-ref-ahead": (lambda w: raw_edit([["ins", 0, 0, "x"]], []), DocReason.SELF_REF),
    "empty-insert": (lambda w: raw_edit([["ins", 1, 0, ""]], [w.doc]), DocReason.BAD_OP),
    "delete-nothing": (lambda w: raw_edit([["del", 1, 0, 0]], [w.hello.id]), DocReason.BAD_OP),
    "bool-index": (lambda w: raw_edit([["ins", 1, True, "x"]], [w.doc]), DocReason.MALFORMED),
    "too-many-atoms": (
        lambda w: raw_edit([["del", 1, 0, 16385]], [w.hello.id]),
        DocReason.TOO_MANY,
    ),
}


@pytest.mark.parametrize("case", sorted(ENGINE_CASES))
def test_an_edit_citing_the_wrong_atoms_is_set_aside_on_every_store(open_store, world, case):
    build, reason = ENGINE_CASES[case]
    bad = Feed("mallory").append(
        edit_content(build(world)), tangles=in_doc(world), timeframe={ME.public: 7}
    )
    stores = everywhere(open_store, world, [bad])
    assert_set_aside(stores, world.doc, bad, reason, world.doc)


@pytest.mark.parametrize("case", sorted(MALFORMED_CASES))
def test_a_malformed_edit_is_set_aside_on_every_store(open_store, world, case):
    build, reason = MALFORMED_CASES[case]
    bad = Feed("mallory").append(build(world), tangles=in_doc(world), timeframe={ME.public: 7})
    stores = everywhere(open_store, world, [bad])
    assert_set_aside(stores, world.doc, bad, reason, world.doc)


def test_an_edit_building_on_a_set_aside_edit_is_set_aside_too(open_store, world):
    mallory = Feed("mallory")
    first = mallory.append(
        edit_content([Delete(AtomRef(world.doc, 0), 1)]),
        tangles=in_doc(world),
        timeframe={ME.public: 7},
    )
    second = mallory.append(
        edit_content([Insert(AtomRef(world.hello.id, 0), "x"), Delete(AtomRef(first.id, 0), 1)]),
        tangles={TANGLE: TangleLink(world.doc, (first.id,))},
        timeframe={ME.public: 7},
    )
    stores = everywhere(open_store, world, [first, second])
    asides = [
        sorted((m, r) for m, r, _d in store.documents.document_set_aside(world.doc))
        for store in stores
    ]
    assert asides[0] == sorted(
        [(first.id, DocReason.WRONG_KIND), (second.id, DocReason.UNKNOWN_ATOM)]
    )
    assert all(aside == asides[0] for aside in asides)
    assert all(store.documents.document_text(world.doc) == "hell" for store in stores)


def test_an_edit_in_a_doc_tangle_whose_root_is_no_doc_init_is_set_aside(open_store, world):
    root = world.fake_root.id
    bad = Feed("mallory").append(
        edit_content([Insert(AtomRef(root, 0), "x")]),
        tangles={TANGLE: TangleLink(root, (root,))},
        timeframe={ME.public: 7},
    )
    stores = everywhere(open_store, world, [bad])
    asides = [store.documents.document_set_aside(root) for store in stores]
    assert [(m, r) for m, r, _d in asides[0]] == [(bad.id, DocReason.UNKNOWN_DOC)]
    assert all(aside == asides[0] for aside in asides)
    for store in stores:
        with pytest.raises(UnknownDocument):
            store.documents.document_text(root)
        assert [info.id for info in store.documents.held()] == [
            world.doc,
            world.elsewhere.tangles[TANGLE].root,
        ]


def test_document_messages_in_the_wrong_place_are_set_aside(open_store, world):
    mallory = Feed("mallory")
    # An edit outside any doc tangle: set aside under its own id.
    loose = mallory.append(
        edit_content([Insert(AtomRef(world.doc, 0), "x")]), timeframe={ME.public: 7}
    )
    # An init that does not root its doc tangle: set aside under the document it names.
    joined = mallory.append(
        {"title": "t", "type": INIT}, tangles=in_doc(world), timeframe={ME.public: 7}
    )
    # An init with an empty title: no document.
    untitled = mallory.append(
        {"title": "", "type": INIT}, tangles={TANGLE: ROOT_LINK}, timeframe={ME.public: 7}
    )
    # An init whose title is not a string.
    numbered = mallory.append(
        {"title": 7, "type": INIT}, tangles={TANGLE: ROOT_LINK}, timeframe={ME.public: 7}
    )
    stores = everywhere(open_store, world, [loose, joined, untitled, numbered])
    for store in stores:
        reasons = {
            bad.id: [(m, r) for m, r, _d in store.documents.document_set_aside(under)]
            for bad, under in [
                (loose, loose.id),
                (joined, world.doc),
                (untitled, untitled.id),
                (numbered, numbered.id),
            ]
        }
        assert reasons == {
            loose.id: [(loose.id, DocReason.MALFORMED)],
            joined.id: [(joined.id, DocReason.MALFORMED)],
            untitled.id: [(untitled.id, DocReason.BAD_TITLE)],
            numbered.id: [(numbered.id, DocReason.BAD_TITLE)],
        }
        assert store.documents.document_text(world.doc) == "hell"
        assert len(store.documents.held()) == 2
        for not_a_doc in (loose.id, untitled.id, numbered.id):
            with pytest.raises(UnknownDocument):
                store.documents.document_text(not_a_doc)


def test_an_edit_citing_an_atom_outside_its_weft_is_set_aside(open_store, world):
    # The timeframe stops before `hello` (seq 2), which the store processed first.
    bad = Feed("mallory").append(
        edit_content([Delete(AtomRef(world.hello.id, 0), 1)]),
        tangles={TANGLE: TangleLink(world.doc, (world.doc,))},
        timeframe={ME.public: 1},
    )
    peer = open_store("peer")
    ingest_all(peer, everything(world.store))
    ingest_all(peer, [bad.raw])
    [(msg_id, reason, _detail)] = peer.documents.document_set_aside(world.doc)
    assert (msg_id, reason) == (bad.id, DocReason.OUTSIDE_WEFT)
    assert peer.documents.document_text(world.doc) == "hell"


def test_an_edit_whose_doc_init_is_outside_its_weft_is_set_aside(open_store, world):
    bad = Feed("mallory").append(
        edit_content([Insert(AtomRef(world.doc, 0), "x")]),
        tangles={TANGLE: TangleLink(world.doc, (world.doc,))},
    )
    peer = open_store("peer")
    ingest_all(peer, everything(world.store))
    ingest_all(peer, [bad.raw])
    [(msg_id, reason, _detail)] = peer.documents.document_set_aside(world.doc)
    assert (msg_id, reason) == (bad.id, DocReason.OUTSIDE_WEFT)
    assert peer.documents.document_text(world.doc) == "hell"


def test_the_reason_for_a_citation_outside_the_weft_does_not_depend_on_delivery(open_store, world):
    bad = Feed("mallory").append(
        edit_content([Delete(AtomRef(world.hello.id, 0), 1)]),
        tangles={TANGLE: TangleLink(world.doc, (world.doc,))},
        timeframe={ME.public: 1},
    )
    stores = everywhere(open_store, world, [bad])
    assert_set_aside(stores, world.doc, bad, DocReason.OUTSIDE_WEFT, world.doc)


def test_the_reason_for_a_doc_init_outside_the_weft_does_not_depend_on_delivery(open_store, world):
    bad = Feed("mallory").append(
        edit_content([Insert(AtomRef(world.doc, 0), "x")]),
        tangles={TANGLE: TangleLink(world.doc, (world.doc,))},
    )
    stores = everywhere(open_store, world, [bad])
    asides = [
        [(m, r) for m, r, _d in store.documents.document_set_aside(world.doc)] for store in stores
    ]
    assert asides[0] == [(bad.id, DocReason.OUTSIDE_WEFT)]
    assert all(aside == asides[0] for aside in asides), asides
