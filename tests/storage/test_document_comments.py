"""Comments on ranges and their replies (docs/DOCUMENTS.md, "Comments"): kept or set aside
alike on every store whatever the delivery, following their ranges, never changing the text,
and surviving a document woven again."""

from __future__ import annotations

from typing import Any

import pytest

from tanglenode.protocol.document import (
    COMMENT,
    COMMENT_TANGLE,
    TANGLE,
    AtomRef,
    DocReason,
    comment_content,
)
from tanglenode.protocol.message import ROOT_LINK, TangleLink
from tanglenode.storage.documents.reweave import DocumentWeaver
from tests.factories import Feed
from tests.storage.test_document_set_aside import assert_set_aside, everywhere, in_doc, world
from tests.storage.test_documents import ME

__all__ = ["world"]  # the fixture, shared


def comment_on(w, first: AtomRef, last: AtomRef, text: str = "note") -> dict[str, Any]:
    return comment_content(text, first, last)


# Each case: (the content, given the world; the reason it is set aside).
CASES: dict[str, tuple[Any, DocReason]] = {
    "missing-index": (
        lambda w: comment_on(w, AtomRef(w.hello.id, 0), AtomRef(w.hello.id, 5)),
        DocReason.UNKNOWN_ATOM,
    ),
    "another-document": (
        lambda w: comment_on(w, AtomRef(w.elsewhere.id, 0), AtomRef(w.elsewhere.id, 2)),
        DocReason.OUTSIDE_WEFT,
    ),
    "a-plain-message": (
        lambda w: comment_on(w, AtomRef(w.post.id, 0), AtomRef(w.post.id, 0)),
        DocReason.OUTSIDE_WEFT,
    ),
    "the-root": (
        lambda w: comment_on(w, AtomRef(w.doc, 0), AtomRef(w.hello.id, 2)),
        DocReason.WRONG_KIND,
    ),
    "a-backspace": (
        lambda w: comment_on(w, AtomRef(w.hello.id, 0), AtomRef(w.dropped.id, 0)),
        DocReason.WRONG_KIND,
    ),
    "an-extra-key": (
        lambda w: comment_on(w, AtomRef(w.hello.id, 0), AtomRef(w.hello.id, 1)) | {"x": 1},
        DocReason.MALFORMED,
    ),
    "bool-index": (
        lambda w: {"range": [w.hello.id, True, w.hello.id, 1], "text": "n", "type": COMMENT},
        DocReason.BAD_OP,
    ),
    "empty-text": (
        lambda w: {"range": [w.hello.id, 0, w.hello.id, 1], "text": "", "type": COMMENT},
        DocReason.TOO_MANY,
    ),
    "a-reply-outside-a-thread": (
        lambda w: {"text": "answers nothing", "type": COMMENT},
        DocReason.MALFORMED,
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_comment_naming_the_wrong_atoms_is_set_aside_on_every_store(open_store, world, case):
    build, reason = CASES[case]
    bad = Feed("mallory").append(build(world), tangles=in_doc(world), timeframe={ME.public: 7})
    stores = everywhere(open_store, world, [bad])
    assert_set_aside(stores, world.doc, bad, reason, world.doc)
    assert all(store.documents.comments.comments(world.doc) == ([], 0) for store in stores)


def test_a_comment_on_text_outside_its_weft_is_set_aside(open_store, world):
    """Its timeframe names the document but not the edit that typed the text it cites."""
    bad = Feed("mallory").append(
        comment_on(world, AtomRef(world.hello.id, 0), AtomRef(world.hello.id, 1)),
        tangles={TANGLE: TangleLink(world.doc, (world.doc,))},
        timeframe={ME.public: 1},
    )
    stores = everywhere(open_store, world, [bad])
    assert_set_aside(stores, world.doc, bad, DocReason.OUTSIDE_WEFT, world.doc)


def test_replies_thread_under_a_comment_and_a_reply_to_a_reply_is_refused(open_store, world):
    mallory = Feed("mallory")
    comment = mallory.append(
        comment_on(world, AtomRef(world.hello.id, 1), AtomRef(world.hello.id, 3), "ell?"),
        tangles=in_doc(world) | {COMMENT_TANGLE: ROOT_LINK},
        timeframe={ME.public: 7},
    )
    thread = {COMMENT_TANGLE: TangleLink(comment.id, (comment.id,))}
    trudy = Feed("trudy")  # another author answers
    reply = trudy.append(
        comment_content("yes, ell", None, None),
        tangles={TANGLE: TangleLink(world.doc, (comment.id,))} | thread,
        timeframe={ME.public: 7, mallory.keypair.public: comment.seq},
    )
    blind = Feed("eve").append(  # its timeframe does not name the comment it answers
        comment_content("what comment?", None, None),
        tangles={TANGLE: TangleLink(world.doc, (reply.id,))} | thread,
        timeframe={ME.public: 7},
    )
    nested = trudy.append(
        comment_content("a reply to a reply", None, None),
        tangles={
            TANGLE: TangleLink(world.doc, (reply.id,)),
            COMMENT_TANGLE: TangleLink(reply.id, (reply.id,)),
        },
        timeframe={ME.public: 7},
    )
    stores = everywhere(open_store, world, [comment, reply, nested, blind])
    shown = [store.documents.comments.comments(world.doc) for store in stores]
    assert all(found == shown[0] for found in shown)  # the same on every store
    [kept], total = shown[0]
    assert total == 1 and (kept.text, kept.quote, kept.start) == ("ell?", "ell", 1)
    assert [r.text for r in kept.replies] == ["yes, ell"]
    expected = {nested.id: DocReason.MALFORMED, blind.id: DocReason.OUTSIDE_WEFT}
    for store in stores:  # each store alike, whatever came first
        found = store.documents.document_set_aside(world.doc)
        assert {msg_id: reason for msg_id, reason, _detail in found} == expected


def test_a_comment_follows_its_range_and_outlives_its_text(store):
    doc = store.documents.create_document("notes").id
    store.documents.edit_document(doc, [("ins", 0, "the quick brown fox")])
    comments = store.documents.comments
    made = comments.comment(doc, 4, 15, "which?")
    versions = len(store.documents.document_versions(doc))
    store.documents.edit_document(doc, [("ins", 10, "and lazy "), ("ins", 0, ">> ")])
    [found], _ = comments.comments(doc)
    assert (found.id, found.quote, found.start) == (made.id, "quick and lazy brown", 7)
    text = store.documents.document_text(doc)
    assert text[found.start : found.start + len(found.quote)] == found.quote
    assert len(store.documents.document_versions(doc)) == versions + 1  # a comment takes none
    store.documents.edit_document(doc, [("del", 7, len(found.quote))])
    [gone], total = comments.comments(doc)
    assert total == 1 and gone.deleted and gone.quote == "quick and lazy brown"
    assert store.documents.document_text(doc) == ">> the  fox"


def test_comments_survive_their_document_woven_again(store):
    doc = store.documents.create_document("notes").id
    store.documents.edit_document(doc, [("ins", 0, "alpha beta")])
    made = store.documents.comments.comment(doc, 6, 10, "greek")
    store.documents.comments.reply(made.id, "indeed")
    before = store.documents.comments.comments(doc)
    with store.ctx.write() as txn:
        weaver = DocumentWeaver.over(txn, store.ctx)
        assert weaver.weave_again() == 1
        weaver.finish()
    assert store.documents.comments.comments(doc) == before
    assert store.documents.document_text(doc) == "alpha beta"


def test_a_private_documents_comments_are_sealed_and_read_once_the_key_comes(open_store):
    """Comments are sealed in the document's group as its edits are: an outsider holding
    every message reads none of them; a member whose key comes late reads them then, with
    their replies, as the author does."""
    from tanglenode.storage.errors import SealedDocument
    from tanglenode.storage.groups.doc_keys import refresh_document_keys
    from tests.storage.test_private_documents import (
        ALICE,
        BOB,
        CAROL,
        a_private_document,
        club_with,
        sync,
    )

    alice = open_store("alice", keypair=ALICE)
    club = club_with(alice, [BOB.public])
    doc = a_private_document(alice, club)  # "The party is on Friday"
    made = alice.documents.comments.comment(doc, 16, 22, "which Friday, the 13th?")
    alice.documents.comments.reply(made.id, "the next one")
    raws = list(alice.feeds.iter_raw())
    assert not any(b"13th" in raw or b"next one" in raw for raw in raws)

    carol = open_store("carol", keypair=CAROL)
    sync(alice, carol)
    refresh_document_keys(carol, CAROL)
    with pytest.raises(SealedDocument):
        carol.documents.comments.comments(doc)

    bob = open_store("bob", keypair=BOB)
    bob.writes.ingest(raws[-4:])  # the document and its comments before the key's messages
    sync(alice, bob)
    with pytest.raises(SealedDocument):
        bob.documents.comments.comments(doc)
    assert refresh_document_keys(bob, BOB)
    [found], total = bob.documents.comments.comments(doc)
    assert total == 1 and (found.text, found.quote) == ("which Friday, the 13th?", "Friday")
    assert [r.text for r in found.replies] == ["the next one"]
    assert bob.documents.comments.comments(doc) == alice.documents.comments.comments(doc)


def test_a_public_reply_to_a_sealed_message_is_set_aside_alike_by_member_and_outsider(open_store):
    """Whether a node can open the message a reply names must not decide a public document:
    the reply is set aside on the member's node and on the outsider's alike."""
    from tanglenode.storage.groups.doc_keys import refresh_document_keys
    from tests.storage.test_private_documents import (
        ALICE,
        BOB,
        CAROL,
        a_private_document,
        club_with,
    )

    alice = open_store("alice", keypair=ALICE)
    club = club_with(alice, [BOB.public])
    private = a_private_document(alice, club)
    sealed = alice.documents.comments.comment(private, 0, 3, "secret note")
    public = alice.documents.create_document("public notes").id
    alice.documents.edit_document(public, [("ins", 0, "hello world")])
    reply = alice.writes.publish(
        comment_content("re", None, None), {TANGLE: public, COMMENT_TANGLE: sealed.id}
    )
    carol = open_store("carol", keypair=CAROL)
    carol.writes.ingest(list(alice.feeds.iter_raw()))
    refresh_document_keys(carol, CAROL)
    for store in (alice, carol):
        assert [(m, r) for m, r, _d in store.documents.document_set_aside(public)] == [
            (reply.id, DocReason.UNKNOWN_ATOM)
        ]


def test_a_reply_naming_no_comment_in_its_timeframe_gets_one_reason_whatever_came_first(
    open_store, world
):
    """The comment waits for a message the reply does not: one store processes the comment
    first, the other the reply; both set the reply aside as outside its timeframe."""
    xavier = Feed("xavier")
    post = xavier.append({"type": "post", "text": "hi"})
    comment = Feed("mallory").append(
        comment_on(world, AtomRef(world.hello.id, 0), AtomRef(world.hello.id, 2)),
        tangles=in_doc(world) | {COMMENT_TANGLE: ROOT_LINK},
        timeframe={ME.public: 7, xavier.keypair.public: post.seq},
    )
    reply = Feed("eve").append(
        comment_content("what?", None, None),
        tangles=in_doc(world) | {COMMENT_TANGLE: TangleLink(comment.id, (comment.id,))},
        timeframe={ME.public: 7},
    )
    from tests.storage.test_documents import everything

    good = everything(world.store)
    comment_first, reply_first = open_store("a"), open_store("b")
    for batch in (good, [post.raw], [comment.raw], [reply.raw]):
        comment_first.writes.ingest(batch)
    for batch in (good, [comment.raw, reply.raw], [post.raw]):
        reply_first.writes.ingest(batch)
    for store in (comment_first, reply_first):
        found = store.documents.document_set_aside(world.doc)
        assert [(m, r) for m, r, _d in found] == [(reply.id, DocReason.OUTSIDE_WEFT)]


def test_reading_many_comments_walks_the_document_once(store, monkeypatch):
    """However many comments, a read places them all in one walk over the weave, and keeps
    each quote bounded (a long range is not held whole per comment)."""
    from tanglenode.storage.documents import comments as comments_module
    from tanglenode.storage.documents import revisions

    doc = store.documents.create_document("long").id
    store.documents.edit_document(doc, [("ins", 0, "abcdefghij" * 1000)])
    for n in range(60):
        store.documents.comments.comment(doc, n, 10_000 - n, f"note {n}")
    walks = []
    real = revisions._pieces
    monkeypatch.setattr(revisions, "_pieces", lambda *a: walks.append(1) or real(*a))
    found, total = store.documents.comments.comments(doc)
    assert total == 60 and len(walks) == 1
    assert all(len(c.quote) == comments_module.QUOTE_KEPT for c in found)
    assert [c.length for c in found[:2]] == [10_000, 9_998]
