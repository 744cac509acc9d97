"""Hypothesis: concurrent editors converge on one document, and every read agrees with the spec.

A small world of 3-5 authors, each with its own FeedStore and keypair. The
first creates a document; then, step by step, an author either edits its
current text with random splices (`edit_document`), publishes a few ops made
by hand (inserts after any atom it sees or one the same message typed,
deletes of visible runs or of its own new atoms), undeletes a run of
backspaces it holds, or syncs from another author's store all of each feed
or a random prefix of it (one `ingest` call, in random order). Finally every
message goes to three fresh stores, in random interleavings of the feeds cut
into random batches (each batch one `ingest` call), and to every author's
store. Then, on every store:

- nothing is set aside, everything is processed, and the document agrees
  with an oracle written from docs/DOCUMENTS.md's model alone (a causal tree of
  atoms, siblings by descending weft1, a depth-first preorder; a revision
  keeps the atoms inside its weft without a live backspace there): the
  frontier's `document_atoms` and `document_text`, and `document_atoms` and
  `document_revision` at every edit's message id, hence identical on all;
- the revision at each edit's weft is the text its author had right after
  writing it (recorded at edit time, and checked then against the splices
  applied to the text before);
- dyeing from an author's previous message to its next edit, when nothing
  of anyone else arrived in between, is exactly that edit: its inserted
  text tagged inserted by the author, right after the atom it was typed
  after, then the text it deleted, tagged removed by the author;
- blame spans concatenate to the text, and each names the message whose
  atoms they are (and that message's author);
- the splice log replayed from the frontier after any version gives the text.
"""

from __future__ import annotations

import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tanglenode.protocol.document import (
    SELF,
    TANGLE,
    AtomRef,
    Delete,
    Insert,
    Undelete,
    edit_content,
    parse_document,
)
from tanglenode.protocol.message import Message, decode_message
from tanglenode.storage import writes as writes_module
from tanglenode.storage.documents.rows import DyeSpan
from tanglenode.storage.feeds.ingest import Outcome
from tanglenode.storage.store import FeedStore
from tests.factories import keypair

MAP_SIZE = 2**24
# Memory-backed scratch where there is one: LMDB's commits are fsyncs, and tmpfs makes them free.
SCRATCH = "/dev/shm" if Path("/dev/shm").is_dir() else None
ALPHABET = "abxy é😀\n"  # one- to four-byte code points, and a newline

Atom = tuple[bytes, int]


class _Clock:
    """A deterministic `time` for the store, so an example's message ids replay exactly."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def time(self) -> float:
        self.now += 0.001
        return self.now


# -- the oracle: docs/DOCUMENTS.md's model, naively ------------------------------------


def doc_wefts(messages: list[Message]) -> dict[bytes, dict[bytes, int]]:
    """Each document message's weft, from its definition (docs/DOCUMENTS.md): its own feed
    at its seq, joined with the weft of its author's last document message before it and,
    for each timeframe entry (F, s), of F's last document message at or below s."""
    by_feed: dict[bytes, list[Message]] = defaultdict(list)
    for message in sorted(messages, key=lambda m: (m.author, m.seq)):
        by_feed[message.author].append(message)
    wefts: dict[bytes, dict[bytes, int]] = {}

    def last(feed: bytes, upto: int) -> Message | None:
        found = [m for m in by_feed.get(feed, []) if m.seq <= upto]
        return found[-1] if found else None

    def weft(message: Message) -> dict[bytes, int]:
        if message.id not in wefts:
            joined = {message.author: message.seq}
            for feed, upto in [(message.author, message.seq - 1), *message.timeframe.items()]:
                before = last(feed, upto)
                if before is not None:
                    for author, seq in weft(before).items():
                        joined[author] = max(joined.get(author, 0), seq)
            wefts[message.id] = joined
        return wefts[message.id]

    for message in messages:
        weft(message)
    return wefts


class Oracle:
    """A document's causal tree built from its messages, read without any index."""

    def __init__(self, doc: bytes, messages: list[Message]) -> None:
        self.root: Atom = (doc, 0)
        self.where: dict[bytes, tuple[bytes, int]] = {}  # message id -> (author, seq)
        self.char: dict[Atom, str] = {}
        self.backspaces: dict[Atom, list[Atom]] = defaultdict(list)  # target -> its backspaces
        children: dict[Atom, list[Atom]] = defaultdict(list)
        wefts = doc_wefts(messages)
        for message in messages:
            self.where[message.id] = (message.author, message.seq)
            if message.id == doc:
                continue
            index = 0
            for op in parse_document(message.content).ops:
                ref = op[0]
                cited = (message.id if ref.msg is None else ref.msg, ref.index)
                if type(op) is Insert:
                    for char in op.text:
                        atom = (message.id, index)
                        children[cited].append(atom)
                        self.char[atom] = char
                        cited, index = atom, index + 1
                else:
                    for offset in range(op.count):
                        self.backspaces[(cited[0], cited[1] + offset)].append((message.id, index))
                        index += 1
        feeds = sorted({author for author, _seq in self.where.values()})

        def weft1(atom: Atom) -> tuple:
            weft = wefts[atom[0]]
            return (tuple(weft.get(feed, 0) for feed in feeds), atom[1])

        self.weave: list[Atom] = []  # text atoms, depth-first preorder
        stack = [self.root]
        while stack:
            atom = stack.pop()
            if atom != self.root:
                self.weave.append(atom)
            stack.extend(sorted(children[atom], key=weft1))  # the greatest weft pops first

    def _inside(self, atom: Atom, weft: dict[bytes, int] | None) -> bool:
        author, seq = self.where[atom[0]]
        return weft is None or weft.get(author, 0) >= seq

    def _shown(self, atom: Atom, weft: dict[bytes, int] | None) -> bool:
        for backspace in self.backspaces.get(atom, ()):
            undone = any(self._inside(u, weft) for u in self.backspaces.get(backspace, ()))
            if self._inside(backspace, weft) and not undone:
                return False
        return self._inside(atom, weft)

    def atoms(self, weft: dict[bytes, int] | None = None) -> list[Atom]:
        return [atom for atom in self.weave if self._shown(atom, weft)]

    def text(self, weft: dict[bytes, int] | None = None) -> str:
        return "".join(self.char[atom] for atom in self.atoms(weft))


# -- what an author did ----------------------------------------------------------------


@dataclass
class Edit:
    """One `edit_document` call (or one undelete) and what its author saw."""

    author: bytes
    messages: list[Message]
    before: str
    after: str
    prev: Message  # the author's message before this call
    splices: list | None  # None: an undelete


def apply_splices(text: str, splices: list) -> str:
    for kind, position, value in splices:
        if kind == "ins":
            text = text[:position] + value + text[position:]
        else:
            text = text[:position] + text[position + value :]
    return text


def expected_dye(before: str, splices: list, author: bytes) -> list[DyeSpan]:
    """The dye of one edit, from its splices alone.

    Each run of new text between two kept characters was typed after the
    first of them, so it comes right after it, before the characters
    deleted between the two (which stay where they were).
    """
    tokens: list[int | str] = list(range(len(before)))  # old position, or a new character
    for kind, position, value in splices:
        if kind == "ins":
            tokens[position:position] = list(value)
        else:
            del tokens[position : position + value]
    kept = [token for token in tokens if type(token) is int]
    runs: dict[int, str] = defaultdict(str)  # kept position before the run (-1: start) -> run
    last = -1
    for token in tokens:
        if type(token) is int:
            last = token
        else:
            runs[last] += token
    atoms: list[tuple[str, bytes | None, bytes | None]] = []
    gaps = [-1, *kept]
    for number, left in enumerate(gaps):
        right = gaps[number + 1] if number + 1 < len(gaps) else len(before)
        if left >= 0:
            atoms.append((before[left], None, None))
        atoms.extend((char, author, None) for char in runs.get(left, ""))
        atoms.extend((before[gone], None, author) for gone in range(left + 1, right))
    spans: list[list] = []
    for char, inserted, removed in atoms:
        if spans and spans[-1][1:] == [inserted, removed]:
            spans[-1][0] += char
        else:
            spans.append([char, inserted, removed])
    return [DyeSpan(*span) for span in spans]


# -- the world ---------------------------------------------------------------------------


def draw_splices(data, text: str) -> list:
    splices: list = []
    length = len(text)
    for _ in range(data.draw(st.integers(1, 3), label="splices")):
        if length and data.draw(st.booleans(), label="delete?"):
            position = data.draw(st.integers(0, length - 1), label="del at")
            count = data.draw(st.integers(1, min(4, length - position)), label="del length")
            splices.append(("del", position, count))
            length -= count
        else:
            position = data.draw(st.integers(0, length), label="ins at")
            run = data.draw(st.text(ALPHABET, min_size=1, max_size=6), label="typed")
            splices.append(("ins", position, run))
            length += len(run)
    return splices


def sync(data, source: FeedStore, target: FeedStore) -> None:
    """The target takes, from the source, all or a prefix of each feed, in one ingest call."""
    raws: list[bytes] = []
    whole = data.draw(st.booleans(), label="whole feeds?")
    for feed in source.feeds.held():
        chain = source.feeds.read_feed_raw(feed.author)
        upto = len(chain) if whole else data.draw(st.integers(0, len(chain)), label="prefix")
        raws.extend(chain[:upto])
    order = data.draw(st.permutations(raws), label="sync order")
    for result in target.writes.ingest(order):
        assert result.outcome in (Outcome.ACCEPTED, Outcome.DUPLICATE), (
            result.reason,
            result.detail,
        )


def undelete(data, store: FeedStore, doc: bytes) -> Message | None:
    """Publish an undel of some backspaces of one delete op this store has woven in."""
    deletes: list[tuple[bytes, int, int]] = []  # (message id, first backspace, count)
    for version in store.documents.document_versions(doc):
        if not version.deleted:
            continue
        index = 0
        for op in parse_document(store.feeds.get(version.msg_id).content).ops:
            count = len(op.text) if type(op) is Insert else op.count
            if type(op) is Delete:
                deletes.append((version.msg_id, index, count))
            index += count
    if not deletes:
        return None
    msg_id, first, count = data.draw(st.sampled_from(deletes), label="undelete of")
    start = data.draw(st.integers(first, first + count - 1), label="undelete from")
    length = data.draw(st.integers(1, first + count - start), label="undelete count")
    content = edit_content([Undelete(AtomRef(msg_id, start), length)])
    return store.writes.publish(content, {TANGLE: doc})


def hand_made(data, store: FeedStore, doc: bytes) -> Message | None:
    """Publish 1-4 ops built by hand, which `edit_document` never makes: inserts after any
    visible atom, the root, or an atom this message typed (several after one atom, too);
    deletes of visible runs, of atoms this message typed, of atoms an earlier op deleted."""
    visible = store.documents.document_atoms(doc)
    ops: list = []
    typed: list[int] = []  # this message's text atoms so far
    atoms = 0
    for _ in range(data.draw(st.integers(1, 4), label="ops")):
        kind = data.draw(st.sampled_from(["ins", "ins", "del", "del own"]), label="op")
        if kind == "ins":
            causes = [AtomRef(doc, 0), *(AtomRef(*atom) for atom in visible)]
            causes.extend(AtomRef(SELF, index) for index in typed)
            cause = data.draw(st.sampled_from(causes), label="after")
            text = data.draw(st.text(ALPHABET, min_size=1, max_size=4), label="text")
            ops.append(Insert(cause, text))
            typed.extend(range(atoms, atoms + len(text)))
            atoms += len(text)
        elif kind == "del" and visible:
            at = data.draw(st.integers(0, len(visible) - 1), label="del at")
            msg_id, index = visible[at]
            run = 1
            while run < 4 and visible[at + run : at + run + 1] == [(msg_id, index + run)]:
                run += 1
            count = data.draw(st.integers(1, run), label="del count")
            ops.append(Delete(AtomRef(msg_id, index), count))
            atoms += count
        elif kind == "del own" and typed:
            ops.append(Delete(AtomRef(SELF, data.draw(st.sampled_from(typed))), 1))
            atoms += 1
    if not ops:
        return None
    return store.writes.publish(edit_content(ops), {TANGLE: doc})


def holds(store: FeedStore, doc: bytes) -> bool:
    return any(info.id == doc for info in store.documents.held())


def write(data, tmp: Path) -> tuple[bytes, list[FeedStore], list[Edit]]:
    """Run the authors' steps; returns the document, the authors' stores and their edits."""
    count = data.draw(st.integers(3, 5), label="authors")
    stores = [
        FeedStore(tmp / f"author{index}", keypair=keypair(f"doc-{index}"), map_size=MAP_SIZE)
        for index in range(count)
    ]
    init = stores[0].documents.create_document("shared")
    doc = init.id
    last: dict[bytes, Message] = {init.author: init}
    edits: list[Edit] = []
    for _step in range(data.draw(st.integers(4, 30), label="steps")):
        number = data.draw(st.integers(0, count - 1), label="who")
        store = stores[number]
        me = store.keypair.public
        action = data.draw(
            st.sampled_from(["edit", "edit", "edit", "ops", "undel", "sync", "sync"])
        )
        if action == "sync" or not holds(store, doc):
            # An author without the document yet syncs from one that has it.
            others = [i for i in range(count) if i != number]
            if action != "sync":
                others = [i for i in others if holds(stores[i], doc)]
            sync(data, stores[data.draw(st.sampled_from(others), label="from")], store)
            continue
        before = store.documents.document_text(doc)
        if action in ("undel", "ops"):
            message = (undelete if action == "undel" else hand_made)(data, store, doc)
            if message is None:
                continue
            assert store.documents.document_set_aside(doc) == []
            published, splices = [message], None
        else:
            splices = draw_splices(data, before)
            published = store.documents.edit_document(doc, splices)
            assert store.documents.document_text(doc) == apply_splices(before, splices)
            if not published:
                assert apply_splices(before, splices) == before
                continue
        assert [m.author for m in published] == [me] * len(published)
        after = store.documents.document_text(doc)
        if me in last:
            edits.append(Edit(me, published, before, after, last[me], splices))
        last[me] = published[-1]
    return doc, stores, edits


def deliver(data, messages: list[Message], store: FeedStore) -> None:
    """The messages in a random interleaving of the feeds, cut into random batches, one
    ingest call each (a feed's messages keep their order: ingest takes a feed's next
    message only after the one before it)."""
    queues: dict[bytes, list[Message]] = defaultdict(list)
    for message in messages:
        queues[message.author].append(message)
    order = data.draw(st.permutations([m.author for m in messages]), label="interleaving")
    arrival = [queues[author].pop(0).raw for author in order]
    cuts = data.draw(st.sets(st.integers(1, len(arrival)), max_size=4), label="cuts")
    bounds = sorted(cuts | {len(arrival)})
    for start, end in zip([0, *bounds], bounds, strict=False):
        for result in store.writes.ingest(arrival[start:end]):
            assert result.outcome is Outcome.ACCEPTED, (result.reason, result.detail)


# -- the checks --------------------------------------------------------------------------


def check_store(store: FeedStore, doc: bytes, oracle: Oracle, messages, heads) -> None:
    """Everything processed and woven in, and every read as the oracle has it."""
    assert store.feeds.processed_frontier() == heads
    assert store.documents.document_set_aside(doc) == []
    versions = store.documents.document_versions(doc)
    assert sorted(v.msg_id for v in versions) == sorted(m.id for m in messages)
    assert store.documents.document_atoms(doc) == oracle.atoms()
    assert store.documents.document_text(doc) == oracle.text()
    assert store.documents.document_snapshot(doc) == (len(versions) - 1, oracle.text())
    all_wefts = doc_wefts(messages)
    by_id = {m.id: m for m in messages}
    woven: dict[bytes, int] = {}  # this store's messages up to each version: its number's text
    for version in versions:
        message = by_id.get(version.msg_id)
        if message is not None:
            woven[message.author] = max(woven.get(message.author, 0), message.seq)
        if version.number == 0:
            continue
        weft = all_wefts[version.msg_id]
        assert store.documents.document_weft(version.msg_id) == weft
        assert store.documents.document_atoms(doc, version.msg_id) == oracle.atoms(weft)
        text = oracle.text(weft)
        assert store.documents.document_revision(doc, version.msg_id) == text
        assert store.documents.document_revision(doc, version.number) == oracle.text(woven)
        assert store.documents.document_revision(doc, weft) == text


def check_blame(store: FeedStore, doc: bytes, at: bytes | None, authors: dict) -> None:
    spans = store.documents.document_blame(doc, at)
    atoms = store.documents.document_atoms(doc, at)
    assert "".join(span.text for span in spans) == store.documents.document_revision(doc, at)
    position = 0
    for span in spans:
        assert span.text
        typed_by = {msg_id for msg_id, _index in atoms[position : position + len(span.text)]}
        assert typed_by == {span.msg_id}
        assert span.author == authors[span.msg_id]
        position += len(span.text)


def check_splice_log(store: FeedStore, doc: bytes) -> None:
    """Replaying the log from the frontier after version k (any k) gives the text."""
    head, entries = store.documents.document_splices(doc, 0)
    versions = store.documents.document_versions(doc)
    assert head == len(versions) - 1
    assert [entry.version for entry in entries] == [v.number for v in versions[1:]]
    assert [entry.msg_id for entry in entries] == [v.msg_id for v in versions[1:]]
    frontier: dict[bytes, int] = {}  # the weft of versions 0..k: processed in order, so closed
    for version in versions:
        message = store.feeds.get(version.msg_id)
        frontier[message.author] = max(frontier.get(message.author, 0), message.seq)
        text = store.documents.document_revision(doc, dict(frontier))
        for entry in entries[version.number :]:
            assert entry.splices is not None
            text = apply_splices(text, entry.splices)
        assert text == store.documents.document_text(doc)


def check_edits(stores: list[FeedStore], doc: bytes, edits: list[Edit]) -> None:
    dyed = 0
    for edit in edits:
        last = edit.messages[-1]
        for store in stores:
            assert store.documents.document_revision(doc, last.id) == edit.after
        # Dyeing from the author's previous message: only when nothing else arrived.
        if edit.splices is None or edit.messages[0].timeframe != edit.prev.timeframe:
            continue
        assert stores[0].documents.document_revision(doc, edit.prev.id) == edit.before
        expected = expected_dye(edit.before, edit.splices, edit.author)
        for store in stores:
            assert store.documents.document_dye(doc, edit.prev.id, last.id) == expected
        dyed += 1
    event(f"edits dyed: {min(dyed, 5)}{'+' if dyed >= 5 else ''}")


def converge(data) -> None:
    with (
        tempfile.TemporaryDirectory(dir=SCRATCH) as tmp,
        mock.patch.object(writes_module, "time", _Clock()),
    ):
        stores: list[FeedStore] = []
        try:
            doc, authors, edits = write(data, Path(tmp))
            stores.extend(authors)
            raws = [raw for s in authors for raw in s.feeds.read_feed_raw(s.keypair.public)]
            messages = [decode_message(raw) for raw in raws]
            heads = {}
            for message in messages:
                heads[message.author] = max(heads.get(message.author, 0), message.seq)
            oracle = Oracle(doc, messages)
            event(f"authors who wrote: {len(heads)}")
            event(f"undeletes or hand-made ops: {any(edit.splices is None for edit in edits)}")
            by_id = doc_wefts(messages)
            wefts = [by_id[m.id] for m in messages]
            concurrent = any(
                b.get(m.author, 0) < m.seq and a.get(n.author, 0) < n.seq
                for m, a in zip(messages, wefts, strict=True)
                for n, b in zip(messages, wefts, strict=True)
            )
            event(f"concurrent edits: {concurrent}")
            event(f"text at the end: {'empty' if not oracle.text() else 'some'}")
            fresh = [FeedStore(Path(tmp) / f"fresh{i}", map_size=MAP_SIZE) for i in range(3)]
            stores.extend(fresh)
            for store in fresh:
                deliver(data, messages, store)
            for store in authors:
                store.writes.ingest(raws)
            everyone = [*fresh, *authors]
            for store in everyone:
                check_store(store, doc, oracle, messages, heads)
            check_edits(everyone, doc, edits)
            by_author = {message.id: message.author for message in messages}
            for at in [None, *(edit.messages[-1].id for edit in edits[-3:])]:
                check_blame(fresh[0], doc, at, by_author)
            check_splice_log(fresh[0], doc)
            check_splice_log(authors[0], doc)
        finally:
            for store in stores:
                store.close()


# A failure's shrinking may take Hypothesis' whole budget (300 s): room to report it.
@pytest.mark.timeout(420)
@given(st.data())
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_concurrent_editors_converge_on_every_store(data):
    converge(data)
