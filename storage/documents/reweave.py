"""Weaving documents again: after a proof, when a key arrives, or for a whole store.

Theory of operation
-------------------
The engine (storage.documents.engine) weaves each message once, as it is
processed. Three events make a document's weave stale, and each is met by
clearing the document's rows and driving the same engine over the messages
again, in the order they were processed, so that the new weave is the one a
node that never saw the event would have built:

- a proof removes messages (`rebuild_after_proofs`): the documents with
  messages past a feed's invalid boundary are rebuilt from the messages
  still held, under their old version numbers, and the edits set aside
  under a removed message are decided again without it;
- a key arrives (`keep_keys`): every document with messages waiting for
  that epoch's key is woven from all it holds, the waiting, the woven and
  the set-aside messages (storage.documents.sealed);
- an exclusion arrives, or a proof removes one (`keep_keys`,
  `rebuild_after_proofs`): every document of the epoch's group that the
  excluded feed wrote in is woven from all it holds, so that its messages
  naming the exclusion are set aside (or no longer) as on a node that held
  it from the start;
- a store predates an index (`weave_again`): every document is rebuilt;
- an erase request brings the skeleton a message waited for, or one that
  is not the skeleton of the content this node wove (`reweave`,
  storage.documents.erased).

A rebuilt document numbers its next version past the last one it had and
logs a `reset`, which tells its subscribers to take a new snapshot.

The weaver works inside the engine's write transaction and through the
engine: it holds no document state of its own. Call `finish` when done.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from tanglenode.protocol.document import TANGLE
from tanglenode.protocol.group_state import Exclusion
from tanglenode.protocol.message import Message
from tanglenode.storage.documents.engine import DocumentEngine
from tanglenode.storage.documents.rows import (
    M_ID,
    M_NEXT_MNO,
    R_AUTHOR,
    R_ID,
    R_SEQ,
    DocumentTables,
    docno_of,
    group_of,
    keys_with,
    read_meta,
    unpack,
)
from tanglenode.storage.documents.sealed import KeysKept
from tanglenode.storage.feeds.layout import U32, feed_key
from tanglenode.storage.feeds.processor import ProcessorTables, processed_index

if TYPE_CHECKING:
    from tanglenode.storage.context import StoreContext


class DocumentWeaver:
    """Weaves documents again through a `DocumentEngine`, inside its write transaction."""

    def __init__(
        self,
        engine: DocumentEngine,
        txn,
        tables: DocumentTables,
        bodies,
        message_ids,
        processor: ProcessorTables,
    ) -> None:
        self.engine = engine
        self._txn = txn
        self._tables = tables
        self._messages = bodies  # storage.feeds.bodies.Bodies: messages by position
        self._message_ids = message_ids
        self._processor = processor  # the processed order

    @classmethod
    def over(cls, txn, ctx: StoreContext) -> DocumentWeaver:
        """A weaver, and its engine, over the open store `ctx` inside write transaction
        `txn`."""
        tables = ctx.tables
        engine = DocumentEngine.over(txn, ctx)
        return cls(
            engine,
            txn,
            ctx.document_tables,
            tables.bodies,
            tables.ids,
            ctx.processor_tables,
        )

    @property
    def txn(self):
        return self._txn

    @property
    def tables(self) -> DocumentTables:
        return self._tables

    @property
    def messages(self):
        """storage.feeds.bodies.Bodies: the messages held, by position."""
        return self._messages

    def finish(self) -> None:
        """Write back what the engine wove."""
        self.engine.finish()

    def reweave(self, root: bytes, also: list[bytes]) -> None:
        """Weave document `root` again from every message of it held, with `also` (which
        waited), in processed order (a skeleton arrived: storage.documents.erased)."""
        self._reweave(root, also)

    def keep_keys(
        self,
        keys: Mapping[bytes, tuple[bytes, bytes]],
        current: Mapping[bytes, bytes | None],
        exclusions: Iterable[Exclusion] = (),
    ) -> KeysKept:
        """Keep epoch keys (epoch -> (group, key)), the epoch we post in per group and the
        groups' valid exclusions, and weave again every document with messages that
        waited for a new key, and every one a newly excluded feed wrote in
        (storage.documents.sealed)."""
        sealed = self.engine.sealed
        new = sealed.add_keys(keys, current)
        waiting: dict[bytes, list[bytes]] = {}
        for epoch in new:
            for root, msg_id in sealed.take(epoch):
                waiting.setdefault(root, []).append(msg_id)
        for root in self._written_by(sealed.add_exclusions(exclusions)):
            waiting.setdefault(root, [])
        for root in sorted(waiting):
            self._reweave(root, waiting[root])
        return KeysKept(new, sorted(waiting))

    def _written_by(self, excluded: Sequence[tuple[bytes, bytes]]) -> list[bytes]:
        """The documents of each (epoch, feed)'s group that the feed wrote in (a message of
        its woven, kept beside the weave, or set aside), and the feed's own `doc/init`s
        set aside (they root no document here, whatever group they name)."""
        txn, tables = self._txn, self._tables
        groups: dict[bytes, set[bytes]] = {}  # group -> feeds excluded from one of its epochs
        for epoch, feed in excluded:
            found = self.engine.sealed.key(epoch)
            if found is not None:
                groups.setdefault(found[0], set()).add(feed)
        if not groups:
            return []
        roots = []
        for key, raw in txn.cursor(db=tables.meta):
            meta = unpack(raw)
            feeds = groups.get(group_of(meta))  # type: ignore[arg-type]  # None: in no group
            if feeds and self._wrote_in(U32.unpack(key)[0], meta[M_ID], feeds):
                roots.append(meta[M_ID])
        everyone = set().union(*groups.values())
        for key in txn.cursor(db=tables.aside).iternext(values=False):
            if key[:32] == key[32:] and self._author_of(bytes(key[32:])) in everyone:
                roots.append(bytes(key[:32]))  # an init set aside under itself
        return roots

    def _author_of(self, msg_id: bytes) -> bytes | None:
        position = self._message_ids.position(self._txn, msg_id)
        return None if position is None else bytes(position[:32])

    def _wrote_in(self, docno: int, root: bytes, feeds: set[bytes]) -> bool:
        txn, tables = self._txn, self._tables
        prefix = U32.pack(docno)
        if any(txn.get(prefix + feed, db=tables.authors) is not None for feed in feeds):
            return True
        for db in (tables.comments, tables.includes):
            cursor = txn.cursor(db=db)
            if cursor.set_range(prefix):
                for key, raw in cursor:
                    if key[:4] != prefix:
                        break
                    if unpack(raw)[0] in feeds:  # a note's row starts with its author
                        return True
        return any(
            self._author_of(bytes(key[32:])) in feeds for key in keys_with(txn, tables.aside, root)
        )

    def rebuild_after_proofs(
        self, invalidated: dict[bytes, int], cut: Sequence[Message] = ()
    ) -> None:
        """Weave again every document that lost messages to a proof (feed -> invalid from).

        Removing a message can only set aside edits that cite its atoms, so
        the document is rebuilt from the messages still held, in the order
        they were processed, under their old version numbers; a `reset`
        entry in the splice log tells subscribers to take a new snapshot.
        Removing an exclusion can only bring back the excluded feed's
        messages that named it: each document of its group that feed wrote
        in is woven again too.
        """
        touched: set[int] = set()
        cursor = self._txn.cursor(db=self._tables.feeds)
        for feed, boundary in sorted(invalidated.items()):
            if not cursor.set_range(feed_key(feed, boundary)):
                continue
            for key, value in cursor:
                if key[:32] != feed:
                    break
                touched.add(U32.unpack(value[:4])[0])
        # An exclusion the proof removed no longer sets anything aside: forgotten first,
        # so the documents rebuilt here are decided without it, and the others woven again.
        excluded = self.engine.sealed.forget_exclusions(message.id for message in cut)
        for docno in sorted(touched):
            self._rebuild(docno)
        self._decide_again(cut)
        for root in self._written_by(excluded):
            if docno_of(self._txn, self._tables, root) not in touched:
                self._reweave(root, [])

    def _decide_again(self, cut: Sequence[Message]) -> None:
        """Forget the `doc-aside` rows of the messages a proof removed, and decide again the
        edits set aside under a removed root: a node that never held those messages has no
        such rows, and decides those edits without them."""
        txn, aside = self._txn, self._tables.aside
        self.engine.sealed.forget(message.id for message in cut)
        again: dict[bytes, None] = {}
        for message in cut:
            link = message.tangles.get(TANGLE)
            root = message.id if link is None or link.root is None else link.root
            txn.delete(root + message.id, db=aside)
            cursor = txn.cursor(db=aside)
            if cursor.set_range(message.id):
                while cursor.key()[:32] == message.id:
                    again[bytes(cursor.key()[32:])] = None
                    if not cursor.delete():
                        break
        for msg_id in again:
            position = self._message_ids.position(txn, msg_id)
            if position is not None:
                self.engine.apply(self._messages.message(txn, bytes(position)))

    def _rebuild(self, docno: int) -> None:
        meta = read_meta(self._txn, self._tables, docno)
        held, comments = self._clear(docno)
        version = meta[M_NEXT_MNO]
        if not held or held[0][0] != 0:  # the doc/init itself is gone: so is the document
            self._txn.delete(meta[M_ID], db=self._tables.index)
            self._txn.delete(U32.pack(docno), db=self._tables.meta)
            for message in [message for _mno, message in held] + comments:
                self.engine.apply(message)  # each is set aside now: its root is held no more
            return
        self._weave_held(docno, [message for _mno, message in held], [m for m, _ in held])
        self.engine.number_past(docno, version)
        for comment in comments:  # each decided again against the text woven again
            self.engine.apply(comment)

    def _weave_held(self, docno: int, messages: list[Message], numbers: list[int]) -> None:
        """Weave a cleared document's `messages` (its init first) under `numbers`."""
        self.engine.apply(messages[0], docno=docno)
        for mno, message in zip(numbers[1:], messages[1:], strict=True):
            self.engine.apply(message, mno)

    def _reweave(self, root: bytes, also: list[bytes]) -> None:
        """Weave document `root` again from every message of it held: the woven ones, the
        ones set aside, and `also` (which waited for a key), in processed order."""
        txn, tables = self._txn, self._tables
        docno = docno_of(txn, tables, root)
        version = None
        messages: dict[bytes, Message] = {}
        if docno is not None:
            version = read_meta(txn, tables, docno)[M_NEXT_MNO]
            woven, comments = self._clear(docno)
            messages.update((m.id, m) for _mno, m in woven)
            messages.update((m.id, m) for m in comments)
            txn.delete(root, db=tables.index)
            txn.delete(U32.pack(docno), db=tables.meta)
        cursor = txn.cursor(db=tables.aside)
        if cursor.set_range(root):
            while cursor.key()[:32] == root:
                also.append(bytes(cursor.key()[32:]))
                if not cursor.delete():
                    break
        for msg_id in also:
            position = self._message_ids.position(txn, msg_id)
            if position is not None and msg_id not in messages:
                messages[msg_id] = self._messages.message(txn, bytes(position))
        order = sorted(messages.values(), key=self._processed_at)
        if version is None or docno is None or not order or order[0].id != root:
            for message in order:
                self.engine.apply(message)
            return
        self._weave_held(docno, order, [0, *range(version, version + len(order) - 1)])
        self.engine.number_past(docno, version + len(order) - 1)

    def _processed_at(self, message: Message) -> int:
        index = processed_index(self._txn, self._processor, message.author, message.seq)
        return -1 if index is None else index

    def _clear(self, docno: int) -> tuple[list[tuple[int, Message]], list[Message]]:
        """Empty document `docno`'s rows but its index and meta; (mno, message) of the
        messages it had woven that are still held, in number order, and its comments
        still held, in processed order."""
        txn, tables = self._txn, self._tables
        self.engine.forget(docno)
        prefix = U32.pack(docno)
        held: list[tuple[int, Message]] = []
        rows = []
        cursor = txn.cursor(db=tables.msgs)
        if cursor.set_range(prefix):
            for key, raw in cursor:
                if key[:4] != prefix:
                    break
                rows.append((bytes(key), bytes(raw)))
        for key, raw in rows:
            record = unpack(raw)
            txn.delete(record[R_ID], db=tables.ids)
            txn.delete(feed_key(record[R_AUTHOR], record[R_SEQ]), db=tables.feeds)
            stored = self._messages.message(txn, feed_key(record[R_AUTHOR], record[R_SEQ]))
            if stored is not None:
                held.append((U32.unpack(key[4:8])[0], stored))
        comments = []  # and inclusions: kept beside the weave, decided after it
        for db in (tables.comments, tables.includes):
            for key in [bytes(key) for key in keys_with(txn, db, prefix)]:
                position = self._message_ids.position(txn, key[4:])
                if position is not None:
                    comments.append(self._messages.message(txn, bytes(position)))
        comments.sort(key=self._processed_at)
        for db in (
            tables.msgs,
            tables.dels,
            tables.undels,
            tables.log,
            tables.nodes,
            tables.pieces,
            tables.yarn,
            tables.sibs,
            tables.authors,
            tables.tips,
            tables.comments,
            tables.includes,
        ):
            cursor = txn.cursor(db=db)
            if cursor.set_range(prefix):
                while cursor.key()[:4] == prefix:
                    if not cursor.delete():
                        break
        return held, comments

    def weave_again(self) -> int:
        """Weave every document again from its messages, as a proof's rebuild does (a store
        whose documents predate the children index: storage.documents.siblings); returns
        how many. Call `finish` afterwards."""
        numbers = [
            U32.unpack(key)[0]
            for key in self._txn.cursor(db=self._tables.meta).iternext(values=False)
        ]
        for docno in numbers:
            self._rebuild(docno)
        return len(numbers)
