"""Each atom's children indexed in weave order (storage/documents/siblings.py): a crowd of
concurrent siblings, more than a row of the index holds, lands in the sibling rule's order
whatever order it arrives in; and a store woven before the index weaves its documents again."""

from __future__ import annotations

import random

import lmdb

from tanglenode.protocol.document import TANGLE, AtomRef, Insert, edit_content, init_content
from tanglenode.protocol.identity import Keypair
from tanglenode.protocol.message import ROOT_LINK, TangleLink, sign_message
from tanglenode.storage.documents.siblings import CHUNK, MARKER
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


def test_a_store_woven_before_the_index_weaves_its_documents_again(tmp_path):
    init, edits, expected = crowd(40)
    path = tmp_path / "old"
    with FeedStore(path, keypair=keypair("crowd-reader")) as store:
        store.writes.ingest([init.raw] + [m.raw for m in edits[:30]])
    env = lmdb.open(str(path), max_dbs=MAX_NAMED_DATABASES)  # as the build before the index
    with env.begin(write=True) as txn:
        txn.drop(env.open_db(b"doc-sibs", txn=txn), delete=False)
        txn.delete(MARKER, db=env.open_db(b"meta", txn=txn))
    env.close()
    with FeedStore(path, keypair=keypair("crowd-reader")) as store:
        store.writes.ingest([m.raw for m in edits[30:]])
        assert store.documents.document_text(init.id) == expected
