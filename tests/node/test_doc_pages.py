"""How the `doc` commands read a text (node/cli/doc_pages.py): page after page of one revision,
through the node's own handlers on a real store (`backend.call_store`, as while the node
is stopped), with edits and proofs landing between the pages."""

import pytest

from tanglenode.node.cli import doc_pages
from tanglenode.node.cli.backend import call_store
from tanglenode.node.service.store_service import StoreService
from tanglenode.protocol.document import AtomRef, Insert, edit_content, init_content
from tanglenode.protocol.message import TangleLink
from tanglenode.storage.store import FeedStore
from tests.factories import Feed, keypair

ME = keypair("doc-pages")
TYPED = "héllo 😀 wörld: a text read five code points a page\n"


def doc_edit(feed: Feed, doc, ops, timeframe):
    return feed.append(
        edit_content(ops), tangles={"doc": TangleLink(doc.id, (doc.id,))}, timeframe=timeframe
    )


class Node:
    """Our store served by the node's handlers; `between` runs after each first page."""

    def __init__(self, tmp_path):
        self.store = FeedStore(tmp_path / "store", keypair=ME, map_size=2**26)
        self.service = StoreService(self.store)
        self.alice = Feed("pages-alice")
        self.doc = self.alice.root("doc", init_content("paged"))
        self.typed = doc_edit(self.alice, self.doc, [Insert(AtomRef(self.doc.id, 0), TYPED)], {})
        self.store.writes.ingest([self.doc.raw, self.typed.raw])
        self.between = lambda: None
        self.pages: list[dict] = []  # the arguments of each doc-show

    def call(self, op, **arguments):
        reply = call_store(self.service, ME, op, **arguments)
        if op == "doc-show":
            self.pages.append(arguments)
            if arguments.get("start") == 0:
                self.between()
        return reply

    def forger(self, name: str):
        """A feed with an edit after ours, and a twin of it to ingest later: its fork."""
        forger = Feed(name)
        cause = AtomRef(self.typed.id, len(TYPED) - 1)
        edit = doc_edit(forger, self.doc, [Insert(cause, f"{name} 😈")], {self.alice.public: 2})
        forger.messages.clear()  # the same key signs another seq 1
        twin = doc_edit(forger, self.doc, [Insert(cause, "twin")], {self.alice.public: 2})
        self.store.writes.ingest([edit.raw])
        return twin


@pytest.fixture
def node(tmp_path):
    served = Node(tmp_path)
    yield served
    served.store.close()


def test_an_edit_between_pages_leaves_the_text_of_the_first(node):
    before = node.store.documents.document_checkout(node.doc.id)
    node.between = lambda: node.store.documents.edit_document(node.doc.id, [("ins", 0, ">> ")])
    shown = doc_pages.read_text(node.call, node.doc.id, page=5)
    assert (shown["version"], shown["text"], shown["weft"]) == before
    assert len(node.pages) == -(-len(TYPED) // 5)  # ceil: one request a page
    assert all(page["at"] == before[2] for page in node.pages[1:])  # named by the weft
    assert node.store.documents.document_text(node.doc.id) == ">> " + TYPED
    assert doc_pages.revision_weft(node.call, node.doc.id) != before[2]  # moved on since


def test_a_proof_between_pages_starts_the_reading_again_from_the_text_without_the_forger(node):
    twin = node.forger("mallory")
    assert node.store.documents.document_text(node.doc.id) == TYPED + "mallory 😈"
    twins = [twin]
    node.between = lambda: twins and node.store.writes.ingest([twins.pop().raw])
    shown = doc_pages.read_text(node.call, node.doc.id, page=5)
    assert shown["text"] == TYPED  # the first read's revision is gone: read the new one
    assert [page["start"] for page in node.pages].count(0) == 2


def test_proofs_at_every_try_end_the_reading_with_the_reason(node):
    twins = [node.forger(f"forger{n}") for n in range(doc_pages.TRIES)]
    node.between = lambda: twins and node.store.writes.ingest([twins.pop().raw])
    with pytest.raises(doc_pages.RevisionLost, match="kept changing"):
        doc_pages.read_text(node.call, node.doc.id, page=5)
    assert not twins  # each try lost its revision to a proof
