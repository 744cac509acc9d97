"""Each atom's children indexed in weave order (storage/documents/siblings.py): a crowd of
concurrent siblings, more than a row of the index holds, lands in the sibling rule's order
whatever order it arrives in; and a store woven before the index weaves its documents again."""

from __future__ import annotations

import random

import lmdb

from tanglenode.protocol.document import TANGLE, AtomRef, Insert, edit_content, init_content
from tanglenode.protocol.identity import Keypair
from tanglenode.protocol.message import ROOT_LINK, TangleLink, sign_message
from tanglenode.storage.documents.siblings import CHUNK, WOVEN
from tanglenode.storage.feeds.layout import MAX_NAMED_DATABASES
from tanglenode.storage.store import FeedStore
from tests.factories import keypair

CROWD = CHUNK * 2 + 45  # the index's rows split twice


def signed(author: Keypair, content, tangles, timeframe):
    return sign_message(
        author,
        seq=1,
        prev=None,
        timestamp=1_700_000_000_000,
        timeframe=timeframe,
        tangles=tangles,
        content=content,
    )


def crowd(count: int):
    """A doc/init, and `count` authors each typing one character after its root, none aware
    of another; the text the sibling rule gives them (ascending author key: with wefts that
    differ only in their own feeds, the lower key's weft is the greater)."""
    creator = keypair("crowd-creator")
    init = signed(creator, init_content("crowd"), {TANGLE: ROOT_LINK}, {})
    link = {TANGLE: TangleLink(init.id, (init.id,))}
    edits = []
    for number in range(count):
        author = keypair(f"crowd-{number}")
        char = chr(0x4E00 + number)
        content = edit_content([Insert(AtomRef(init.id, 0), char)])
        edits.append(signed(author, content, link, {creator.public: (1, init.id[:16])}))
    expected = "".join(
        message.content["ops"][0][3] for message in sorted(edits, key=lambda m: m.author)
    )
    return init, edits, expected


def test_a_crowd_lands_in_the_rule_order_whatever_the_arrival_order(tmp_path):
    init, edits, expected = crowd(CROWD)
    texts = set()
    for seed in range(3):
        order = random.Random(seed).sample(edits, len(edits))
        with FeedStore(tmp_path / f"store{seed}", keypair=keypair("crowd-reader")) as store:
            store.writes.ingest([init.raw])
            for start in range(0, len(order), 37):  # batches of every size
                store.writes.ingest([m.raw for m in order[start : start + 37]])
            texts.add(store.documents.document_text(init.id))
    assert texts == {expected}


def reopened_after(path, change) -> None:
    """Change the store's `doc-sibs` as another build would have left it (`change(txn, db)`)."""
    env = lmdb.open(str(path), max_dbs=MAX_NAMED_DATABASES)
    with env.begin(write=True) as txn:
        change(txn, env.open_db(b"doc-sibs", txn=txn))
    env.close()


def test_a_store_woven_before_the_index_weaves_its_documents_again(tmp_path):
    init, edits, expected = crowd(40)
    path = tmp_path / "old"
    with FeedStore(path, keypair=keypair("crowd-reader")) as store:
        store.writes.ingest([init.raw] + [m.raw for m in edits[:30]])
    reopened_after(path, lambda txn, db: txn.drop(db, delete=False))  # no index at all
    with FeedStore(path, keypair=keypair("crowd-reader")) as store:
        store.writes.ingest([m.raw for m in edits[30:]])
        assert store.documents.document_text(init.id) == expected


def test_a_store_an_older_build_wove_into_is_woven_again_not_trusted(tmp_path):
    """An older build weaves without keeping the index: its rows go stale while the count
    of messages woven moves past the one the index kept."""
    init, edits, expected = crowd(40)
    path = tmp_path / "rolled-back"
    with FeedStore(path, keypair=keypair("crowd-reader")) as store:
        store.writes.ingest([init.raw] + [m.raw for m in edits[:30]])

    def older_build_wove_more(txn, db):
        for key in [k for k in txn.cursor(db=db).iternext(values=False) if k != WOVEN]:
            txn.delete(key, db=db)  # rows that miss what it wove (here: all of them)
        kept = int.from_bytes(txn.get(WOVEN, db=db), "big")
        txn.put(WOVEN, (kept - 1).to_bytes(8, "big"), db=db)  # and the count it never moved

    reopened_after(path, older_build_wove_more)
    with FeedStore(path, keypair=keypair("crowd-reader")) as store:
        store.writes.ingest([m.raw for m in edits[30:]])
        assert store.documents.document_text(init.id) == expected
