"""The documents' backlog (storage/documents/backlog.py): a batch heavy with document work
commits after one slice of weaving, the rest is woven a slice a transaction, in processed
order, to the very weave of a store that wove as the messages came."""

from __future__ import annotations

import trio
import trio.testing

from tanglenode.node.service.store_service import StoreService
from tanglenode.protocol.message import author_of
from tanglenode.storage.documents.backlog import SLICE
from tanglenode.storage.feeds.processor import processed_index
from tanglenode.storage.reindex import compare, contents
from tests.factories import keypair

WRITER, OTHER = keypair("backlog-writer"), keypair("backlog-other")


def heavy_document(store) -> bytes:
    """A document whose messages take several slices to weave: each edit a long run."""
    doc = store.documents.create_document("heavy").id
    for number in range(3 * SLICE // 1000):
        text = store.documents.document_text(doc)
        store.documents.edit_document(doc, [("ins", (number * 7) % (len(text) + 1), "ab" * 500)])
    return doc


def test_a_heavy_batch_commits_its_other_messages_and_weaves_the_rest_in_slices(open_store):
    author = open_store("author", keypair=WRITER)
    doc = heavy_document(author)
    other = open_store("other", keypair=OTHER)
    unrelated = other.writes.publish({"type": "post", "text": "not a document"}, None)
    raws = [*author.feeds.iter_raw(), unrelated.raw]
    store = open_store("store")
    store.writes.ingest_prepared(store.writes.prepare(raws), weave=False)
    with store.ctx.read() as txn:  # committed and processed, though the weave is behind
        assert processed_index(txn, store.ctx.processor_tables, OTHER.public, 1) is not None
    waiting = [store.writes.backlog()]
    assert waiting[0] > 0
    assert store.documents.document_text(doc) != author.documents.document_text(doc)
    while waiting[-1]:
        waiting.append(store.writes.weave_backlog())
    assert len(waiting) >= 3  # more than one slice
    assert waiting == sorted(waiting, reverse=True)
    assert store.documents.document_text(doc) == author.documents.document_text(doc)
    assert (
        contents(store.ctx, store.views)["documents"]
        == contents(author.ctx, author.views)["documents"]
    )
    assert compare(store.ctx, store.views, ["documents"]) == []


def test_a_rebuild_weaves_the_backlog_it_finds(open_store):
    author = open_store("author", keypair=WRITER)
    doc = heavy_document(author)
    store = open_store("store")
    store.writes.ingest_prepared(store.writes.prepare(list(author.feeds.iter_raw())), weave=False)
    assert store.writes.backlog()
    assert compare(store.ctx, store.views, ["documents"]) == []  # the backlog is no disagreement
    store.writes.weave_all()
    assert store.documents.document_text(doc) == author.documents.document_text(doc)


async def test_the_node_lets_another_batch_in_between_two_slices(open_store):
    """While the node weaves a heavy batch's backlog, a batch that arrives meanwhile is
    stored and processed before the backlog is done: it waits one slice, not all."""
    author = open_store("author", keypair=WRITER)
    heavy_document(author)
    other = open_store("other", keypair=OTHER)
    unrelated = other.writes.publish({"type": "post", "text": "meanwhile"}, None)
    store = open_store("store")
    service = StoreService(store)  # worker threads, one writer at a time, first come first
    heavy = [raw for raw in author.feeds.iter_raw() if author_of(raw) == WRITER.public]
    seen_backlog: list[int] = []

    def stored(messages) -> None:  # the probe runs as soon as the batch is committed
        if any(message.id == unrelated.id for message in messages):
            seen_backlog.append(store.writes.backlog())

    service.on_stored = stored
    async with trio.open_nursery() as nursery:
        nursery.start_soon(service.ingest, heavy)
        await trio.testing.wait_all_tasks_blocked()  # the heavy batch is in the writer
        nursery.start_soon(service.ingest, [unrelated.raw])
    assert seen_backlog and seen_backlog[0] > 0  # it went in while the backlog was woven
    assert store.writes.backlog() == 0
    assert (
        contents(store.ctx, store.views)["documents"]
        == contents(author.ctx, author.views)["documents"]
    )
