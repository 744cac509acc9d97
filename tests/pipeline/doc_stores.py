"""Documents on real stores for the `docs` job's tests: three authors editing concurrently,
deleting, merging; an edit set aside; an empty document; a private one."""

from __future__ import annotations

from tanglenode.protocol.document import TANGLE, AtomRef, Delete, Undelete, edit_content
from tanglenode.protocol.message import Message
from tanglenode.storage.feeds.stored_form import parse_stored
from tanglenode.storage.groups import state as groups
from tanglenode.storage.groups.doc_keys import refresh_document_keys
from tanglenode.storage.store import FeedStore
from tests.factories import keypair

ALICE, BOB, CAROL, DAVE = (
    keypair(f"docs-job-{name}") for name in ("alice", "bob", "carol", "dave")
)
SECRET = "the surprise is on Friday"


def sync(source: FeedStore, target: FeedStore) -> None:
    target.writes.ingest(list(source.feeds.iter_raw()))


def everyone(stores: list[FeedStore]) -> None:
    for source in stores:
        for target in stores:
            if target is not source:
                sync(source, target)


def _first_atom_of(ops: list, kind: str) -> int:
    """The index of the first atom the first op of `kind` introduces, in an edit's ops."""
    at = 0
    for name, _ref, _index, value in ops:
        if name == kind:
            return at
        at += len(value) if name == "ins" else value
    raise AssertionError(f"no {kind} op")


def build_documents(folder) -> tuple[FeedStore, dict[str, bytes], Message]:
    """Alice's store once it holds every document message of the three authors; the
    documents by name: `plan` (three authors, concurrent edits, deletions, an undelete, a
    merge, an edit set aside), `empty` (created, never typed in), `secret` (private to a
    group of Alice and Bob); and Bob's first edit after the merge, which `without_from`
    withholds. The other stores are closed."""
    alice, bob, carol = (
        FeedStore(folder / name, keypair=key, map_size=2**26)
        for name, key in (("alice", ALICE), ("bob", BOB), ("carol", CAROL))
    )
    stores = [alice, bob, carol]
    try:
        plan = alice.documents.create_document("Plan").id
        alice.documents.edit_document(plan, [("ins", 0, "hello world\nsecond line\n")])
        everyone(stores)
        # Concurrent: nobody sees the others' edits until they merge.
        bob.documents.edit_document(plan, [("ins", 5, " there")])
        [cut] = carol.documents.edit_document(plan, [("del", 6, 5), ("ins", 6, "earth")])
        alice.documents.edit_document(plan, [("ins", 12, "first line: "), ("del", 24, 6)])
        everyone(stores)
        # After the merge: Bob deletes across others' text, Carol brings back what she cut
        # (a backspace on her backspaces), Alice types at the end.
        [withheld] = bob.documents.edit_document(plan, [("del", 0, 3)])
        first_backspace = _first_atom_of(cut.content["ops"], "del")
        carol.writes.publish(
            edit_content([Undelete(AtomRef(cut.id, first_backspace + 1), 3)]), {TANGLE: plan}
        )
        alice.documents.edit_document(plan, [("ins", 0, "# ")])
        # Set aside on every node: a delete of the root (wrong-kind).
        carol.writes.publish(edit_content([Delete(AtomRef(plan, 0), 1)]), {TANGLE: plan})
        empty = bob.documents.create_document("Nothing yet").id
        everyone(stores)
        bob.documents.edit_document(plan, [("ins", 2, "Bob: ")])  # after the undelete
        everyone(stores)
        end = len(carol.documents.document_text(plan))
        carol.documents.edit_document(plan, [("ins", end, "-- Carol")])  # names Bob's edits
        everyone(stores)
        club = alice.writes.publish(*groups.create(ALICE, "club")).id
        alice.writes.publish(
            *groups.add(groups.read_group(alice, ALICE, club), ALICE, [BOB.public])
        )
        refresh_document_keys(alice, ALICE)
        secret = alice.documents.create_document("Plans for the surprise", group=club).id
        alice.documents.edit_document(secret, [("ins", 0, SECRET)])
        everyone(stores)
    finally:
        bob.close()
        carol.close()
    return alice, {"plan": plan, "empty": empty, "secret": secret}, withheld


def without_from(source: FeedStore, path, withheld: Message) -> FeedStore:
    """A node that holds every message of `source` but `withheld` and what its author wrote
    after it: the others' later messages that name them wait on it, never processed."""
    store = FeedStore(path, keypair=DAVE, map_size=2**26)
    kept = []
    for raw in source.feeds.iter_raw():
        message = parse_stored(raw)
        if message.author != withheld.author or message.seq < withheld.seq:
            kept.append(raw)
    store.writes.ingest(kept)
    return store
