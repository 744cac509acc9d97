"""Edits from a base (docs/DOCUMENTS.md, "Edits from a base"): an edit made against an older
revision lands where it was made, and what others did since stays."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tanglenode.storage.store import FeedStore
from tests.factories import keypair


def sync(source: FeedStore, target: FeedStore) -> None:
    target.writes.ingest(list(source.feeds.iter_raw()))


def test_an_edit_from_the_revision_read_keeps_what_another_wrote_since(open_store):
    alice = open_store("alice", keypair=keypair("base-alice"))
    bob = open_store("bob", keypair=keypair("base-bob"))
    doc = alice.documents.create_document("notes").id
    alice.documents.edit_document(doc, [("ins", 0, "We meet at noon.\n")])
    sync(alice, bob)
    _version, read, base = bob.documents.document_checkout(doc)  # `doc show --out bob.txt`
    alice.documents.edit_document(doc, [("ins", 0, "ALICE WAS HERE. ")])
    sync(alice, bob)
    mine = read.replace("noon", "one") + "Bring tea.\n"  # bob edits his stale copy
    splices = [("del", 11, 4), ("ins", 11, "one"), ("ins", len(read) - 1, "Bring tea.\n")]
    made = bob.documents.edit_document(doc, splices, base)
    assert bob.documents.document_text(doc) == "ALICE WAS HERE. We meet at one.\nBring tea.\n"
    after = dict(base) | {bob.keypair.public: made[-1].seq}
    assert bob.documents.document_revision(doc, after) == mine  # the file, exactly
    sync(bob, alice)
    assert alice.documents.document_text(doc) == bob.documents.document_text(doc)


def test_a_base_is_a_weft_a_message_id_or_this_nodes_version_number(open_store):
    alice = open_store("alice", keypair=keypair("base-alice"))
    doc = alice.documents.create_document("notes").id
    [first] = alice.documents.edit_document(doc, [("ins", 0, "abc")])
    alice.documents.edit_document(doc, [("ins", 3, "def")])
    for base in (first.id, 1, alice.documents.document_checkout(doc, first.id)[2]):
        assert alice.documents.document_checkout(doc, base)[1] == "abc"
    base = alice.documents.document_checkout(doc, first.id)[2]
    [made] = alice.documents.edit_document(doc, [("ins", 0, "X")], first.id)
    assert alice.documents.document_text(doc) == "Xabcdef"
    # No weft names "Xabc": alice's own "def" came between the base and the edit.
    assert alice.documents.weft_after(doc, base, [made]) is None


def test_the_revision_an_edit_left_is_named_by_its_base_and_its_messages(open_store):
    alice = open_store("alice", keypair=keypair("base-alice"))
    bob = open_store("bob", keypair=keypair("base-bob"))
    doc = alice.documents.create_document("notes").id
    alice.documents.edit_document(doc, [("ins", 0, "abc")])
    sync(alice, bob)
    base = bob.documents.document_checkout(doc)[2]
    alice.documents.edit_document(doc, [("ins", 3, "def")])
    sync(alice, bob)
    made = bob.documents.edit_document(doc, [("ins", 0, "X")], base)
    after = bob.documents.weft_after(doc, base, made)
    assert after == base | {bob.keypair.public: made[-1].seq}
    assert bob.documents.document_revision(doc, after) == "Xabc"  # bob's text, not alice's


# -- random concurrent edits from random older revisions (Hypothesis) --------------------

AUTHORS = ("ann", "ben", "cy")


@st.composite
def sessions(draw):
    """Steps: (author, how far back its base is, a splice as fractions of the base text),
    and now and then a sync from one store to another."""
    steps = []
    for _ in range(draw(st.integers(3, 14))):
        if draw(st.integers(0, 3)) == 0:
            steps.append(("sync", draw(st.sampled_from(AUTHORS)), draw(st.sampled_from(AUTHORS))))
        else:
            steps.append(
                (
                    "edit",
                    draw(st.sampled_from(AUTHORS)),
                    draw(st.integers(0, 3)),  # bases back in the author's own reading
                    draw(st.floats(0, 1)),
                    draw(st.floats(0, 1)),
                    draw(st.booleans()),  # delete a stretch too
                )
            )
    return steps


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=sessions())
def test_edits_from_older_revisions_converge_and_lose_no_ones_text(tmp_path_factory, steps):
    path = tmp_path_factory.mktemp("bases")
    stores = {name: FeedStore(path / name, keypair=keypair(f"base-{name}")) for name in AUTHORS}
    try:
        doc = stores["ann"].documents.create_document("shared").id
        for name in AUTHORS[1:]:
            sync(stores["ann"], stores[name])
        seen = {name: [stores[name].documents.document_checkout(doc)] for name in AUTHORS}
        tokens: dict[str, bool] = {}  # each inserted token -> whether a delete touched it
        counter = itertools.count()
        for step in steps:
            if step[0] == "sync":
                _kind, source, target = step
                sync(stores[source], stores[target])
                seen[target].append(stores[target].documents.document_checkout(doc))
                continue
            _kind, name, back, where, length, delete = step
            store = stores[name]
            _version, text, base = seen[name][max(0, len(seen[name]) - 1 - back)]
            token = f"<{name}{next(counter)}>"
            at = round(where * len(text))
            splices = [("ins", at, token)]
            for other in tokens:  # typed inside a token: the token is split, not lost
                start = text.find(other)
                if start != -1 and start < at < start + len(other):
                    tokens[other] = True
            if delete and len(text) > at:
                gone = max(1, round(length * (len(text) - at)) // 2)
                splices = [("del", at, gone), ("ins", at, token)]
                for other in tokens:  # a token the author saw and cut into is no longer promised
                    start = text.find(other)
                    if start != -1 and start < at + gone and at < start + len(other):
                        tokens[other] = True
            store.documents.edit_document(doc, splices, base)
            tokens[token] = False
            seen[name].append(store.documents.document_checkout(doc))
        for source, target in itertools.permutations(AUTHORS, 2):
            sync(stores[source], stores[target])
        texts = {store.documents.document_text(doc) for store in stores.values()}
        assert len(texts) == 1  # converged
        [final] = texts
        for token, touched in tokens.items():
            assert touched or token in final, (token, final)
    finally:
        for store in stores.values():
            store.close()


def test_two_nodes_given_one_version_print_one_text(open_store):
    """Concurrent edits woven in two orders: the local numbers differ, an id or a weft
    names the same text on both."""
    alice = open_store("alice", keypair=keypair("base-alice"))
    bob = open_store("bob", keypair=keypair("base-bob"))
    doc = alice.documents.create_document("notes").id
    alice.documents.edit_document(doc, [("ins", 0, "middle")])
    sync(alice, bob)
    [theirs] = alice.documents.edit_document(doc, [("ins", 0, "alice ")])
    [ours] = bob.documents.edit_document(doc, [("ins", 6, " bob")])
    sync(alice, bob)
    sync(bob, alice)
    assert alice.documents.document_revision(doc, 2) != bob.documents.document_revision(doc, 2)
    for name in (theirs.id, ours.id, alice.documents.document_checkout(doc)[2]):
        assert alice.documents.document_revision(doc, name) == bob.documents.document_revision(
            doc, name
        )
    assert alice.documents.document_checkout(doc)[2] == bob.documents.document_checkout(doc)[2]


def test_a_base_this_node_cannot_read_as_named_is_refused(open_store):
    import pytest

    from tanglenode.storage.errors import UnknownDocument

    alice = open_store("alice", keypair=keypair("base-alice"))
    bob = open_store("bob", keypair=keypair("base-bob"))
    doc = alice.documents.create_document("notes").id
    other = alice.documents.create_document("other").id
    [elsewhere] = alice.documents.edit_document(other, [("ins", 0, "zzz")])
    alice.documents.edit_document(doc, [("ins", 0, "abc")])
    sync(alice, bob)
    alice.documents.edit_document(doc, [("ins", 3, "DEF")])
    ahead = alice.documents.document_checkout(doc)[2]  # names alice's edit bob lacks
    with pytest.raises(UnknownDocument, match="not woven"):
        bob.documents.edit_document(doc, [("ins", 6, "!")], ahead)
    with pytest.raises(UnknownDocument, match="another document"):
        alice.documents.edit_document(doc, [("ins", 0, "!")], elsewhere.id)
    for version in (99, 2**32, 2**40):
        with pytest.raises(UnknownDocument, match="no version"):
            alice.documents.document_checkout(doc, version)
