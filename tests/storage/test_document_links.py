"""Links into a document's text (docs/DOCUMENTS.md, "Links"): a range named by the atoms at its
ends resolves, after any later edits by anyone, to what was typed between those atoms, and
text deleted since is shown as it read."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tanglenode.protocol.doc_link import BadLink, parse_link
from tanglenode.storage.errors import BadSplice
from tanglenode.storage.store import FeedStore
from tests.factories import keypair

ALICE, BOB, CAROL = (keypair(f"link-{name}") for name in ("alice", "bob", "carol"))


def sync(source: FeedStore, target: FeedStore) -> None:
    target.writes.ingest(list(source.feeds.iter_raw()))


def test_a_link_follows_its_text_through_edits_around_and_inside_it(open_store):
    alice = open_store("alice", keypair=ALICE)
    doc = alice.documents.create_document("notes").id
    alice.documents.edit_document(doc, [("ins", 0, "The quick brown fox jumps.")])
    link = alice.documents.document_link(doc, 4, 15)  # "quick brown"
    text = link.text()
    assert parse_link(text) == link and text.startswith("tangled:link/")
    assert alice.documents.resolve_link(link).text == "quick brown"
    alice.documents.edit_document(doc, [("ins", 0, "Look: ")])  # before it
    alice.documents.edit_document(doc, [("ins", 21, " furry")])  # after it
    alice.documents.edit_document(doc, [("ins", 15, " very")])  # inside it
    now = alice.documents.document_text(doc)
    assert now == "Look: The quick very brown furry fox jumps."
    resolved = alice.documents.resolve_link(link)
    assert (resolved.text, resolved.was) == ("quick very brown", None)
    assert now[resolved.start : resolved.start + len(resolved.text)] == resolved.text
    alice.documents.edit_document(doc, [("del", 10, 16)])  # all of it: "quick very brown"
    gone = alice.documents.resolve_link(link)
    assert gone.text == "" and gone.was == "quick brown"  # as it read when linked


def test_links_are_checked_as_text_and_as_ranges(open_store):
    alice = open_store("alice", keypair=ALICE)
    doc = alice.documents.create_document("notes").id
    alice.documents.edit_document(doc, [("ins", 0, "abc")])
    for bad in (0, "", "tangled:link/x", "tangled:link/" + "A" * 43, "x" * 1000):
        with pytest.raises(BadLink):
            parse_link(bad)
    for start, end in ((2, 2), (0, 4), (-1, 1), (3, 2)):
        with pytest.raises(BadSplice):
            alice.documents.document_link(doc, start, end)
    good = alice.documents.document_link(doc, 0, 3).text()
    assert parse_link(good).last[1] == 2
    with pytest.raises(BadLink):  # one spelling per link: no leading zero
        parse_link(good.replace(".2/", ".02/", 1))


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.randoms(use_true_random=False))
def test_links_taken_anywhere_resolve_as_their_atoms_say(tmp_path_factory, rng: random.Random):
    """Three authors edit at random and sync at random; links are taken at random points,
    then marked: a character typed just inside each range must be in its resolution, one
    typed just before it or just after it must not, and every character of the range
    still shown must be, in order."""
    base = tmp_path_factory.mktemp("links")
    stores = [
        FeedStore(base / n, keypair=k, map_size=2**26)
        for n, k in (("a", ALICE), ("b", BOB), ("c", CAROL))
    ]
    try:
        alice = stores[0]
        doc = alice.documents.create_document("t").id
        alice.documents.edit_document(doc, [("ins", 0, "abcdefghij")])
        for store in stores[1:]:
            sync(alice, store)
        links = []
        for step in range(12):
            store = rng.choice(stores)
            text = store.documents.document_text(doc)
            if rng.random() < 0.3 and len(text) >= 3:
                start = rng.randrange(len(text) - 2)
                end = rng.randrange(start + 2, len(text) + 1)
                link = store.documents.document_link(doc, start, end)
                atoms = store.documents.document_atoms(doc)[start:end]
                # code points no other edit types: typed after, inside and before the range
                after, inner, before = (chr(0x4E00 + 3 * step + k) for k in range(3))
                store.documents.edit_document(
                    doc, [("ins", end, after), ("ins", start + 1, inner), ("ins", start, before)]
                )
                links.append((link, atoms, (before, inner, after)))
            elif text and rng.random() < 0.4:
                at = rng.randrange(len(text))
                store.documents.edit_document(doc, [("del", at, min(2, len(text) - at))])
            else:
                at = rng.randrange(len(text) + 1)
                store.documents.edit_document(doc, [("ins", at, rng.choice("xyz"))])
            if rng.random() < 0.5:
                sync(rng.choice(stores), rng.choice(stores))
        for a in stores:
            for b in stores:
                sync(a, b)
        for store in stores:
            shown = store.documents.document_atoms(doc)
            text = store.documents.document_text(doc)
            for link, atoms, (before, inner, after) in links:
                resolved = store.documents.resolve_link(link)
                assert text[resolved.start : resolved.start + len(resolved.text)] == resolved.text
                inside = [atom for atom in atoms if atom in shown]
                span = shown[resolved.start : resolved.start + len(resolved.text)]
                assert [atom for atom in span if atom in atoms] == inside  # every one kept
                assert before not in resolved.text and after not in resolved.text  # outside
                if inner in text:  # typed inside, it is inside (unless deleted since)
                    assert inner in resolved.text
                if not resolved.text:
                    assert not inside and resolved.was is not None
        texts = {s.documents.document_text(doc) for s in stores}
        assert len(texts) == 1
    finally:
        for store in stores:
            store.close()
