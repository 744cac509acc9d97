"""A proof that cuts a feed back takes its edits out of every document, the same on every node."""

from tanglenode.protocol.document import AtomRef, Insert, edit_content, init_content
from tanglenode.protocol.message import TangleLink
from tanglenode.storage.feeds.ingest import Outcome
from tests.factories import Feed


def edit(feed: Feed, doc, ops, timeframe):
    tips = (doc.id,)
    return feed.append(
        edit_content(ops), tangles={"doc": TangleLink(doc.id, tips)}, timeframe=timeframe
    )


def scenario():
    alice, mallory, bob = Feed("doc-alice"), Feed("doc-mallory"), Feed("doc-bob")
    doc = alice.root("doc", init_content("shared"))
    evil = edit(mallory, doc, [Insert(AtomRef(doc.id, 0), "evil")], {alice.public: 1})
    mallory.messages.clear()  # the same key signs another seq 1: a fork
    twin = edit(mallory, doc, [Insert(AtomRef(doc.id, 0), "twin")], {alice.public: 1})
    after_evil = {alice.public: doc, mallory.public: evil}
    cites_evil = edit(bob, doc, [Insert(AtomRef(evil.id, 3), "!")], after_evil)
    honest = edit(bob, doc, [Insert(AtomRef(doc.id, 0), "fine ")], after_evil)
    return doc, evil, twin, cites_evil, honest


def view(store, doc):
    return (
        store.documents.document_text(doc.id),
        store.documents.document_atoms(doc.id),
        sorted(
            (msg_id, reason)
            for msg_id, reason, _detail in store.documents.document_set_aside(doc.id)
        ),
    )


def test_a_fork_found_after_weaving_leaves_what_a_node_that_knew_first_has(open_store):
    doc, evil, twin, cites_evil, honest = scenario()
    late, early = open_store("late"), open_store("early")

    outcomes = late.writes.ingest([doc.raw, evil.raw, cites_evil.raw, honest.raw])
    assert [r.outcome for r in outcomes] == [Outcome.ACCEPTED] * 4
    assert late.documents.document_text(doc.id) == "fine evil!"
    head_before, _entries = late.documents.document_splices(doc.id, 0)
    late.writes.ingest([twin.raw])  # the fork: mallory is invalid from seq 1

    early.writes.ingest([doc.raw, evil.raw, twin.raw])
    early.writes.ingest([cites_evil.raw, honest.raw])

    assert view(late, doc) == view(early, doc)
    text, _atoms, set_aside = view(late, doc)
    assert text == "fine "
    assert [msg_id for msg_id, _reason in set_aside] == [cites_evil.id]
    assert set_aside[0][1] == "outside-weft"  # a message a proof removed is held nowhere
    # Subscribers of the late node are told to take a new snapshot.
    head, entries = late.documents.document_splices(doc.id, head_before)
    assert head > head_before and entries[-1].splices is None


def test_a_fork_of_the_documents_creator_removes_the_document(open_store):
    alice, bob = Feed("creator"), Feed("editor")
    doc = alice.root("doc", init_content("doomed"))
    typed = edit(bob, doc, [Insert(AtomRef(doc.id, 0), "text")], {alice.public: 1})
    alice.messages.clear()
    twin = alice.root("doc", init_content("twin"))
    store = open_store()
    store.writes.ingest([doc.raw, typed.raw])
    assert [info.id for info in store.documents.held()] == [doc.id]
    store.writes.ingest([twin.raw])
    assert store.documents.held() == []
    assert [m for m, _r, _d in store.documents.document_set_aside(doc.id)] == [typed.id]


def test_what_a_proof_removes_leaves_no_set_aside_record_and_the_rest_is_decided_again(
    open_store,
):
    """A forker's set-aside edit, and an edit rooted at a forker's message, read the same on
    a node that held them before the proof and on one that got the proof first."""
    alice, mallory, helen = Feed("aside-alice"), Feed("aside-mallory"), Feed("aside-helen")
    doc = alice.root("doc", init_content("t"))
    typed = edit(alice, doc, [Insert(AtomRef(doc.id, 0), "abc")], {})
    m1 = mallory.append({"m": 1})
    bad = edit(mallory, doc, [Insert(AtomRef(typed.id, 99), "Q")], {alice.public: typed})
    twin = Feed(mallory.keypair)
    twin.messages = [m1]
    m2 = twin.append({"m": "2, again"})
    rooted = helen.append(
        edit_content([Insert(AtomRef(m1.id, 0), "Q")]),
        tangles={"doc": TangleLink(m1.id, (m1.id,))},
        timeframe={mallory.public: m1},
    )
    other = Feed(mallory.keypair).append({"m": "1, again"})
    views = []
    for label, batches in [
        ("held-first", [[doc, typed, m1, bad, rooted], [m2], [other]]),
        ("proof-first", [[doc, typed, m1, other, m2], [bad, rooted]]),
    ]:
        store = open_store(label)
        for batch in batches:
            store.writes.ingest([m.raw for m in batch])
        assert store.feeds.invalid_feeds() == {mallory.public: 1}
        views.append(
            (
                [(m, r) for m, r, _d in store.documents.document_set_aside(doc.id)],
                [(m, r) for m, r, _d in store.documents.document_set_aside(m1.id)],
                store.documents.document_text(doc.id),
            )
        )
    assert views[0] == views[1] == ([], [(rooted.id, "outside-weft")], "abc")
