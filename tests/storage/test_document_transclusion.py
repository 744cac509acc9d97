"""Transclusion (docs/DOCUMENTS.md, "Transclusion"): a document shows live ranges of others in
place, rendered with the inclusions inside them; cycles, private documents, missing and
deleted ranges say so in place; the bounds hold; the place is checked alike on every store."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from tanglenode.protocol.document import AtomRef, DocReason, include_content
from tanglenode.storage.documents import transclusion
from tanglenode.storage.documents.transclusion import Part
from tanglenode.storage.errors import BadSplice
from tests.factories import Feed
from tests.storage.test_document_set_aside import assert_set_aside, everywhere, in_doc, world
from tests.storage.test_documents import ME

__all__ = ["world"]  # the fixture, shared


def shown(parts) -> str:
    """A rendering as text: inclusions in [ ], what is not followed as <kind>."""
    out = []
    for part in parts:
        if part.kind == "text":
            out.append(part.text)
        elif part.kind == "included":
            out.append("[" + shown(part.parts) + "]")
        else:
            out.append(f"<{part.kind}>")
    return "".join(out)


def a_document(store, title: str, text: str) -> bytes:
    doc = store.documents.create_document(title).id
    store.documents.edit_document(doc, [("ins", 0, text)])
    return doc


def test_an_included_range_follows_its_edits_in_place(store):
    docs = store.documents
    report = a_document(store, "report", "Budget: . End.")
    sheet = a_document(store, "sheet", "total 1200 euros, due May")
    docs.transclusion.include(report, 8, docs.document_link(sheet, 6, 16))  # "1200 euros"
    assert shown(docs.transclusion.render(report)) == "Budget: [1200 euros]. End."
    docs.edit_document(sheet, [("del", 7, 3), ("ins", 7, "350")])  # inside the range
    docs.edit_document(sheet, [("ins", 0, "Q2 ")])  # before it: stays outside
    assert shown(docs.transclusion.render(report)) == "Budget: [1350 euros]. End."
    assert docs.document_text(report) == "Budget: . End."  # its own text: unchanged
    docs.edit_document(report, [("ins", 0, "# ")])
    assert shown(docs.transclusion.render(report)) == "# Budget: [1350 euros]. End."


def test_inclusions_nest_and_a_cycle_is_shown_not_followed(store):
    docs = store.documents
    a = a_document(store, "a", "A says: ")
    b = a_document(store, "b", "B quotes <> here")
    docs.transclusion.include(b, 10, docs.document_link(a, 0, 1))  # b shows "A" inside <>
    docs.transclusion.include(a, 8, docs.document_link(b, 2, 16))  # a shows "quotes <...> here"
    assert shown(docs.transclusion.render(a)) == "A says: [quotes <<cycle>> here]"
    assert shown(docs.transclusion.render(b)) == "B quotes <[A]> here"


def test_a_range_at_the_start_all_deleted_is_said_so(store):
    docs = store.documents
    a = a_document(store, "a", "tail")
    b = a_document(store, "b", "gone soon")
    docs.transclusion.include(a, 0, docs.document_link(b, 0, 4))
    assert shown(docs.transclusion.render(a)) == "[gone]tail"
    docs.edit_document(b, [("del", 0, 5)])
    [deleted, rest] = docs.transclusion.render(a)
    assert (deleted.kind, deleted.text, rest.text) == ("deleted", "gone", "tail")


def test_a_private_document_is_withheld_and_a_missing_one_is_missing(open_store):
    from tanglenode.storage.groups.doc_keys import refresh_document_keys
    from tests.storage.test_private_documents import ALICE, CAROL, a_private_document, club_with

    alice = open_store("alice", keypair=ALICE)
    club = club_with(alice, [])
    secret = a_private_document(alice, club)  # "The party is on Friday"
    public = a_document(alice, "public", "See: ")
    other = a_document(alice, "other", "elsewhere")
    alice.documents.transclusion.include(public, 5, alice.documents.document_link(secret, 16, 22))
    alice.documents.transclusion.include(public, 5, alice.documents.document_link(other, 0, 4))
    assert shown(alice.documents.transclusion.render(public)) == "See: [Friday][else]"

    carol = open_store("carol", keypair=CAROL)
    raws = list(alice.feeds.iter_raw())
    carol.writes.ingest(raws)
    refresh_document_keys(carol, CAROL)
    assert shown(carol.documents.transclusion.render(public)) == "See: <withheld>[else]"
    assert "Friday" not in repr(carol.documents.transclusion.render(public))


def test_the_bounds_hold_depth_fan_out_and_size(store, monkeypatch):
    docs = store.documents
    chain = [a_document(store, f"d{n}", f"<{n}>") for n in range(transclusion.MAX_DEPTH + 2)]
    for outer, inner in itertools.pairwise(chain):
        docs.transclusion.include(outer, 2, docs.document_link(inner, 0, 3))
    rendered = shown(docs.transclusion.render(chain[0]))
    assert rendered == "<0[<1[<2[<3[<4<too-deep>>]>]>]>]>"
    assert rendered.count("[") == transclusion.MAX_DEPTH

    monkeypatch.setattr(transclusion, "MAX_INCLUSIONS", 3)
    hub = a_document(store, "hub", "x")
    leaf = a_document(store, "leaf", "y")
    for _ in range(5):
        docs.transclusion.include(hub, 1, docs.document_link(leaf, 0, 1))
    parts = docs.transclusion.render(hub)
    assert [p.kind for p in parts] == ["text", "included", "included", "included", "too-many"]
    assert parts[-1] == Part("too-many", "2")

    monkeypatch.setattr(transclusion, "MAX_CODE_POINTS", 5)
    long = a_document(store, "long", "0123456789")
    assert [(p.kind, p.text) for p in docs.transclusion.render(long)] == [
        ("text", "01234"),
        ("cut", "5"),
    ]


def test_include_refuses_what_is_no_inclusion(store):
    docs = store.documents
    a = a_document(store, "a", "abc")
    b = a_document(store, "b", "def")
    with pytest.raises(BadSplice):
        docs.transclusion.include(a, 4, docs.document_link(b, 0, 1))  # past the end
    with pytest.raises(BadSplice):
        docs.transclusion.include(a, 1, docs.document_link(a, 0, 1))  # itself


# Each case: (the content, given the world; the reason it is set aside).
CASES: dict[str, tuple[Any, DocReason]] = {
    "missing-place": (
        lambda w: include_content(
            AtomRef(w.hello.id, 9),
            w.elsewhere.id,
            AtomRef(w.elsewhere.id, 0),
            AtomRef(w.elsewhere.id, 1),
        ),
        DocReason.UNKNOWN_ATOM,
    ),
    "after-a-backspace": (
        lambda w: include_content(
            AtomRef(w.dropped.id, 0),
            w.elsewhere.id,
            AtomRef(w.elsewhere.id, 0),
            AtomRef(w.elsewhere.id, 1),
        ),
        DocReason.WRONG_KIND,
    ),
    "a-place-in-another-document": (
        lambda w: include_content(
            AtomRef(w.elsewhere.id, 0),
            w.elsewhere.id,
            AtomRef(w.elsewhere.id, 0),
            AtomRef(w.elsewhere.id, 1),
        ),
        DocReason.OUTSIDE_WEFT,
    ),
    "itself": (
        lambda w: include_content(
            AtomRef(w.hello.id, 0), w.doc, AtomRef(w.hello.id, 0), AtomRef(w.hello.id, 1)
        ),
        DocReason.MALFORMED,
    ),
    "a-bool-index": (
        lambda w: (
            include_content(
                AtomRef(w.hello.id, 0), w.doc, AtomRef(w.hello.id, 0), AtomRef(w.hello.id, 1)
            )
            | {"at": [w.hello.id, True]}
        ),
        DocReason.BAD_OP,
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_inclusion_in_the_wrong_place_is_set_aside_on_every_store(open_store, world, case):
    build, reason = CASES[case]
    bad = Feed("mallory").append(build(world), tangles=in_doc(world), timeframe={ME.public: 7})
    stores = everywhere(open_store, world, [bad])
    assert_set_aside(stores, world.doc, bad, reason, world.doc)
    assert all(shown(s.documents.transclusion.render(world.doc)) == "hell" for s in stores)


def test_an_inclusion_of_a_document_no_store_holds_is_kept_and_shown_missing(open_store, world):
    nowhere = bytes(range(32))
    made = Feed("mallory").append(
        include_content(
            AtomRef(world.hello.id, 1), nowhere, AtomRef(nowhere, 0), AtomRef(nowhere, 1)
        ),
        tangles=in_doc(world),
        timeframe={ME.public: 7},
    )
    stores = everywhere(open_store, world, [made])
    for store in stores:
        assert shown(store.documents.transclusion.render(world.doc)) == "he<missing>ll"
        assert store.documents.document_set_aside(world.doc) == []
