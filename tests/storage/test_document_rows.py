"""A document's authors and woven tips are rows (`doc-authors`, `doc-tips`), never lists read
whole; a meta written before those tables holds them, and is read and moved alike."""

from __future__ import annotations

from tanglenode.storage.documents.rows import (
    M_TIPS,
    M_YARNS,
    docno_of,
    frontier,
    pack,
    read_meta,
    woven_tips,
)
from tanglenode.storage.feeds.layout import U32
from tests.factories import keypair

ALICE, BOB = keypair("rows-alice"), keypair("rows-bob")


def as_written_before(store, doc: bytes) -> None:
    """Put the document's authors and tips back in its meta, as an older build kept them."""
    tables = store.ctx.document_tables
    with store.ctx.env.begin(write=True) as txn:
        docno = docno_of(txn, tables, doc)
        meta = read_meta(txn, tables, docno)
        meta[M_YARNS] = frontier(txn, tables, docno, meta)
        meta[M_TIPS] = woven_tips(txn, tables, doc)
        for db in (tables.authors, tables.tips):
            cursor = txn.cursor(db=db)
            if cursor.set_range(U32.pack(docno)):
                while cursor.key()[:4] == U32.pack(docno):
                    if not cursor.delete():
                        break
        txn.put(U32.pack(docno), pack(meta), db=tables.meta)


def test_a_meta_of_an_older_build_reads_and_moves_to_the_rows(open_store):
    alice = open_store("alice", keypair=ALICE)
    bob = open_store("bob", keypair=BOB)
    doc = alice.documents.create_document("t").id
    alice.documents.edit_document(doc, [("ins", 0, "hello")])
    bob.writes.ingest(list(alice.feeds.iter_raw()))
    bob.documents.edit_document(doc, [("ins", 5, " bob")])
    alice.documents.edit_document(doc, [("ins", 0, ">")])  # concurrent with bob's: two tips
    bob.writes.ingest(list(alice.feeds.iter_raw()))
    before = (bob.documents.base_weft(doc), woven_tips_of(bob, doc))
    assert len(before[1]) == 2
    as_written_before(bob, doc)
    assert (bob.documents.base_weft(doc), woven_tips_of(bob, doc)) == before  # read alike
    [edit] = bob.documents.edit_document(doc, [("ins", 0, "!")])  # moves them to the rows
    assert edit.tangles["doc"].previous == tuple(before[1])
    tables = bob.ctx.document_tables
    with bob.ctx.read() as txn:
        meta = read_meta(txn, tables, docno_of(txn, tables, doc))
        assert (meta[M_YARNS], meta[M_TIPS]) == ({}, [])
    assert woven_tips_of(bob, doc) == [edit.id]
    assert bob.documents.base_weft(doc) == before[0] | {BOB.public: edit.seq}
    assert bob.documents.document_text(doc) == "!>hello bob"


def woven_tips_of(store, doc: bytes) -> list[bytes]:
    with store.ctx.read() as txn:
        return woven_tips(txn, store.ctx.document_tables, doc)
