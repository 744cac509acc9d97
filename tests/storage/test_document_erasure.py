"""Erased document edits (docs/DOCUMENTS.md, "Erased edits"; storage/documents/erased.py): the
atoms keep their places without characters on every store, whether it saw the content or
not; no byte of the characters stays in the documents' tables; the skeleton wins."""

from __future__ import annotations

import tempfile
from dataclasses import fields
from pathlib import Path

import msgpack
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tanglenode.protocol.doc_ipc import blame_body
from tanglenode.protocol.document import (
    AtomRef,
    Delete,
    Insert,
    edit_content,
    init_content,
    skeleton,
)
from tanglenode.protocol.erase import erase_content
from tanglenode.protocol.message import Message, TangleLink
from tanglenode.storage.documents.rows import DocumentTables
from tanglenode.storage.documents.sealed import is_sealed
from tanglenode.storage.feeds.ingest import Outcome
from tanglenode.storage.groups import state as groups
from tanglenode.storage.groups.doc_keys import refresh_document_keys
from tanglenode.storage.reindex import compare, reindex
from tanglenode.storage.store import FeedStore
from tanglenode.storage.tools.compact import compact
from tests.factories import Feed, keypair

ALICE = keypair("doc-erase-alice")
SECRET = "Qz7secretWORDS"


def doc_rows_holding(store, needle: bytes) -> list[str]:
    """The documents' tables holding `needle` in a key or a value (every row scanned)."""
    tables = store.ctx.document_tables
    found = []
    with store.ctx.read() as txn:
        for name, field in zip(DocumentTables.NAMES, fields(DocumentTables), strict=True):
            for key, value in txn.cursor(db=getattr(tables, field.name)):
                if needle in bytes(key) or needle in bytes(value):
                    found.append(name.decode())
    return found


def state(store, doc: bytes):
    """What every store holding the same messages must read alike."""
    documents = store.documents
    return (
        documents.document_text(doc),
        documents.document_blame(doc),
        sorted((m, r) for m, r, _d in documents.document_set_aside(doc)),
    )


def test_the_authors_store_keeps_the_atoms_and_drops_every_character(open_store):
    alice = open_store("alice", keypair=ALICE)
    doc = alice.documents.create_document("notes")
    (ab,) = alice.documents.edit_document(doc.id, [("ins", 0, "ab")])
    (secret,) = alice.documents.edit_document(doc.id, [("ins", 1, SECRET)])
    alice.documents.edit_document(doc.id, [("ins", 1 + len(SECRET) + 1, "yz")])
    # a deletion that ends in the secret, and an undelete of it, before the erasure
    (gone,) = alice.documents.edit_document(doc.id, [("del", 0, 3)])
    back = alice.writes.publish(
        edit_content([Insert(AtomRef(ab.id, 1), "!")]), {"doc": doc.id}
    )  # any plain edit: the undelete below cites the backspaces
    assert alice.documents.document_text(doc.id) == f"{SECRET[2:]}b!yz"
    request = alice.writes.publish(erase_content(secret.seq, secret.id, skeleton(secret.content)))

    assert alice.feeds.erased_by(secret.id) == request.id
    assert alice.documents.document_text(doc.id) == "b!yz"
    for needle in (SECRET[:4], SECRET[4:8], SECRET[-4:]):
        assert doc_rows_holding(alice, needle.encode()) == []
    blame = alice.documents.document_blame(doc.id)
    erased = [span for span in blame if span.erased is not None]
    assert [(s.msg_id, s.erased, s.erased_atoms, s.text) for s in erased] == [
        (secret.id, request.id, len(SECRET) - 2, "")
    ]
    assert "".join(span.text for span in blame) == "b!yz"
    bodies = [blame_body(span) for span in blame]  # what IPC doc-blame answers
    assert [b for b in bodies if "erased" in b] == [
        {"text": "", "author": ALICE.public, "msg": secret.id, "erased": request.id, "atoms": 12}
    ]
    # the atoms are in place: an edit typed after an erased atom lands there
    after = alice.writes.publish(
        edit_content([Insert(AtomRef(secret.id, 5), "<X>"), Delete(AtomRef(ab.id, 1), 1)]),
        {"doc": doc.id},
    )
    assert not [r for r in alice.documents.document_set_aside(doc.id) if r[0] == after.id]
    assert alice.documents.document_text(doc.id) == "<X>!yz"
    # what the erasure left is what weaving the messages again gives
    assert compare(alice.ctx, alice.views, ["documents"]) == []
    assert gone and back


def test_after_compact_no_byte_of_the_erased_characters_is_on_disk(tmp_path):
    path = tmp_path / "alice"
    with FeedStore(path, keypair=ALICE, map_size=2**26) as alice:
        doc = alice.documents.create_document("notes")
        alice.documents.edit_document(doc.id, [("ins", 0, "ab")])
        (secret,) = alice.documents.edit_document(doc.id, [("ins", 1, SECRET)])
        alice.documents.edit_document(doc.id, [("del", 2, 3)])
        weave = alice.documents.erase_weave(secret.id)
        alice.writes.publish(erase_content(secret.seq, secret.id, weave))
        assert alice.documents.document_text(doc.id) == "ab"
    compact(path, 2**26)
    needle = SECRET[3:9].encode()
    assert [p for p in path.rglob("*") if p.is_file() and needle in p.read_bytes()] == []


def scenario():
    """alice creates a document, types "ab", then SECRET between them (`secret`); bob types
    after the secret's 6th atom (`cites`) and deletes part of it; alice erases it."""
    alice, bob = Feed("doc-erase-a"), Feed("doc-erase-b")
    doc = alice.root("doc", init_content("shared"))
    link = TangleLink(doc.id, (doc.id,))
    ab = alice.append(edit_content([Insert(AtomRef(doc.id, 0), "ab")]), tangles={"doc": link})
    secret = alice.append(
        edit_content([Insert(AtomRef(ab.id, 0), SECRET)]),
        tangles={"doc": TangleLink(doc.id, (ab.id,))},
    )
    knows = {alice.public: secret}
    cites = bob.append(
        edit_content([Insert(AtomRef(secret.id, 5), "<bob>"), Delete(AtomRef(secret.id, 0), 2)]),
        tangles={"doc": TangleLink(doc.id, (secret.id,))},
        timeframe=knows,
    )
    request = alice.append(erase_content(secret.seq, secret.id, skeleton(secret.content)))
    return doc, ab, secret, cites, request


def test_a_store_that_never_saw_the_content_weaves_the_same_text(open_store):
    doc, ab, secret, cites, request = scenario()
    seen, unseen = open_store("seen"), open_store("unseen")
    seen.writes.ingest([m.raw for m in (doc, ab, secret, cites)])
    assert seen.documents.document_text(doc.id) == f"a{SECRET[2:6]}<bob>{SECRET[6:]}b"
    seen.writes.ingest([request.raw])

    # the other store gets the edit as its header alone: it waits, and so does bob's edit
    # that cites its atoms, until the request brings the skeleton
    outcomes = unseen.writes.ingest([doc.raw, ab.raw, secret.without_content().raw, cites.raw])
    assert [r.outcome for r in outcomes] == [Outcome.ACCEPTED] * 4
    assert unseen.documents.document_text(doc.id) == "ab"
    assert unseen.documents.document_set_aside(doc.id) == []  # bob's edit waits with it
    unseen.writes.ingest([request.raw])

    assert seen.documents.document_text(doc.id) == "a<bob>b"
    assert state(unseen, doc.id) == state(seen, doc.id)
    assert [s.erased for s in seen.documents.document_blame(doc.id)] == [
        None,
        request.id,
        None,
        request.id,
        None,
    ]
    assert doc_rows_holding(seen, SECRET[-6:].encode()) == []


def test_the_skeleton_wins_over_the_content_a_store_held(open_store):
    """A request whose weave says otherwise than the content (its author's to choose) leaves
    every store with the weave the request says, the ones that held the content too."""
    alice, bob = Feed("doc-skel-a"), Feed("doc-skel-b")
    doc = alice.root("doc", init_content("shared"))
    long = alice.append(
        edit_content([Insert(AtomRef(doc.id, 0), SECRET)]),
        tangles={"doc": TangleLink(doc.id, (doc.id,))},
    )
    cites = bob.append(
        edit_content([Insert(AtomRef(long.id, 9), "<bob>")]),
        tangles={"doc": TangleLink(doc.id, (long.id,))},
        timeframe={alice.public: long},
    )
    short = dict(skeleton(long.content), ops=[["ins", 1, 0, 3]])  # 3 atoms, not 14
    request = alice.append(erase_content(long.seq, long.id, short))
    held, header_only = open_store("held"), open_store("header-only")
    held.writes.ingest([doc.raw, long.raw, cites.raw, request.raw])
    header_only.writes.ingest([doc.raw, long.without_content().raw, cites.raw, request.raw])
    assert state(held, doc.id) == state(header_only, doc.id)
    text, blame, aside = state(held, doc.id)
    assert text == "" and aside == [(cites.id, "unknown-atom")]  # atom 9 is not there now
    assert [(s.erased, s.erased_atoms) for s in blame] == [(request.id, 3)]
    assert doc_rows_holding(held, SECRET[:6].encode()) == []


def test_a_request_without_weave_makes_the_message_no_document_message_everywhere(open_store):
    doc, ab, secret, cites, _request = scenario()
    alice = Feed("doc-erase-a")
    alice.messages[:] = [doc, ab, secret, _request]
    alice.messages.pop()
    bare = alice.append(erase_content(secret.seq, secret.id))
    held, header_only = open_store("held"), open_store("header-only")
    held.writes.ingest([doc.raw, ab.raw, secret.raw, cites.raw, bare.raw])
    header_only.writes.ingest([doc.raw, ab.raw, secret.without_content().raw, cites.raw, bare.raw])
    assert state(held, doc.id) == state(header_only, doc.id)
    text, _blame, aside = state(held, doc.id)
    assert text == "ab" and aside == [(cites.id, "outside-weft")]  # no such message in its weft


def test_a_malformed_weave_sets_the_edit_aside_everywhere(open_store):
    doc, ab, secret, cites, _request = scenario()
    alice = Feed("doc-erase-a")
    alice.messages[:] = [doc, ab, secret]
    bad = alice.append(erase_content(secret.seq, secret.id, {"ops": [["ins", 1, 0, "x"]]}))
    held, header_only = open_store("held"), open_store("header-only")
    held.writes.ingest([doc.raw, ab.raw, secret.raw, cites.raw, bad.raw])
    header_only.writes.ingest([doc.raw, ab.raw, secret.without_content().raw, cites.raw, bad.raw])
    assert state(held, doc.id) == state(header_only, doc.id)
    _text, _blame, aside = state(held, doc.id)
    assert dict(aside) == {secret.id: "malformed", cites.id: "outside-weft"}
    assert doc_rows_holding(held, SECRET[:6].encode()) == []


def test_a_purge_takes_the_characters_out_here_and_survives_a_reweave(open_store):
    doc, ab, secret, cites, _request = scenario()
    store = open_store("purging")
    store.writes.ingest([m.raw for m in (doc, ab, secret, cites)])
    assert store.writes.purge([secret.id]) == [secret.id]
    assert store.documents.document_text(doc.id) == "a<bob>b"
    assert [s.erased for s in store.documents.document_blame(doc.id)].count(b"") == 2
    assert doc_rows_holding(store, SECRET[-6:].encode()) == []
    # woven again from the messages, the purged one's skeleton kept from its content
    assert compare(store.ctx, store.views, ["documents"]) == []
    blame = store.documents.document_blame(doc.id)
    reindex(store.ctx, store.views, ["documents"])
    assert store.documents.document_text(doc.id) == "a<bob>b"
    assert store.documents.document_blame(doc.id) == blame


def test_a_private_edit_is_erased_with_a_sealed_skeleton_members_weave_alike(open_store):
    alice = open_store("alice", keypair=ALICE)
    club = alice.writes.publish(*groups.create(ALICE, "club")).id
    refresh_document_keys(alice, ALICE)
    doc = alice.documents.create_document("private", group=club)
    alice.documents.edit_document(doc.id, [("ins", 0, "ab")])
    (secret,) = alice.documents.edit_document(doc.id, [("ins", 1, SECRET)])
    weave = alice.documents.erase_weave(secret.id)
    assert is_sealed(weave)  # read by the group alone
    assert SECRET[:5].encode() not in msgpack.packb(weave)
    assert alice.documents.erase_weave(doc.id) is not None  # an init has one too
    request = alice.writes.publish(erase_content(secret.seq, secret.id, weave))
    assert alice.documents.document_text(doc.id) == "ab"
    assert doc_rows_holding(alice, SECRET[:6].encode()) == []
    # a store that holds the group's key and gets the edit as its header alone
    again = open_store("again", keypair=ALICE)
    raws = [m.raw for m in alice.feeds.read_feed(ALICE.public) if m.id != secret.id]
    again.writes.ingest([alice.feeds.get(secret.id).raw, *raws])  # header-only from alice
    refresh_document_keys(again, ALICE)
    assert state(again, doc.id) == state(alice, doc.id)
    assert [s.erased for s in again.documents.document_blame(doc.id)] == [None, request.id, None]


def test_an_erased_title_and_comment_keep_their_places_without_their_words(open_store):
    alice = open_store("alice", keypair=ALICE)
    doc = alice.documents.create_document(f"title {SECRET}")
    alice.documents.edit_document(doc.id, [("ins", 0, "some text")])
    note = alice.documents.comments.comment(doc.id, 0, 4, f"note {SECRET}")
    reply = alice.documents.comments.reply(note.id, "a reply")
    for message in (note, doc):
        alice.writes.publish(
            erase_content(message.seq, message.id, alice.documents.erase_weave(message.id))
        )
    [info] = alice.documents.held()
    assert info.title == "" and alice.documents.document_text(doc.id) == "some text"
    (comments, _more) = alice.documents.comments.comments(doc.id)
    assert [(c.id, c.text, c.quote, [r.id for r in c.replies]) for c in comments] == [
        (note.id, "", "some", [reply.id])
    ]
    assert doc_rows_holding(alice, SECRET.encode()) == []
    # a store that got both as headers alone reads the same
    other = open_store("other")
    held = {m.id: m for m in alice.feeds.read_feed(ALICE.public)}
    other.writes.ingest([m.raw for m in held.values()])
    assert not other.feeds.get(note.id).has_content and not other.feeds.get(doc.id).has_content
    assert [(i.id, i.title) for i in other.documents.held()] == [(doc.id, "")]
    assert other.documents.comments.comments(doc.id) == (comments, _more)


# -- convergence -------------------------------------------------------------------------

AUTHORS = [Feed(f"doc-erase-prop-{n}").keypair for n in range(3)]


class Authors:
    """Three authors' feeds and what each knows (a vector clock), for random valid edits."""

    def __init__(self) -> None:
        self.feeds = [Feed(keypair_) for keypair_ in AUTHORS]
        self.doc = self.feeds[0].root("doc", init_content("prop"))
        self.knows = [{0: 1} for _ in self.feeds]  # author -> {author: seq}
        self.texts: dict[tuple[int, int], Message] = {}  # (author, seq) -> an edit with text
        self.erased: set[tuple[int, int]] = set()
        self.tips: list[bytes] = [self.doc.id]

    def sync(self, a: int, b: int) -> None:
        for author, seq in self.knows[b].items():
            self.knows[a][author] = max(self.knows[a].get(author, 0), seq)

    def _known(self, a: int) -> list[Message]:
        knows = self.knows[a]
        return [m for (author, seq), m in sorted(self.texts.items()) if seq <= knows.get(author, 0)]

    def _timeframe(self, a: int) -> dict:
        return {
            self.feeds[b].public: self.feeds[b].messages[seq - 1]
            for b, seq in self.knows[a].items()
            if b != a and seq
        }

    def edit(self, a: int, pick: int, text: str, delete: bool) -> None:
        known = self._known(a)
        if delete and known:
            target = known[pick % len(known)]
            length = len(target.content["ops"][0][3])
            op = Delete(AtomRef(target.id, pick % length), 1)
        elif known and pick % 3:
            cause = known[pick % len(known)]
            op = Insert(AtomRef(cause.id, pick % len(cause.content["ops"][0][3])), text)
        else:
            op = Insert(AtomRef(self.doc.id, 0), text)
        feed = self.feeds[a]
        message = feed.append(
            edit_content([op]),
            tangles={"doc": TangleLink(self.doc.id, tuple(sorted(self.tips))[:16])},
            timeframe=self._timeframe(a),
        )
        self.knows[a][a] = message.seq
        if type(op) is Insert:
            self.texts[(a, message.seq)] = message

    def erase(self, a: int, pick: int) -> None:
        own = [m for (author, seq), m in sorted(self.texts.items()) if author == a]
        own = [m for m in own if (a, m.seq) not in self.erased]
        if not own:
            return
        target = own[pick % len(own)]
        self.erased.add((a, target.seq))
        weave = None if pick % 7 == 0 else skeleton(target.content)  # none: no document's
        request = self.feeds[a].append(
            erase_content(target.seq, target.id, weave), timeframe=self._timeframe(a)
        )
        self.knows[a][a] = request.seq


steps = st.lists(
    st.tuples(
        st.sampled_from(["edit", "edit", "delete", "erase", "erase", "sync", "sync"]),
        st.integers(0, 2),
        st.integers(0, 2),
        st.integers(0, 1000),
        st.text("xyzw", min_size=1, max_size=4),
    ),
    min_size=4,
    max_size=16,
)


def delivery(authors: Authors, draw, header_only: bool) -> list[list[bytes]]:
    """Every message in an order each feed keeps, in batches; an erased edit maybe as its
    header alone."""
    queues = [list(feed.messages) for feed in authors.feeds]
    erased_ids = {authors.feeds[a].messages[seq - 1].id for a, seq in authors.erased}
    batches: list[list[bytes]] = [[]]
    while any(queues):
        choices = [n for n, queue in enumerate(queues) if queue]
        message = queues[draw(st.sampled_from(choices))].pop(0)
        bare = header_only and message.id in erased_ids and draw(st.integers(0, 3)) > 0
        batches[-1].append(message.without_content().raw if bare else message.raw)
        if draw(st.booleans()):
            batches.append([])
    return batches


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(plan=steps, data=st.data())
def test_edits_and_erasures_in_any_order_converge(plan, data):
    authors = Authors()
    for kind, a, b, pick, text in plan:
        if kind == "sync":
            authors.sync(a, b)
        elif kind == "erase":
            authors.erase(a, pick)
        else:
            authors.edit(a, pick, text, kind == "delete")
    for a in range(len(AUTHORS)):  # every author takes back one of its edits, at the end
        authors.erase(a, data.draw(st.integers(0, 1000)))
    with (
        tempfile.TemporaryDirectory() as directory,
        FeedStore(Path(directory) / "1", map_size=2**24) as first,
        FeedStore(Path(directory) / "2", map_size=2**24) as second,
    ):
        for store, header_only in ((first, False), (second, True)):
            lagging = data.draw(st.booleans())  # weave behind, through the backlog
            if lagging:
                next(v for v in store.views if v.name == "documents").slice = 0
            for batch in delivery(authors, data.draw, header_only):
                prepared = store.writes.prepare(batch)
                results = store.writes.ingest_prepared(prepared, weave=not lagging)
                assert all(r.outcome is Outcome.ACCEPTED for r in results)
                if lagging and data.draw(st.booleans()):
                    store.writes.weave_backlog(data.draw(st.integers(1, 200)))
            store.writes.weave_all()
        doc = authors.doc.id
        assert state(first, doc) == state(second, doc)
        for store in (first, second):  # and what a rebuild from the messages gives
            assert compare(store.ctx, store.views, ["documents"]) == []
        erased_ids = {authors.feeds[a].messages[seq - 1].id for a, seq in authors.erased}
        blamed = {span.msg_id for span in first.documents.document_blame(doc) if span.text}
        assert not blamed & erased_ids  # no character of an erased edit is shown
