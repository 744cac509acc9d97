"""The document engine's write path: edits woven in as they are processed (docs/DOCUMENTS.md).

Theory of operation
-------------------
A document message is applied when the causal processor processes it,
inside the transaction that stored it, so the weave commits with the
messages.

An edit's *weft* is read through its timeframe, whose entries are bound to
messages by their tags: its own feed at its own seq, joined with the weft
of its author's last message woven into the document before it and, for
each timeframe entry (feed F, seq s), the weft of F's last message woven
into the document at or below s (`doc-yarn` finds it). Everything inside
a weft was processed, and woven, before the edit on every node, whatever
the delivery: whether an edit is valid therefore depends only on its own
content and on messages every node processed before it, and every node
sets aside exactly the same edits. Naming a message a proof later removes
costs only what was known through it alone. The weft is stored with the
edit's record; the document's *woven tips* (woven messages no woven
message names in `previous`) are kept in its meta for our own edits to
name, whose timeframes name the feeds of the root, of every message they
cite and of those tips (storage.feeds.timeframe), so their wefts hold all they
build on.

An edit is checked whole before anything is written: every atom it cites
must belong to the same document, lie inside the edit's weft, exist, and
be of the right kind (an insert follows a text atom or the root, a delete
names text atoms, an undelete names backspaces). Then its ops are applied
in order:

- *insert*: the run is placed after its cause, past every sibling block
  that sorts before it (the sibling rule, docs/DOCUMENTS.md "The weave and
  the sibling rule": siblings by descending weft, compared as weft1; of one
  message, the higher index first). A sibling's causal block is skipped by
  walking its pieces while each next piece's cause lies inside the block
  (the lemma of docs/DOCUMENTS.md, "Causal blocks"). The common case, a
  cause with no later sibling, costs one seek.
- *delete*: the named atoms' pieces are cut to the range and hidden.
- *undelete*: each backspace's target is shown again once none of its
  backspaces is live.

Backspaces are not pieces: they are rows of `doc-dels` (target message and
index -> backspace message and index, count) and `doc-undels`, which is all
a revision at an older weft needs. Each applied edit appends its frontier
splices (`ins pos text`, `del pos len`) to `doc-log` under its version, the
message's number in the document.

A private document's messages are opened first (storage.documents.sealed);
one this node cannot open yet waits, and its document is woven again from
all it holds when the key arrives (storage.documents.reweave).

The tables are `storage.documents.rows`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tanglenode.protocol.document import (
    COMMENT,
    EDIT,
    INCLUDE,
    INIT,
    TANGLE,
    AtomRef,
    Delete,
    DocComment,
    DocEdit,
    DocInclude,
    DocInit,
    DocReason,
    DocumentError,
    Insert,
    Undelete,
    is_document,
    parse_document,
    parse_skeleton,
)
from tanglenode.protocol.group_state import excluded_in_past
from tanglenode.protocol.identity import message_text
from tanglenode.protocol.limits import DEFAULT_LIMITS
from tanglenode.protocol.message import Message
from tanglenode.storage.documents.backlog import MESSAGE_COST
from tanglenode.storage.documents.notes import Notes
from tanglenode.storage.documents.rows import (
    BACKSPACE,
    M_ID,
    M_NEXT_MNO,
    M_NEXT_NODE,
    M_ROOT_NODE,
    M_TIPS,
    M_TITLE,
    M_YARNS,
    R_SEGMENTS,
    ROOT,
    ROOT_SYMBOL,
    TEXT_ATOM,
    UNBACKSPACE,
    DocumentTables,
    Weft,
    backspaces_of,
    docno_of,
    group_of,
    kept_weave,
    keys_with,
    move_meta_rows,
    open_weave,
    pack,
    read_meta,
    rows_of,
    segment_at,
    segment_kinds,
    stored_record,
    undeletes_of,
    unpack,
    weft_greater,
)
from tanglenode.storage.documents.sealed import SealedMessages, Waiting, is_sealed
from tanglenode.storage.documents.siblings import SiblingIndex, mark_current
from tanglenode.storage.documents.weave import (
    CAUSE_INDEX,
    CAUSE_MNO,
    ERASED_PIECE,
    FLAGS,
    MNO,
    START,
    TEXT,
    VISIBLE,
    Weave,
)
from tanglenode.storage.documents.wefts import DocWefts, covers, inside
from tanglenode.storage.feeds.layout import U32, U64, feed_key

if TYPE_CHECKING:
    from tanglenode.storage.context import StoreContext

_KIND_OF_OP = {Insert: TEXT_ATOM, Delete: BACKSPACE, Undelete: UNBACKSPACE}


class _Doc:
    """One document's state inside an engine's transaction."""

    __slots__ = ("docno", "meta", "siblings", "weave", "wefts")

    def __init__(
        self, docno: int, meta: list, weave: Weave, wefts: DocWefts, siblings: SiblingIndex
    ) -> None:
        self.docno = docno
        self.meta = meta
        self.weave = weave
        self.wefts = wefts
        self.siblings = siblings


class DocumentEngine:
    """Applies processed document messages inside one write transaction; `finish` writes back."""

    def __init__(
        self,
        txn,
        tables: DocumentTables,
        bodies,
        message_ids,
        max_depth: int = DEFAULT_LIMITS.max_content_depth,
    ) -> None:
        self._txn = txn
        self._tables = tables
        self._messages = bodies  # storage.feeds.bodies.Bodies: messages by position
        self._message_ids = message_ids
        self.sealed = SealedMessages(txn, tables, max_depth)
        self._docs: dict[int, _Doc] = {}
        self._notes = Notes(self, txn, tables, message_ids)

    @classmethod
    def over(cls, txn, ctx: StoreContext) -> DocumentEngine:
        """An engine over the open store `ctx`, inside write transaction `txn`."""
        tables = ctx.tables
        return cls(
            txn,
            ctx.document_tables,
            tables.bodies,
            tables.ids,
            ctx.limits.max_content_depth,
        )

    # -- entry points ----------------------------------------------------------

    def apply(self, message: Message, mno: int | None = None, docno: int | None = None) -> int:
        """Weave in `message` if it is a document message (else do nothing); the work it
        took (storage.documents.backlog: its atoms, and `MESSAGE_COST`; 0 if none).

        `mno` re-applies a message under the number it had, and `docno` an
        init under its document's number (see `_rebuild`).
        """
        content = message.content
        link = message.tangles.get(TANGLE)
        erased = False
        if link is not None:  # an erased message is woven from its skeleton (erased.py)
            kept = kept_weave(self._txn, self._tables, message.id)
            if kept is not None:  # its weave alone says what it is; none: no document's
                content, erased = kept[1], True
                if content is None:
                    return 0
            elif not message.has_content:  # header alone, its skeleton not yet here: wait
                root = message.id if link.root is None else link.root
                self.sealed.wait(message.id, root, message.id)
                return MESSAGE_COST
        sealed = link is not None and is_sealed(content)
        if not sealed and not erased and not is_document(content):
            return 0
        cost = MESSAGE_COST
        root = message.id if link is None or link.root is None else link.root
        try:
            group = None
            if sealed:
                content, group = self._unseal(message, root, content)
            parsed = parse_skeleton(content) if erased else parse_document(content)
            cost += 0 if isinstance(parsed, DocInit) else parsed.atoms
            if isinstance(parsed, DocInit):
                if link is None or link.root is not None:
                    raise DocumentError(
                        DocReason.MALFORMED, f"a {INIT} roots its own {TANGLE!r} tangle"
                    )
                self._create(message, parsed, docno, group)
            elif isinstance(parsed, DocComment | DocInclude):
                if link is None or link.root is None:
                    raise DocumentError(
                        DocReason.MALFORMED, f"a {COMMENT} or {INCLUDE} is in a {TANGLE!r} tangle"
                    )
                self._notes.keep(message, root, parsed, group)
            else:
                if link is None or link.root is None:
                    raise DocumentError(
                        DocReason.MALFORMED, f"a {EDIT} belongs to a {TANGLE!r} tangle"
                    )
                self._edit(message, root, parsed, mno, group, erased)
        except Waiting as waiting:
            self.sealed.wait(waiting.epoch, root, message.id)
        except DocumentError as error:
            self._txn.put(
                root + message.id, pack([str(error.reason), error.detail]), db=self._tables.aside
            )
        return cost

    def _unseal(self, message: Message, root: bytes, content: Any) -> tuple[Any, bytes]:
        """The content of a sealed document message and its group (storage.documents.sealed).

        What needs no key is decided first, alike on every node: a message whose
        timeframe does not cover its epoch's `group/init` (so that every node
        holds it, and reads which group it joins), an edit whose weft does not
        reach its document, an edit sealed into a public document or in
        another group's epoch are set aside whether or not this node could
        open them. An edit of a document whose init waits for a key waits for
        that key too, and is decided when it opens. Once it opens, a message
        whose author had processed its own exclusion from the epoch is set
        aside (`_check_not_excluded`)."""
        envelope = self.sealed.envelope(content)
        epoch = envelope.epoch
        if not covers(self._txn, self._message_ids, message, epoch):
            raise DocumentError(
                DocReason.OUTSIDE_WEFT, "the epoch's group/init is outside the message's timeframe"
            )
        claimed = self._epoch_group(epoch)
        if root != message.id:
            if not covers(self._txn, self._message_ids, message, root):
                raise DocumentError(
                    DocReason.OUTSIDE_WEFT, "the doc/init is outside the edit's weft"
                )
            docno = docno_of(self._txn, self._tables, root)
            if docno is None:
                waiting = self.sealed.waiting_on(root)
                if waiting is not None:
                    raise Waiting(waiting)
            group = None if docno is None else group_of(read_meta(self._txn, self._tables, docno))
            if docno is not None and group is None:
                raise DocumentError(DocReason.WRONG_GROUP, "a public document takes no sealed edit")
            if group is not None and claimed != group:
                raise DocumentError(DocReason.WRONG_GROUP, "sealed in another group's epoch")
        content, group = self.sealed.open(envelope)
        if group != claimed:  # a key handed in for another group than its init joins
            raise DocumentError(DocReason.WRONG_GROUP, "its epoch is not of the group it names")
        self._check_not_excluded(message, epoch)
        if not is_document(content):
            raise DocumentError(DocReason.MALFORMED, "the box holds no doc/init or doc/edit")
        return content, group

    def _check_not_excluded(self, message: Message, epoch: bytes) -> None:
        """Set aside (`excluded`) a message sealed in `epoch` whose timeframe names a valid
        exclusion of its author from that epoch: its author had processed its own
        exclusion, and a group post of its in that position would be invalid
        (protocol.group_state.excluded_in_past, the one rule for both). What the
        timeframe names was processed before the message on every node, so the answer
        depends only on the message and the exclusions handed in with the keys
        (storage.documents.sealed); one handed in later weaves the document again."""
        exclusion = excluded_in_past(
            message.author,
            epoch,
            self.sealed.exclusions_of(epoch, message.author),
            lambda excluding: covers(self._txn, self._message_ids, message, excluding),
        )
        if exclusion is not None:
            raise DocumentError(
                DocReason.EXCLUDED,
                f"its timeframe names {message_text(exclusion.id)}, which excluded its author "
                "from the epoch it is sealed in",
            )

    def _epoch_group(self, epoch: bytes) -> bytes | None:
        """The group whose tangle the epoch's `group/init` joins (held: the caller checked
        that the message's timeframe covers it); None if it joins none."""
        position = self._message_ids.position(self._txn, epoch)
        link = self._messages.message(self._txn, bytes(position)).tangles.get("group")
        if link is None:
            return None
        return epoch if link.root is None else link.root

    def forget(self, docno: int) -> None:
        """Drop what this engine holds of document `docno`, whose rows are being cleared
        (storage.documents.reweave)."""
        self._docs.pop(docno, None)

    def erase(self, msg_id: bytes) -> bool:
        """Take the characters of woven message `msg_id` out of its document, its atoms
        left in their places (storage.documents.erased); whether it was woven.

        Its pieces hold `ERASED` for each atom and are hidden for good (the text
        loses what of them it showed: one `del` entry in the splice log, under a new
        version), and every splice-log entry that could hold its characters (its own
        and those of the undeletes that showed them again) becomes a `reset`, so no
        row keeps them and a subscriber from before reads a new snapshot. An init
        loses its title."""
        key = self._txn.get(msg_id, db=self._tables.ids)
        if key is None:
            return False
        docno, mno = U32.unpack(key[:4])[0], U32.unpack(key[4:8])[0]
        doc = self.document(read_meta(self._txn, self._tables, docno)[M_ID])
        if mno == 0:
            doc.meta[M_TITLE] = ""
            return True
        weave, prefix = doc.weave, U32.pack(docno) + U32.pack(mno)
        starts = [U32.unpack(k[8:12])[0] for k in keys_with(self._txn, self._tables.pieces, prefix)]
        splices: list = []
        changed = False
        for start in starts:
            leaf, slot = weave.locate(mno, start)
            piece = weave.piece(leaf, slot)
            if piece[FLAGS] & ERASED_PIECE:
                continue
            changed = True
            position = weave.visible_before(leaf, slot)
            shown = weave.erase(leaf, slot)
            if shown:
                _splice(splices, "del", position, shown)
        if not changed:
            return True
        versions = {mno}  # the log entries that may hold its characters
        for _first, _count, bs_mno, _index in rows_of(self._txn, self._tables.dels, docno, mno):
            for _f, _c, undo_mno, _i in rows_of(self._txn, self._tables.undels, docno, bs_mno):
                versions.add(undo_mno)
        log_prefix = U32.pack(docno)
        for version in sorted(versions):
            log_key = log_prefix + U64.pack(version)
            entry = self._txn.get(log_key, db=self._tables.log)
            if entry is not None:
                self._txn.put(log_key, pack([unpack(entry)[0], None]), db=self._tables.log)
        version = doc.meta[M_NEXT_MNO]
        doc.meta[M_NEXT_MNO] = version + 1
        self._log(docno, version, msg_id, splices)
        return True

    def number_past(self, docno: int, version: int) -> None:
        """Number the document's next version past `version`, where a `reset` tells its
        subscribers to take a new snapshot (a document woven again)."""
        doc = self._docs.get(docno)
        if doc is None:  # its init no longer opens or weaves: nothing to number
            return
        doc.meta[M_NEXT_MNO] = version + 1
        self._log(docno, version, None, None)

    def finish(self) -> None:
        if self._docs:  # the children index now knows every message woven
            mark_current(self._txn, self._tables.sibs, self._tables.msgs)
        for doc in self._docs.values():
            doc.weave.flush()
            doc.meta[M_ROOT_NODE] = doc.weave.root
            doc.meta[M_NEXT_NODE] = doc.weave.next_node
            self._txn.put(U32.pack(doc.docno), pack(doc.meta), db=self._tables.meta)

    # -- documents -------------------------------------------------------------

    def _create(
        self, message: Message, init: DocInit, docno: int | None = None, group: bytes | None = None
    ) -> None:
        txn, tables = self._txn, self._tables
        if docno is None:
            cursor = txn.cursor(db=tables.meta)
            docno = U32.unpack(cursor.key())[0] + 1 if cursor.last() else 0
        txn.put(message.id, U32.pack(docno), db=tables.index)
        meta = [message.id, init.title, message.author, message.seq, message.timestamp, 0, 1, 1]
        meta += [{}, [], group]  # its authors and tips are rows: `doc-authors`, `doc-tips`
        txn.put(U32.pack(docno) + message.author, U64.pack(message.seq), db=tables.authors)
        txn.put(U32.pack(docno) + message.id, b"", db=tables.tips)
        txn.put(U32.pack(docno), pack(meta), db=tables.meta)  # claims docno in this transaction
        weave = Weave.create(txn, tables.nodes, tables.pieces, docno, [0, 0, ROOT_SYMBOL, 0, 0, 0])
        self._docs[docno] = _Doc(
            docno, meta, weave, DocWefts(txn, tables, docno), SiblingIndex(txn, tables.sibs, docno)
        )
        self._record(docno, 0, message, [[0, 1, ROOT, 0, 0]], 0, 0, {message.author: message.seq})
        self._log(docno, 0, message.id, [])

    def document(self, root: bytes) -> _Doc:
        """Document `root`'s state in this transaction (`DocumentError` if not woven)."""
        docno = docno_of(self._txn, self._tables, root)
        if docno is None:
            epoch = self.sealed.waiting_on(root)
            if epoch is not None:  # its init waits for a key: so does the edit
                raise Waiting(epoch)
            raise DocumentError(DocReason.UNKNOWN_DOC, "the document's doc/init is not processed")
        doc = self._docs.get(docno)
        if doc is None:
            meta = read_meta(self._txn, self._tables, docno)
            if meta[M_YARNS] or meta[M_TIPS]:  # written before their tables
                move_meta_rows(self._txn, self._tables, docno, meta)
            weave = open_weave(self._txn, self._tables, docno, meta)
            wefts = DocWefts(self._txn, self._tables, docno)
            siblings = SiblingIndex(self._txn, self._tables.sibs, docno)
            doc = self._docs[docno] = _Doc(docno, meta, weave, wefts, siblings)
        return doc

    def _record(
        self,
        docno: int,
        mno: int,
        message: Message,
        segments: list,
        ins: int,
        dels: int,
        weft: Weft,
    ) -> None:
        record = [message.id, message.author, message.seq, message.timestamp, segments, ins, dels]
        record.append(weft)
        key = U32.pack(docno) + U32.pack(mno)
        self._txn.put(key, pack(record), db=self._tables.msgs)
        self._txn.put(message.id, key, db=self._tables.ids)
        self._txn.put(feed_key(message.author, message.seq), key, db=self._tables.feeds)
        yarn_key = U32.pack(docno) + feed_key(message.author, message.seq)
        self._txn.put(yarn_key, U32.pack(mno), db=self._tables.yarn)

    def _log(self, docno: int, version: int, msg_id: bytes | None, splices: list | None) -> None:
        self._txn.put(
            U32.pack(docno) + U64.pack(version), pack([msg_id, splices]), db=self._tables.log
        )

    # -- checking an edit ------------------------------------------------------

    def _edit(
        self,
        message: Message,
        root: bytes,
        edit: DocEdit,
        mno: int | None = None,
        group: bytes | None = None,
        erased: bool = False,
    ) -> None:
        # Whether the init is woven yet depends on delivery unless the timeframe covers it.
        if not covers(self._txn, self._message_ids, message, root):
            raise DocumentError(DocReason.OUTSIDE_WEFT, "the doc/init is outside the edit's weft")
        doc = self.document(root)
        meta = doc.meta
        if group_of(meta) != group:
            raise DocumentError(
                DocReason.WRONG_GROUP,
                "a private document takes only edits sealed in its group"
                if group is None
                else "sealed in another group than the document's",
            )
        previous = message.tangles[TANGLE].previous or ()
        weft = doc.wefts.of_edit(message)
        renumber = mno is None
        mno = meta[M_NEXT_MNO] if mno is None else mno
        segments, first = [], 0
        for op in edit.ops:
            count = len(op.text) if type(op) is Insert else op.count
            segments.append([first, count, _KIND_OF_OP[type(op)], 0, 0])
            first += count
        cited: dict[bytes, tuple[int, list]] = {}
        for segment, op in zip(segments, edit.ops, strict=True):
            ref = op.cause if type(op) is Insert else op.target
            ref_mno, ref_segments = self.cited(doc, ref, weft, mno, segments, cited)
            segment[3], segment[4] = ref_mno, ref.index
            count = 1 if type(op) is Insert else op.count
            kinds = segment_kinds(ref_segments, ref.index, count)
            if kinds is None:
                raise DocumentError(DocReason.UNKNOWN_ATOM, f"atom {ref.index} (+{count}) absent")
            allowed = {Insert: {ROOT, TEXT_ATOM}, Delete: {TEXT_ATOM}, Undelete: {BACKSPACE}}
            if not kinds <= allowed[type(op)]:
                raise DocumentError(
                    DocReason.WRONG_KIND, f"{type(op).__name__.lower()} cites atoms of kind {kinds}"
                )
        inserted = sum(s[1] for s in segments if s[2] == TEXT_ATOM)
        deleted = sum(s[1] for s in segments if s[2] == BACKSPACE)
        if renumber:
            meta[M_NEXT_MNO] = mno + 1
        # A feed is processed in seq order: this is its author's highest seq woven. A crowd
        # has as many authors and tips as edits: rows, never a list read whole.
        prefix = U32.pack(doc.docno)
        self._txn.put(prefix + message.author, U64.pack(message.seq), db=self._tables.authors)
        for tip in previous:
            self._txn.delete(prefix + tip, db=self._tables.tips)
        self._txn.put(prefix + message.id, b"", db=self._tables.tips)
        self._record(doc.docno, mno, message, segments, inserted, deleted, weft)
        doc.wefts.remember(mno, weft)
        splices: list = []
        for segment, op in zip(segments, edit.ops, strict=True):
            if type(op) is Insert:
                self._insert(doc, mno, segment, op.text, splices, erased)
            elif type(op) is Delete:
                self._delete(doc, mno, segment, splices)
            else:
                self._undelete(doc, mno, segment, splices)
        if renumber:
            self._log(doc.docno, mno, message.id, splices)

    def wait_if_sealed(self, doc: _Doc, msg_id: bytes) -> None:
        """A private document's message that names `msg_id`, which waits for a key here,
        waits too (`Waiting`): a member holding that key decides it. A public document's
        waits only for a message of its own, held as its header alone, that waits for
        the skeleton its erase request brings (storage.documents.erased): whatever else
        it names is of no public document, on any node."""
        found = self.sealed.waiting(msg_id)
        if found is None:
            return
        epoch, root = found
        if group_of(doc.meta) is not None or root == doc.meta[M_ID]:
            raise Waiting(epoch)

    def cited(
        self, doc: _Doc, ref: AtomRef, weft: Weft, mno: int, own: list, cited: dict
    ) -> tuple[int, list]:
        """(mno, segments) of the message `ref` names, checked against the citing weft (`mno`
        and `own` answer for a reference to the citing message itself; `cited` caches)."""
        if ref.msg is None:
            return mno, own
        found = cited.get(ref.msg)
        if found is not None:
            return found
        if not inside(self._txn, self._message_ids, ref.msg, weft):
            # a message that waits is in no weft yet: what cites it waits for it
            self.wait_if_sealed(doc, ref.msg)
            raise DocumentError(DocReason.OUTSIDE_WEFT, "cites an atom outside the edit's weft")
        key = self._txn.get(ref.msg, db=self._tables.ids)
        if key is None:
            self.wait_if_sealed(doc, ref.msg)
        if key is None or U32.unpack(key[:4])[0] != doc.docno:
            raise DocumentError(DocReason.UNKNOWN_ATOM, "cites a message that is not in this doc")
        ref_mno = U32.unpack(key[4:8])[0]
        record = stored_record(self._txn, self._tables, doc.docno, ref_mno)
        found = cited[ref.msg] = (ref_mno, record[R_SEGMENTS])
        return found

    # -- applying ops ----------------------------------------------------------

    def _goes_first(self, doc: _Doc, mno: int, first: int, sibling_mno: int, sibling: int) -> bool:
        """Whether new atom (mno, first) precedes its sibling (sibling_mno, sibling)."""
        if sibling_mno == mno:
            return first > sibling
        return weft_greater(doc.wefts.of(mno), doc.wefts.of(sibling_mno))

    def _insert(
        self, doc: _Doc, mno: int, segment: list, text: str, splices: list, erased: bool
    ) -> None:
        """Weave an insert's run (`erased`: atoms without characters, never shown)."""
        flags = ERASED_PIECE if erased else VISIBLE
        weave = doc.weave
        first, cause_mno, cause = segment[0], segment[3], segment[4]
        leaf, slot = weave.locate(cause_mno, cause)
        piece = weave.piece(leaf, slot)
        offset = cause - piece[START]

        # Where the sibling rule puts it among the cause's children (storage.documents.siblings).
        before = after = None
        indexed = doc.siblings.indexed((cause_mno, cause))
        if indexed or self._lone_child(weave, leaf, slot, offset, cause_mno, cause):
            before, after = doc.siblings.place(
                (cause_mno, cause),
                (mno, first),
                lambda child: self._goes_first(doc, mno, first, *child),
                lambda: self._lone_child(weave, leaf, slot, offset, cause_mno, cause),
            )
        new = [mno, first, text, flags, cause_mno, cause]
        if before is not None and after is not None:  # right before the child it precedes
            leaf, slot = weave.locate(*after)
            leaf, slot = weave.insert_before(leaf, slot, new)
            if not erased:
                _splice(splices, "ins", weave.visible_before(leaf, slot), text)
            return
        if before is not None:  # last: after the causal block of the child before it
            leaf, slot = weave.locate(*before)
            start = before[1] - weave.piece(leaf, slot)[START]
            leaf, slot, offset, _next = self._skip_block(
                weave, leaf, slot, start - 1, cause_mno, cause
            )
        piece = weave.piece(leaf, slot)
        if offset + 1 < len(piece[TEXT]):
            weave.split(leaf, slot, offset + 1)
            leaf, slot = weave.locate(piece[MNO], piece[START])
        elif (
            piece[MNO] == mno == cause_mno
            and piece[START] + len(piece[TEXT]) == first == cause + 1
            and piece[FLAGS] == flags
        ):
            position = weave.visible_before(leaf, slot) + len(piece[TEXT])
            weave.extend(leaf, slot, text)
            if not erased:
                _splice(splices, "ins", position, text)
            return
        leaf, slot = weave.insert_after(leaf, slot, [mno, first, text, flags, cause_mno, cause])
        if not erased:
            _splice(splices, "ins", weave.visible_before(leaf, slot), text)

    @staticmethod
    def _lone_child(
        weave: Weave, leaf: int, slot: int, offset: int, cause_mno: int, cause: int
    ) -> list[tuple[int, int]]:
        """The cause's one child, if any, while it has no index: the atom after it in the
        weave whose cause it is (storage.documents.siblings). The cause is atom `offset` of
        piece (leaf, slot)."""
        piece = weave.piece(leaf, slot)
        if offset + 1 < len(piece[TEXT]):
            return [(cause_mno, cause + 1)]
        following = weave.next_slot(leaf, slot)
        if following is not None:
            nxt = weave.piece(*following)
            if nxt[CAUSE_MNO] == cause_mno and nxt[CAUSE_INDEX] == cause:
                return [(nxt[MNO], nxt[START])]
        return []

    def _skip_block(
        self, weave: Weave, leaf: int, slot: int, offset: int, cause_mno: int, cause: int
    ) -> tuple[int, int, int, tuple[int, int] | None]:
        """Walk past the causal block that starts after atom `offset` of (leaf, slot).

        Returns the gap after the block (its last piece's last atom) and the
        next sibling of the cause there, if any.
        """
        piece = weave.piece(leaf, slot)
        block: dict[int, list[tuple[int, int]]] = {}
        if offset + 1 < len(piece[TEXT]):
            block[piece[MNO]] = [(piece[START] + offset + 1, piece[START] + len(piece[TEXT]))]
            place = (leaf, slot)
        else:
            place = weave.next_slot(leaf, slot)
            piece = weave.piece(*place)
            block[piece[MNO]] = [(piece[START], piece[START] + len(piece[TEXT]))]
        while True:
            following = weave.next_slot(*place)
            if following is None:
                piece = weave.piece(*place)
                return place[0], place[1], len(piece[TEXT]) - 1, None
            nxt = weave.piece(*following)
            ranges = block.get(nxt[CAUSE_MNO], ())
            if not any(start <= nxt[CAUSE_INDEX] < end for start, end in ranges):
                piece = weave.piece(*place)
                sibling = None
                if nxt[CAUSE_MNO] == cause_mno and nxt[CAUSE_INDEX] == cause:
                    sibling = (nxt[MNO], nxt[START])
                return place[0], place[1], len(piece[TEXT]) - 1, sibling
            block.setdefault(nxt[MNO], []).append((nxt[START], nxt[START] + len(nxt[TEXT])))
            place = following

    def _isolate(self, weave: Weave, mno: int, start: int, end: int) -> tuple[int, int]:
        """Cut pieces so atoms start .. end-1 of `mno` (inside one piece) form a piece alone."""
        leaf, slot = weave.locate(mno, start)
        piece = weave.piece(leaf, slot)
        if start > piece[START]:
            leaf, slot = weave.split(leaf, slot, start - piece[START])
            piece = weave.piece(leaf, slot)
        if end < piece[START] + len(piece[TEXT]):
            weave.split(leaf, slot, end - piece[START])
            leaf, slot = weave.locate(mno, start)
        return leaf, slot

    def _delete(self, doc: _Doc, mno: int, segment: list, splices: list) -> None:
        weave = doc.weave
        first, count, target_mno, target = segment[0], segment[1], segment[3], segment[4]
        self._txn.put(
            U32.pack(doc.docno)
            + U32.pack(target_mno)
            + U32.pack(target)
            + U32.pack(mno)
            + U32.pack(first),
            U32.pack(count),
            db=self._tables.dels,
        )
        index, end = target, target + count
        while index < end:
            leaf, slot = weave.locate(target_mno, index)
            piece = weave.piece(leaf, slot)
            stop = min(end, piece[START] + len(piece[TEXT]))
            if piece[FLAGS] & VISIBLE:
                leaf, slot = self._isolate(weave, target_mno, index, stop)
                position = weave.visible_before(leaf, slot)
                weave.set_visible(leaf, slot, False)
                _splice(splices, "del", position, stop - index)
            index = stop

    def _undelete(self, doc: _Doc, mno: int, segment: list, splices: list) -> None:
        first, count, bs_mno, bs_index = segment[0], segment[1], segment[3], segment[4]
        prefix = U32.pack(doc.docno)
        self._txn.put(
            prefix + U32.pack(bs_mno) + U32.pack(bs_index) + U32.pack(mno) + U32.pack(first),
            U32.pack(count),
            db=self._tables.undels,
        )
        segments = stored_record(self._txn, self._tables, doc.docno, bs_mno)[R_SEGMENTS]
        shown: list[tuple[int, int]] = []  # (target mno, index) that become visible
        for backspace in range(bs_index, bs_index + count):
            start, _count, _kind, target_mno, target = segment_at(segments, backspace)
            atom = (target_mno, target + backspace - start)
            if not self._live_backspaces(doc.docno, *atom):
                shown.append(atom)
        weave = doc.weave
        for target_mno, index, end in _runs(shown):
            while index < end:
                leaf, slot = weave.locate(target_mno, index)
                piece = weave.piece(leaf, slot)
                stop = min(end, piece[START] + len(piece[TEXT]))
                if not piece[FLAGS] & (VISIBLE | ERASED_PIECE):  # erased: stays hidden
                    leaf, slot = self._isolate(weave, target_mno, index, stop)
                    weave.set_visible(leaf, slot, True)
                    text = weave.piece(leaf, slot)[TEXT]
                    _splice(splices, "ins", weave.visible_before(leaf, slot), text)
                index = stop

    def _live_backspaces(self, docno: int, target_mno: int, index: int) -> bool:
        """Whether atom (target_mno, index) has a backspace that no undelete cancels."""
        for bs_mno, bs_index in backspaces_of(self._txn, self._tables, docno, target_mno, index):
            if not undeletes_of(self._txn, self._tables, docno, bs_mno, bs_index):
                return True
        return False


def _runs(atoms: list[tuple[int, int]]):
    """Group (mno, index) atoms into (mno, start, end) runs of consecutive indices."""
    runs: list[list[int]] = []
    for mno, index in sorted(atoms):
        if runs and runs[-1][0] == mno and runs[-1][2] == index:
            runs[-1][2] += 1
        else:
            runs.append([mno, index, index + 1])
    return runs


def _splice(splices: list, kind: str, position: int, value: Any) -> None:
    """Append a frontier splice, merging it into the last one when they touch."""
    if splices:
        last = splices[-1]
        if kind == "ins" and last[0] == "ins" and last[1] + len(last[2]) == position:
            last[2] += value
            return
        if kind == "del" and last[0] == "del" and last[1] == position:
            last[2] += value
            return
    splices.append([kind, position, value])
