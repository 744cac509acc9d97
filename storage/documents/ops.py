"""`store.documents`: create, edit, and read documents, one transaction each.

Edits are published through the store's one writer (`Writes.publishing`:
several of our messages signed and stored in one write transaction). The
engine itself is `storage.documents.engine`; the reads are `storage.documents.revisions`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from tanglenode.protocol.doc_link import Link
from tanglenode.protocol.document import TANGLE, Insert, edit_content, init_content
from tanglenode.protocol.group_state import Exclusion
from tanglenode.protocol.groups import seal_value
from tanglenode.protocol.identity import feed_text, message_text
from tanglenode.protocol.limits import TIMEFRAME_CAP
from tanglenode.protocol.message import Message
from tanglenode.storage.documents import edits as doc_edits
from tanglenode.storage.documents import revisions
from tanglenode.storage.documents.comments import DocumentComments
from tanglenode.storage.documents.erased import UNKNOWN, skeleton_for
from tanglenode.storage.documents.reweave import DocumentWeaver
from tanglenode.storage.documents.rows import (
    M_AUTHOR,
    M_CREATED,
    M_ID,
    M_NEXT_MNO,
    M_TITLE,
    R_AUTHOR,
    R_DELETED,
    R_ID,
    R_INSERTED,
    R_SEGMENTS,
    R_SEQ,
    R_TIMESTAMP,
    R_WEFT,
    TEXT_ATOM,
    BlameSpan,
    DocumentInfo,
    DyeSpan,
    SpliceEntry,
    Version,
    Weft,
    docno_of,
    frontier,
    group_of,
    open_weave,
    read_meta,
    read_record,
    segment_kinds,
    stored_record,
    unpack,
)
from tanglenode.storage.documents.sealed import KeysKept, SealedMessages, current_key, waits
from tanglenode.storage.documents.transclusion import DocumentTransclusion
from tanglenode.storage.documents.view import weave_backlog
from tanglenode.storage.documents.weave_export import ExportedWeave, export_weave
from tanglenode.storage.errors import (
    BadSplice,
    NotInGroup,
    SealedDocument,
    UnknownDocument,
    VersionConflict,
)
from tanglenode.storage.feeds.layout import U32, U64

if TYPE_CHECKING:
    from tanglenode.storage.context import StoreContext
    from tanglenode.storage.writes import OwnPublishing, Writes

At = Weft | bytes | int | None  # a weft, a message id, a version number, or the frontier


class Resolved(NamedTuple):
    """What a link points at (`DocumentOps.resolve_link`)."""

    text: str  # its range in the current text ("" when all of it was deleted)
    start: int  # where that text starts in the current text (code points)
    was: str | None  # when all of it was deleted: how it read at the link's revision


# Bytes of a message that are not its content, beyond the timeframe and tangle links.
_ENVELOPE_BYTES = 400
_TIMEFRAME_ENTRY_BYTES = 62  # bin 32 key, [seq (up to 9 bytes), bin 16 tag]
# What sealing adds to an edit's content: the box's nonce and tag, the envelope's keys, epoch.
_SEAL_BYTES = 128


class DocumentOps:
    """`store.documents` (see the module docstring)."""

    def __init__(self, ctx: StoreContext, writes: Writes) -> None:
        self._ctx = ctx
        self._writes = writes
        self.comments = DocumentComments(ctx, writes, self)  # storage.documents.comments
        self.transclusion = DocumentTransclusion(ctx, writes, self)

    # -- writing -----------------------------------------------------------------

    def create_document(self, title: str, group: bytes | None = None) -> Message:
        """Publish a new document's doc/init; the document's id is the message's id. With
        `group`, the document is private to it: sealed in the epoch we post in
        (storage.documents.sealed); `NotInGroup` when we post in none."""
        content = init_content(title)
        with self._writes.publishing() as session:
            cites: list[bytes] = []
            if group is not None:  # its timeframe must cover the epoch's init
                key, epoch = self.sealing_in(session.txn, group)
                content, cites = seal_value(content, key, epoch), [epoch]
            session.publish(content, {TANGLE: None}, cites=cites)
        return session.published[0]

    def erase_weave(self, msg_id: bytes) -> Any:
        """The `weave` our erase request of message `msg_id` carries (protocol/erase.py): the
        skeleton of a document message (docs/DOCUMENTS.md, "Erased edits"), a private
        document's sealed again in its epoch; None for any other message, or one not held
        with its content. `NotInGroup` for a sealed message whose key is not held here."""
        with self._ctx.read() as txn:
            position = self._ctx.tables.ids.position(txn, msg_id)
            if position is None:
                return None
            message = self._ctx.tables.bodies.message(txn, bytes(position))
            if message is None or not message.has_content or TANGLE not in message.tangles:
                return None
            tables = self._ctx.document_tables
            sealed = SealedMessages(txn, tables, self._ctx.limits.max_content_depth)
            weave = skeleton_for(sealed, message.content)
        if weave is UNKNOWN:
            raise NotInGroup(
                f"{message_text(msg_id)} is sealed in an epoch whose key this node does not hold"
            )
        return weave

    def sealing_in(self, txn, group: bytes) -> tuple[bytes, bytes]:
        """(key, epoch) our messages to `group` are sealed with (`NotInGroup` if none)."""
        found = current_key(txn, self._ctx.document_tables, group)
        if found is None:
            raise NotInGroup(
                f"this node posts in no epoch of group {message_text(group)}: not a current "
                "member, or its keys not yet read (a running node reads them as its group "
                "messages arrive)"
            )
        epoch, key = found
        return key, epoch

    def set_keys(
        self,
        keys: Mapping[bytes, tuple[bytes, bytes]],
        current: Mapping[bytes, bytes | None],
        exclusions: Iterable[Exclusion] = (),
    ) -> KeysKept:
        """Keep the epoch keys of our groups (epoch -> (group, key)), the epoch we post in
        per group and the groups' valid exclusions, and weave what waited for a new key
        and what a new exclusion sets aside, in one transaction; the epochs whose keys
        were new and the documents woven again (storage.documents.sealed)."""
        with self._ctx.write() as txn:
            weaver = DocumentWeaver.over(txn, self._ctx)
            kept = weaver.keep_keys(keys, current, exclusions)
            weaver.finish()
        return kept

    def edit_document(
        self, doc: bytes, splices: Sequence[Any], base: At = None, *, exclusive: bool = False
    ) -> list[Message]:
        """Publish the edits that apply `splices` to the revision `base`; [] if they change
        nothing.

        The documents' backlog is woven first, so the current text is every
        message processed. Splices are ("ins", pos, text) or ("del", pos, length), each against the
        text the previous ones left. `base` is the revision they were made
        against (a weft, a message id, a local version number; None: the
        current text); what others did since stays (`doc_edits.plan_at`).
        With `exclusive`, raises `VersionConflict` instead if the document has
        moved past `base` (the caller reads it again). Raises `BadSplice` or
        `UnknownDocument`.
        """
        self._writes.weave_all()
        with self._writes.publishing() as session:
            self.edit_in(session, doc, splices, base, exclusive=exclusive)
        return session.published

    def edit_in(
        self,
        session: OwnPublishing,
        doc: bytes,
        splices: Sequence[Any],
        base: At = None,
        *,
        exclusive: bool = False,
    ) -> list[Message]:
        """`edit_document` inside `session`'s open transaction (a `Job` of a group-committed
        batch: node/service/store_service.py); what it published. The backlog is woven here
        first."""
        txn = session.txn
        weave_backlog(txn, self._ctx, None)
        tables = self._ctx.document_tables
        docno = self.docno_in(txn, doc)
        meta = read_meta(txn, tables, docno)
        group = group_of(meta)
        sealing = None if group is None else self.sealing_in(txn, group)
        weft = self._weft(txn, docno, base)
        if exclusive and weft is not None:
            raise VersionConflict(
                f"the document is at version {meta[M_NEXT_MNO] - 1}, past the edit's base"
            )
        ids: dict[int, bytes] = {}
        if weft is None:
            planned = doc_edits.plan(open_weave(txn, tables, docno, meta), splices)

            def id_of(mno: int) -> bytes:
                if mno not in ids:
                    ids[mno] = stored_record(txn, tables, docno, mno)[R_ID]
                return ids[mno]

        else:
            atoms = revisions.visible_atoms(txn, tables, docno, weft)
            planned, msg_ids = doc_edits.plan_at(atoms, doc, splices)
            id_of = msg_ids.__getitem__
        if not planned:
            return []
        first = len(session.published)

        def publish(ops: list) -> bytes:
            cites = [op.cause.msg if type(op) is Insert else op.target.msg for op in ops]
            cites = [msg for msg in cites if msg is not None]
            content = edit_content(ops)
            if sealing is not None:  # its timeframe must cover the epoch's init
                content = seal_value(content, *sealing)
                cites.append(sealing[1])
            return session.publish(content, {TANGLE: doc}, cites=cites).id

        budget = self._ctx.limits.max_message_bytes - _ENVELOPE_BYTES - _SEAL_BYTES
        budget -= _TIMEFRAME_ENTRY_BYTES * TIMEFRAME_CAP + 33 * self._ctx.limits.max_previous
        doc_edits.chunk(planned, id_of, max(budget, 512), publish)
        return session.published[first:]

    def publish_beside(
        self,
        doc: bytes,
        content: dict[str, Any],
        cites: list[bytes],
        tangles: dict[str, bytes | None],
        check: Callable[[Any, int], None],
    ) -> Message:
        """Publish a message of document `doc` that is not an edit (a comment, an
        inclusion): `check(txn, docno)` first, then sealed as the document's edits are,
        its timeframe covering `cites`, in `doc`'s tangle and `tangles`."""
        tables = self._ctx.document_tables
        with self._writes.publishing() as session:
            txn = session.txn
            docno = self.docno_in(txn, doc)
            check(txn, docno)
            group = group_of(read_meta(txn, tables, docno))
            if group is not None:
                key, epoch = self.sealing_in(txn, group)
                content = seal_value(content, key, epoch)
                cites = [*cites, epoch]
            session.publish(content, {TANGLE: doc, **tangles}, cites=cites)
        return session.published[0]

    # -- links (protocol/doc_link.py) ----------------------------------------------

    def document_link(self, doc: bytes, start: int, end: int) -> Link:
        """A link to the current text's code points `start` .. `end` - 1 (`BadSplice` if
        that is no range of it)."""
        tables = self._ctx.document_tables
        with self._ctx.read() as txn:
            docno = self.docno_in(txn, doc)
            atoms = revisions.visible_atoms(txn, tables, docno, None)
            if not 0 <= start < end <= len(atoms):
                raise BadSplice(f"no range {start}:{end} in a text of {len(atoms)} characters")
            cursor = txn.cursor(db=tables.msgs)  # the last message woven (versions may skip)
            cursor.set_range(U32.pack(docno + 1)) or cursor.last()
            if bytes(cursor.key()[:4]) != U32.pack(docno):
                cursor.prev()
            at = unpack(cursor.value())[R_ID]
            return Link(doc, atoms[start], atoms[end - 1], at)

    def resolve_link(self, link: Link) -> Resolved:
        """What `link` points at now: the text of its range in the current text (and
        where), or, when all of it was deleted, how it read at the link's revision."""
        tables = self._ctx.document_tables
        with self._ctx.read() as txn:
            docno = self.docno_in(txn, link.doc)
            first, last = (self.atom_in(txn, docno, ref) for ref in (link.first, link.last))
            text, start, found = revisions.between(txn, tables, docno, first, last, None)
            if not found:
                raise UnknownDocument("the link's ends are not in that order in the document")
            was = None
            if not text:
                weft = self._message_weft(txn, link.at, docno)
                was = revisions.between(txn, tables, docno, first, last, weft)[0]
                if not was:  # the link's revision did not hold its ends: all between them
                    found_all = revisions.between(
                        txn, tables, docno, first, last, None, deleted_too=True
                    )
                    was = found_all[0]
            return Resolved(text, start, was)

    def atom_in(self, txn, docno: int, ref: tuple[bytes, int]) -> tuple[int, int]:
        """(mno, index) of atom `ref` of document `docno`; `UnknownDocument` if it has none."""
        key = txn.get(ref[0], db=self._ctx.document_tables.ids)
        if key is None or U32.unpack(key[:4])[0] != docno:
            raise UnknownDocument(f"the document holds no message {message_text(ref[0])}")
        mno = U32.unpack(key[4:8])[0]
        record = stored_record(txn, self._ctx.document_tables, docno, mno)
        if segment_kinds(record[R_SEGMENTS], ref[1], 1) != {TEXT_ATOM}:
            raise UnknownDocument(f"message {message_text(ref[0])} has no text atom {ref[1]}")
        return mno, ref[1]

    # -- reading -----------------------------------------------------------------

    def versions_of(self, doc: bytes, messages: Sequence[Message]) -> dict[bytes, int]:
        """The version each of `messages` made in document `doc` (those woven into it)."""
        tables = self._ctx.document_tables
        found: dict[bytes, int] = {}
        with self._ctx.read() as txn:
            docno = docno_of(txn, tables, doc)
            for message in messages:
                key = txn.get(message.id, db=tables.ids)
                if key is not None and docno is not None and U32.unpack(key[:4])[0] == docno:
                    found[message.id] = U32.unpack(key[4:8])[0]
        return found

    def docno_in(self, txn, doc: bytes) -> int:
        """Document `doc`'s number in `txn`; `SealedDocument` or `UnknownDocument`."""
        docno = docno_of(txn, self._ctx.document_tables, doc)
        if docno is None:
            if waits(txn, self._ctx.document_tables, doc):
                raise SealedDocument(
                    f"document {message_text(doc)} is private to a group whose key this node "
                    "does not hold"
                )
            raise UnknownDocument(f"no document {message_text(doc)}")
        return docno

    def _weft(self, txn, docno: int, at: At) -> Weft | None:
        """The weft `at` names (see `At`); None for the frontier, or for a weft that holds
        every message woven into the document (the same revision, read without history).

        A message id names the text just after that message, as its author had it: the
        same on every node. A version number is this node's: the text it showed as that
        version, every message it had woven up to it (another node numbers otherwise)."""
        if at is None:
            return None
        tables = self._ctx.document_tables
        yarns = frontier(txn, tables, docno, read_meta(txn, tables, docno))
        if isinstance(at, dict):
            weft = at
            ahead = [author for author, seq in weft.items() if seq > yarns.get(author, 0)]
            if ahead:  # its text here would lack them: another text under the same name
                raise UnknownDocument(
                    f"the revision names messages of {len(ahead)} feeds this node has not "
                    f"woven into the document (e.g. {feed_text(ahead[0])} up to "
                    f"{weft[ahead[0]]}, here {yarns.get(ahead[0], 0)})"
                )
        elif isinstance(at, int):
            weft = self._version_weft(txn, docno, at)
        else:
            weft = self._message_weft(txn, at, docno)
        if all(weft.get(author, 0) >= seq for author, seq in yarns.items()):
            return None
        return weft

    def base_weft(self, doc: bytes, base: At = None) -> Weft:
        """The weft of revision `base` (None: the current text, every message woven), as
        anyone holding its messages can name it (`doc show --at`, a `doc-edit`'s base)."""
        with self._ctx.read() as txn:
            docno = self.docno_in(txn, doc)
            meta = read_meta(txn, self._ctx.document_tables, docno)
            weft = self._weft(txn, docno, base)
            return frontier(txn, self._ctx.document_tables, docno, meta) if weft is None else weft

    def _version_weft(self, txn, docno: int, version: int) -> Weft:
        """Every message this node wove into the document up to `version`, as a weft: a
        feed's document messages are woven in seq order, so its highest seq among them."""
        weft: Weft = {}
        cursor = txn.cursor(db=self._ctx.document_tables.msgs)
        prefix = U32.pack(docno)
        head = read_meta(txn, self._ctx.document_tables, docno)[M_NEXT_MNO] - 1
        if version > head or read_record(txn, self._ctx.document_tables, docno, version) is None:
            raise UnknownDocument(f"the document has no version {version}")
        for key, raw in cursor.iternext() if cursor.set_range(prefix) else ():
            if key[:4] != prefix or U32.unpack(key[4:8])[0] > version:
                break
            record = unpack(raw)
            author, seq = record[R_AUTHOR], record[R_SEQ]
            weft[author] = max(weft.get(author, 0), seq)
        return weft

    def _message_weft(self, txn, msg_id: bytes, of_document: int | None = None) -> Weft:
        key = txn.get(msg_id, db=self._ctx.document_tables.ids)
        if key is None:
            raise UnknownDocument(f"no document message {message_text(msg_id)} to take a weft from")
        docno, mno = U32.unpack(key[:4])[0], U32.unpack(key[4:8])[0]
        if of_document is not None and docno != of_document:
            raise UnknownDocument(f"message {message_text(msg_id)} is of another document")
        return stored_record(txn, self._ctx.document_tables, docno, mno)[R_WEFT]

    def document_weft(self, msg_id: bytes) -> Weft:
        """A document message's weft: what of its document its author had woven
        (storage.documents.engine)."""
        with self._ctx.read() as txn:
            return self._message_weft(txn, msg_id)

    def held(self) -> list[DocumentInfo]:
        """Every document held, in the order they were processed."""
        tables = self._ctx.document_tables
        found = []
        with self._ctx.read() as txn:
            for key, raw in txn.cursor(db=tables.meta):
                docno, meta = U32.unpack(key)[0], unpack(raw)
                weave = open_weave(txn, tables, docno, meta)
                found.append(
                    DocumentInfo(
                        meta[M_ID],
                        meta[M_TITLE],
                        meta[M_AUTHOR],
                        meta[M_CREATED],
                        weave.visible_total(),
                        meta[M_NEXT_MNO] - 1,
                        self._count_set_aside(txn, meta[M_ID]),
                        group_of(meta),
                    )
                )
        return found

    def titled(self, title: str, limit: int) -> list[tuple[bytes, str]]:
        """The documents held titled `title`, else `title` but for case: (id, title) in the
        order they were processed, at most `limit`. One pass over the documents' rows."""
        folded = title.casefold()
        exact: list[tuple[bytes, str]] = []
        near: list[tuple[bytes, str]] = []
        with self._ctx.read() as txn:
            for _key, raw in txn.cursor(db=self._ctx.document_tables.meta):
                meta = unpack(raw)
                its = meta[M_TITLE]
                if its == title:
                    exact.append((meta[M_ID], its))
                    if len(exact) >= limit:
                        break
                elif not exact and its.casefold() == folded and len(near) < limit:
                    near.append((meta[M_ID], its))
        return exact or near

    def _count_set_aside(self, txn, doc: bytes) -> int:
        return len(self._set_aside(txn, doc))

    def _set_aside(self, txn, doc: bytes) -> list[tuple[bytes, str, str]]:
        cursor = txn.cursor(db=self._ctx.document_tables.aside)
        found: list[tuple[bytes, str, str]] = []
        if not cursor.set_range(doc):
            return found
        for key, raw in cursor:
            if key[:32] != doc:
                break
            reason, detail = unpack(raw)
            found.append((bytes(key[32:]), reason, detail))
        return found

    def document_set_aside(self, doc: bytes) -> list[tuple[bytes, str, str]]:
        """(message id, reason, detail) of every edit of `doc` that was set aside."""
        with self._ctx.read() as txn:
            return self._set_aside(txn, doc)

    def document_text(self, doc: bytes) -> str:
        """The text at the processed frontier."""
        return self.document_revision(doc, None)

    def document_snapshot(self, doc: bytes) -> tuple[int, str]:
        """(version, text) at the processed frontier, read together."""
        with self._ctx.read() as txn:
            docno = self.docno_in(txn, doc)
            meta = read_meta(txn, self._ctx.document_tables, docno)
            return meta[M_NEXT_MNO] - 1, revisions.revision(
                txn, self._ctx.document_tables, docno, None
            )

    def weft_after(self, doc: bytes, base: Weft, made: Sequence[Message]) -> Weft | None:
        """The revision `made` (our messages, one edit from `base`) left: `base` with our seq
        moved to the last of them; its text is the edit's result exactly. None when that
        weft would take in another message of ours woven into the document (one we made
        elsewhere since `base`), whose changes the edit never saw."""
        if not made:
            return dict(base)
        author, first, last = made[0].author, made[0].seq, made[-1].seq
        tables = self._ctx.document_tables
        with self._ctx.read() as txn:
            prefix = U32.pack(self.docno_in(txn, doc)) + author
            cursor = txn.cursor(db=tables.yarn)
            low = base.get(author, 0)
            if (
                cursor.set_range(prefix + U64.pack(low + 1))
                and cursor.key()[:36] == prefix
                and U64.unpack(cursor.key()[36:44])[0] < first
            ):
                return None
        return dict(base) | {author: last}

    def document_checkout(self, doc: bytes, at: At = None) -> tuple[int | None, str, Weft]:
        """(version, text, weft) of revision `at` (None: the current text), read together:
        the weft names the text exactly, on any node holding its messages (an edit made
        from the text says it as its base). The version is this node's, and None with `at`."""
        with self._ctx.read() as txn:
            docno = self.docno_in(txn, doc)
            meta = read_meta(txn, self._ctx.document_tables, docno)
            weft = self._weft(txn, docno, at)
            text = revisions.revision(txn, self._ctx.document_tables, docno, weft)
            version = meta[M_NEXT_MNO] - 1 if at is None else None
            if weft is None:
                weft = frontier(txn, self._ctx.document_tables, docno, meta)
            return version, text, weft

    def document_revision(self, doc: bytes, at: At = None) -> str:
        """The text at `at`: a weft, a message id, a version number, or None (the frontier)."""
        with self._ctx.read() as txn:
            docno = self.docno_in(txn, doc)
            weft = self._weft(txn, docno, at)
            return revisions.revision(txn, self._ctx.document_tables, docno, weft)

    def document_weave(self, doc: bytes) -> ExportedWeave:
        """The document's whole history as the weave5c string and its frame
        (storage.documents.weave_export; `Unexportable` if the form cannot hold it)."""
        with self._ctx.read() as txn:
            docno = self.docno_in(txn, doc)
            return export_weave(txn, self._ctx.document_tables, docno)

    def document_atoms(self, doc: bytes, at: At = None) -> list[tuple[bytes, int]]:
        """The (message id, index) of every atom of the revision at `at`, in text order."""
        with self._ctx.read() as txn:
            docno = self.docno_in(txn, doc)
            weft = self._weft(txn, docno, at)
            return revisions.visible_atoms(txn, self._ctx.document_tables, docno, weft)

    def document_dye(self, doc: bytes, old: At, new: At) -> list[DyeSpan]:
        """What changed between two revisions, atom by atom, with who changed it."""
        with self._ctx.read() as txn:
            docno = self.docno_in(txn, doc)
            old_weft, new_weft = self._weft(txn, docno, old), self._weft(txn, docno, new)
            return revisions.dye(txn, self._ctx.document_tables, docno, old_weft, new_weft)

    def document_blame(self, doc: bytes, at: At = None) -> list[BlameSpan]:
        """The revision at `at` in spans, each with the author and message that typed it."""
        with self._ctx.read() as txn:
            docno = self.docno_in(txn, doc)
            weft = self._weft(txn, docno, at)
            return revisions.blame(txn, self._ctx.document_tables, docno, weft)

    def document_versions(self, doc: bytes, since: int = 0, limit: int = 1000) -> list[Version]:
        """Versions `since` .. `since + limit - 1` (0 is the doc/init), in the order woven."""
        tables = self._ctx.document_tables
        versions: list[Version] = []
        with self._ctx.read() as txn:
            docno = self.docno_in(txn, doc)
            prefix = U32.pack(docno)
            cursor = txn.cursor(db=tables.msgs)
            if not cursor.set_range(prefix + U32.pack(max(since, 0))):
                return versions
            for key, raw in cursor:
                if key[:4] != prefix or len(versions) >= limit:
                    break
                record = unpack(raw)
                versions.append(
                    Version(
                        U32.unpack(key[4:8])[0],
                        record[R_ID],
                        record[R_AUTHOR],
                        record[R_TIMESTAMP],
                        record[R_INSERTED],
                        record[R_DELETED],
                    )
                )
        return versions

    def document_splices(
        self, doc: bytes, since: int, limit: int = 1000
    ) -> tuple[int, list[SpliceEntry]]:
        """(head version, the splice entries of versions after `since`, at most `limit`)."""
        tables = self._ctx.document_tables
        entries: list[SpliceEntry] = []
        with self._ctx.read() as txn:
            docno = self.docno_in(txn, doc)
            head = read_meta(txn, tables, docno)[M_NEXT_MNO] - 1
            prefix = U32.pack(docno)
            cursor = txn.cursor(db=tables.log)
            if not cursor.set_range(prefix + U64.pack(max(since + 1, 0))):
                return head, entries
            for key, raw in cursor:
                if key[:4] != prefix or len(entries) >= limit:
                    break
                msg_id, splices = unpack(raw)
                entries.append(
                    SpliceEntry(
                        U64.unpack(key[4:12])[0],
                        msg_id,
                        None if splices is None else tuple(tuple(s) for s in splices),
                    )
                )
        return head, entries
