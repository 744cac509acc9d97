"""`tangled doc edit` while others edit the document: each try reads a snapshot, diffs, and
sends the splices with their base; a conflict makes it read and diff again (`docs.edit_to`).

The node's own handlers run on a real store (`backend.call_store`, as `doc edit` does while
the node is stopped); a peer's edit is ingested between the read and the send."""

import pytest

from tanglenode.node.cli import doc_checkout, doc_revisions, docs
from tanglenode.node.cli.backend import call_store
from tanglenode.node.cli.support import BadInput, NotFound
from tanglenode.node.ipc.client import NodeError
from tanglenode.node.service.store_service import StoreService
from tanglenode.protocol.doc_ipc import MAX_SPLICES
from tanglenode.protocol.identity import message_text
from tanglenode.protocol.ipc import ErrorKind
from tanglenode.storage.store import FeedStore
from tests.factories import keypair

ME, PEER = keypair("doc-edit"), keypair("doc-edit-peer")


def docs_groups(old: str, new: str) -> list:
    return list(docs.requests(docs.edit_splices(old, new)))


class Store:
    """Our store, a peer whose edits it ingests, and a log of the requests `edit_to` made."""

    def __init__(self, tmp_path):
        self.tmp_path = tmp_path
        self.store = FeedStore(tmp_path / "store", keypair=ME, map_size=2**27)
        self.service = StoreService(self.store)
        self.requests: list[tuple[str, dict]] = []
        self.replies: list = []  # each request's reply, or the error it raised
        self.before_edit = lambda number: None  # called before each doc-edit, numbered from 0

    def call(self, op, **arguments):
        if op == "doc-edit":
            self.before_edit(sum(1 for seen, _ in self.requests if seen == "doc-edit"))
        self.requests.append((op, arguments))
        try:
            reply = call_store(self.service, ME, op, **arguments)
        except NodeError as error:
            self.replies.append(error)
            raise
        self.replies.append(reply)
        return reply

    def ops(self):
        return [op for op, _ in self.requests]

    def peer_edit(self, doc, splices):
        """A second author edits the document, and we ingest the edit."""
        with FeedStore(self.tmp_path / "peer", keypair=PEER, map_size=2**27) as peer:
            peer.writes.ingest(list(self.store.feeds.iter_raw()))
            messages = peer.documents.edit_document(doc, splices)
            raws = peer.feeds.read_feed_raw(PEER.public, messages[0].seq, len(messages))
        assert all(result.stored for result in self.store.writes.ingest(raws))

    def text(self, doc):
        return self.store.documents.document_text(doc)


@pytest.fixture
def store(tmp_path):
    with_store = Store(tmp_path)
    yield with_store
    with_store.store.close()


def document(store, text):
    doc = store.store.documents.create_document("shared").id
    store.store.documents.edit_document(doc, [("ins", 0, text)])
    return doc


def test_an_edit_sends_its_splices_in_one_request_with_the_version_it_read(store):
    doc = document(store, "hello world\n")
    published = docs.edit_to(store.call, doc, "Hello, world!\n")
    assert store.text(doc) == "Hello, world!\n"
    assert store.ops() == ["doc-show", "doc-edit"]
    assert store.requests[1][1]["base"] == 1
    assert [m["version"] for m in published] == [2]
    assert docs.edit_to(store.call, doc, "Hello, world!\n") == []  # the same text: unchanged


def test_an_edit_that_lost_a_race_is_read_and_diffed_again_and_ends_with_the_file(store):
    doc = document(store, "one two three\n")
    new = "one 2 three\nfour\n"

    def a_peer_types_first(number):
        if number == 0:  # between our read and our send
            store.peer_edit(doc, [("ins", 0, "zero ")])

    store.before_edit = a_peer_types_first
    published = docs.edit_to(store.call, doc, new)
    assert store.text(doc) == new  # exactly the file: the peer's edit was seen, then undone
    assert store.ops() == ["doc-show", "doc-edit", "doc-show", "doc-edit"]
    assert [arguments.get("base") for _, arguments in store.requests] == [None, 1, None, 2]
    assert [m["version"] for m in published] == [3]  # the refused try published nothing
    versions = store.store.documents.document_versions(doc)
    assert [v.author for v in versions[1:]] == [ME.public, PEER.public, ME.public]


def test_a_long_edit_bases_each_request_on_the_last_and_a_race_between_them_rereads(store):
    doc = document(store, "a b " * (MAX_SPLICES + 100))
    new = "a b x " * (MAX_SPLICES + 100)  # a splice per "x ": more than one request holds

    def a_peer_types_between_our_requests(number):
        if number == 1:
            store.peer_edit(doc, [("ins", 0, "!")])

    store.before_edit = a_peer_types_between_our_requests
    published = docs.edit_to(store.call, doc, new)
    assert store.text(doc) == new
    assert store.ops()[:4] == ["doc-show", "doc-edit", "doc-edit", "doc-show"]
    (_, first), (_, second) = store.requests[1:3]
    assert len(first["splices"]) == MAX_SPLICES and first["base"] == 1
    assert second["base"] == store.replies[1]["messages"][-1]["version"]  # what the first made
    assert store.replies[2].kind is ErrorKind.CONFLICT  # the peer came between: read again
    assert store.ops().count("doc-show") == 2
    authors = {v.number: v.author for v in store.store.documents.document_versions(doc)}
    assert {authors[m["version"]] for m in published} == {ME.public}  # each one we made
    assert len(authors) == 3 + len(published)  # and the init, the first text, the peer's edit


def test_an_edit_that_keeps_losing_gives_up_after_five_tries(store):
    doc = document(store, "abc")
    store.before_edit = lambda number: store.peer_edit(doc, [("ins", 0, "x")])
    with pytest.raises(docs.EditConflict, match=r"kept changing.*\(5 tries\)"):
        docs.edit_to(store.call, doc, "abcd")
    assert store.ops() == ["doc-show", "doc-edit"] * docs.EDIT_TRIES
    assert store.text(doc) == "x" * docs.EDIT_TRIES + "abc"  # the peer's edits only


def test_a_conflict_from_the_store_is_the_nodes_and_another_refusal_is_not_retried(store):
    doc = document(store, "abc")
    with pytest.raises(NodeError) as refused:
        call_store(
            store.service,
            ME,
            "doc-edit",
            doc=doc,
            splices=[["ins", 0, "x"]],
            base=0,
            exclusive=True,
        )
    assert refused.value.kind is ErrorKind.CONFLICT

    def refusing(op, **arguments):
        store.requests.append((op, arguments))
        if op == "doc-edit":
            raise NodeError(ErrorKind.OWN_FEED_FORKED, "our key is in use elsewhere")
        return call_store(store.service, ME, op, **arguments)

    with pytest.raises(NodeError, match="own-feed-forked"):
        docs.edit_to(refusing, doc, "abcd")
    assert store.ops() == ["doc-show", "doc-edit"]


# -- editing a file taken out of the document (node/cli/doc_checkout.py) ----------------------


def test_a_file_edited_while_another_edits_the_document_keeps_both(store, tmp_path):
    """The case that once lost a sentence: bob takes the text out, alice adds to the start,
    bob appends a line to his copy and publishes it. Both stay, and bob's file keeps
    editing from the revision it now is."""
    doc = document(store, "We meet at noon.\n")
    path = str(tmp_path / "bob.txt")
    shown = store.call("doc-show", doc=doc)
    doc_checkout.write_checkout(path, doc, shown["text"], shown["weft"])
    store.peer_edit(doc, [("ins", 0, "ALICE WAS HERE. ")])
    mine = shown["text"] + "Bring tea.\n"
    _published, made = doc_checkout.edit_from(
        store.call, doc, doc_checkout.read_base(path, doc), mine, docs_groups
    )
    assert store.text(doc) == "ALICE WAS HERE. We meet at noon.\nBring tea.\n"
    assert store.call("doc-show", doc=doc, at=made)["text"] == mine  # the file's revision
    doc_checkout.write_checkout(path, doc, mine, made)
    again = mine.replace("noon", "one")
    doc_checkout.edit_from(store.call, doc, doc_checkout.read_base(path, doc), again, docs_groups)
    assert store.text(doc) == "ALICE WAS HERE. We meet at one.\nBring tea.\n"


def test_a_sidecar_of_another_document_or_malformed_is_refused(store, tmp_path):
    doc, other = document(store, "a"), document(store, "b")
    path = str(tmp_path / "file.txt")
    doc_checkout.write_checkout(path, other, "b", {})
    with pytest.raises(BadInput, match="not of"):
        doc_checkout.read_base(path, doc)
    for junk in (b"not json", b'{"doc": 1}', b'{"doc": "%x", "base": {}}', b"[]"):
        doc_checkout.sidecar(path).write_bytes(junk)
        with pytest.raises(BadInput, match="not a revision"):
            doc_checkout.read_base(path, doc)
    doc_checkout.sidecar(path).unlink()
    assert doc_checkout.read_base(path, doc) is None


def test_a_short_message_id_names_the_one_version_it_starts(store):
    doc = document(store, "abc")
    [edit] = store.store.documents.edit_document(doc, [("ins", 3, "d")])
    full = message_text(edit.id)
    assert doc_revisions.resolve_at(store.call, doc, doc_revisions.parse_at(full[:9])) == edit.id
    assert store.call("doc-show", doc=doc, at=edit.id)["text"] == "abcd"
    with pytest.raises(NotFound, match="no version of"):
        doc_revisions.resolve_at(store.call, doc, doc_revisions.ShortId("%" + "-" * 8))
    assert doc_revisions.parse_at(full[:9] + "…") == full[:9]  # as `doc blame` prints it
    with pytest.raises(BadInput, match="at least 4"):
        doc_revisions.parse_at(full[:4])


def test_a_long_edit_cut_short_resumes_from_the_revision_its_last_request_left(store, tmp_path):
    doc = document(store, "a b " * 1100 + "\n")
    path = str(tmp_path / "long.txt")
    shown = store.call("doc-show", doc=doc)
    doc_checkout.write_checkout(path, doc, shown["text"], shown["weft"])
    new = "a b x " * 1100 + "\n"  # 1,100 inserts: more than one request holds
    assert len(docs_groups(shown["text"], new)) > 1

    def interrupted(op, **arguments):
        if op == "doc-edit" and any(seen == "doc-edit" for seen, _ in store.requests):
            raise KeyboardInterrupt  # the second request never goes
        return store.call(op, **arguments)

    def remember(made):
        doc_checkout.write_base(path, doc, made)

    base = doc_checkout.read_base(path, doc)
    with pytest.raises(KeyboardInterrupt):
        doc_checkout.edit_from(interrupted, doc, base, new, docs_groups, remember)
    assert store.text(doc) not in (shown["text"], new)  # part of it went
    base = doc_checkout.read_base(path, doc)  # the revision the first request left
    doc_checkout.edit_from(store.call, doc, base, new, docs_groups, remember)
    assert store.text(doc) == new  # nothing sent twice
