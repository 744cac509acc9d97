"""The document ops served: a handler per `doc-` request, and the pages of a `doc-watch` stream.

Theory of operation
-------------------
Each op with one reply is a handler `(area, request)`, a row of
`node.ipc.ops.OPS`, not a method of the server, so `tangled doc` runs the same
ones on a store of its own while the node is stopped (node/cli/backend.py):
both paths answer alike.

A `doc-watch` stream is a `DocWatch`: where the stream starts (`start`),
then its pages (`next_page`). `node/ipc/server.py` moves them: it sends the
reply and the snapshot, then follows `next_page` live through its queue,
with the lag rule every stream has. The splice log continues a client's
text only while it is a plain run of versions after the client's: a
`reset` entry (a proof cut a feed back and the document was woven again,
its log rewritten) or a version missing from the run means the client's
text is no longer the one the log continues, so it gets a fresh snapshot
instead. The request shapes and the bodies are `protocol/doc_ipc.py`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tanglenode.node.service.store_service import StoreService
from tanglenode.protocol.doc_ipc import (
    SET_ASIDE_SHOWN,
    DocBlameRequest,
    DocCommentRequest,
    DocCommentsRequest,
    DocCreateRequest,
    DocDiffRequest,
    DocEditRequest,
    DocIncludeRequest,
    DocLinkRequest,
    DocListRequest,
    DocLogRequest,
    DocRenderRequest,
    DocResolveRequest,
    DocShowRequest,
    blame_body,
    comment_body,
    document_body,
    dye_body,
    part_body,
    set_aside_body,
    show_page,
    snapshot_events,
    splice_entry,
    version_body,
)
from tanglenode.protocol.ipc import PAGE_BYTES

if TYPE_CHECKING:
    from tanglenode.node.ipc.area import Area

WATCH_ENTRIES = 64  # splice entries read per doc-watch page (cut further at `PAGE_BYTES`)

# -- the ops with one reply --------------------------------------------------------------------


async def doc_create(area: Area, request: DocCreateRequest) -> dict[str, Any]:
    message = await area.service.create_document(request.title, request.group)
    return {"doc": message.id}


async def doc_edit(area: Area, request: DocEditRequest) -> dict[str, Any]:
    """Publish the splices, made against `base` and merged with what happened since; the
    messages (none when nothing changed), each with its version, and `base`: the revision
    the edited text is now (the base and our edit, without what others did since), to
    make the next edit from. `exclusive`: nothing is published once the document has
    moved past `base` (`conflict`)."""
    service, doc = area.service, request.doc
    base = request.base
    if not isinstance(base, dict):  # named as a weft, so the reply's base can say it
        base = await service.read(lambda store: store.documents.base_weft(doc, request.base))
    messages, numbers = await service.edit_document(doc, request.splices, base, request.exclusive)
    after = await service.read(lambda store: store.documents.weft_after(doc, base, messages))
    return {
        "messages": [{"msg": m.id, "version": numbers.get(m.id)} for m in messages],
        "base": after,  # nil: no weft names it (we edited the document elsewhere meanwhile)
    }


async def doc_list(area: Area, request: DocListRequest) -> dict[str, Any]:
    """A page of the documents the store holds."""
    documents = await area.service.read(lambda store: store.documents.held())
    page = documents[request.start : request.start + request.limit]
    following = request.start + len(page)
    return {
        "documents": [document_body(info) for info in page],
        "total": len(documents),
        "next": following if following < len(documents) else None,
    }


async def doc_link(area: Area, request: DocLinkRequest) -> dict[str, Any]:
    """A link to a range of the current text (protocol/doc_link.py)."""
    doc, start, end = request.doc, request.start, request.end
    link = await area.service.read(lambda store: store.documents.document_link(doc, start, end))
    return {"link": link.text()}


async def doc_resolve(area: Area, request: DocResolveRequest) -> dict[str, Any]:
    """What a link points at now; `was`, when all of it was deleted: how it read."""
    link = request.link
    found = await area.service.read(lambda store: store.documents.resolve_link(link))
    return {
        "doc": link.doc,
        "text": found.text,
        "start": found.start,
        "deleted": found.was is not None,
        "was": found.was,
    }


async def doc_comment(area: Area, request: DocCommentRequest) -> dict[str, Any]:
    """Comment on a range (given by positions or by a link), or answer a comment."""
    text = request.text
    if request.reply is not None:
        reply = request.reply
        message = await area.service.comment(lambda s: s.documents.comments.reply(reply, text))
    elif request.link is not None:
        link = request.link
        message = await area.service.comment(lambda s: s.documents.comments.comment_on(link, text))
    else:
        doc, start, end = request.doc, request.start, request.end
        assert doc is not None, "protocol.doc_ipc._doc_comment: one form or another"
        message = await area.service.comment(
            lambda s: s.documents.comments.comment(doc, start, end, text)
        )
    return {"comment": message.id}


async def doc_comments(area: Area, request: DocCommentsRequest) -> dict[str, Any]:
    """A page of the document's comments in text order, each with its replies, cut at
    about `PAGE_BYTES` of text (at least one)."""
    doc = request.doc
    comments, total = await area.service.read(lambda store: store.documents.comments.comments(doc))
    page: list[dict[str, Any]] = []
    size = 0
    for comment in comments[request.start :]:
        if page and size > PAGE_BYTES:
            break
        body = comment_body(comment)
        texts = [body["text"], body["quote"], *(reply["text"] for reply in body["replies"])]
        size += sum(len(text.encode()) for text in texts)
        page.append(body)
    following = request.start + len(page)
    return {
        "comments": page,
        "total": total,
        "next": following if following < len(comments) else None,
    }


async def doc_include(area: Area, request: DocIncludeRequest) -> dict[str, Any]:
    """Include a range of another document after `at` code points of this one's text."""
    doc, at, link = request.doc, request.at, request.link
    message = await area.service.comment(
        lambda store: store.documents.transclusion.include(doc, at, link)
    )
    return {"include": message.id}


async def doc_render(area: Area, request: DocRenderRequest) -> dict[str, Any]:
    """The document with its inclusions in place (storage/documents/transclusion.py)."""
    doc = request.doc
    parts = await area.service.read(lambda store: store.documents.transclusion.render(doc))
    return {"parts": [part_body(part) for part in parts]}


async def doc_show(area: Area, request: DocShowRequest) -> dict[str, Any]:
    """The text at the frontier with its version, or at `at` (version nil); with `weft`,
    the revision's name anyone can use (an edit from this text says it as its base).

    With `limit`, a page of it (`show_page`): a text longer than a frame holds is read so,
    the next pages `at` the first one's `weft`, which names the same text while edits land
    (protocol/doc_ipc.py). Each page reads the revision whole (about 20 ms for 4 MiB) and
    keeps nothing between requests: a reader that stops half-way leaves nothing behind."""
    doc, at = request.doc, request.at
    version, text, weft = await area.service.read(
        lambda store: store.documents.document_checkout(doc, at)
    )
    if request.limit is None:
        return {"version": version, "text": text, "weft": weft}
    return {"version": version, "weft": weft} | show_page(text, request.start, request.limit)


async def doc_log(area: Area, request: DocLogRequest) -> dict[str, Any]:
    """Versions from `since`, and the messages the document set aside (at most
    `SET_ASIDE_SHOWN`; `set_aside_total` counts them all)."""
    doc = request.doc
    versions = await area.service.read(
        lambda store: store.documents.document_versions(doc, request.since, request.limit)
    )
    aside = await area.service.read(lambda store: store.documents.document_set_aside(doc))
    return {
        "versions": [version_body(version) for version in versions],
        "set_aside": [set_aside_body(*entry) for entry in aside[:SET_ASIDE_SHOWN]],
        "set_aside_total": len(aside),
    }


async def doc_diff(area: Area, request: DocDiffRequest) -> dict[str, Any]:
    doc, old, new = request.doc, request.old, request.new
    spans = await area.service.read(lambda store: store.documents.document_dye(doc, old, new))
    return {"spans": [dye_body(span) for span in spans]}


async def doc_blame(area: Area, request: DocBlameRequest) -> dict[str, Any]:
    doc, at = request.doc, request.at
    spans = await area.service.read(lambda store: store.documents.document_blame(doc, at))
    return {"spans": [blame_body(span) for span in spans]}


# -- the doc-watch stream ------------------------------------------------------------------


def _continues(version: int, entries: list[Any]) -> bool:
    """Whether splice `entries` are versions version+1, version+2, ... none of them a reset."""
    return all(
        entry.version == version + n and entry.splices is not None
        for n, entry in enumerate(entries, 1)
    )


def _entry_size(entry: Any) -> int:
    """A bound on a splice entry's bytes on the wire: 4 per code point, 16 per splice."""
    return 64 + sum(16 + (4 * len(s[2]) if s[0] == "ins" else 0) for s in entry.splices)


Page = tuple[list[dict[str, Any]], int]  # the events of a page, and the version they reach


class DocWatch:
    """The pages of one `doc-watch` stream of document `doc` (see the module docstring)."""

    def __init__(self, service: StoreService, doc: bytes) -> None:
        self.service, self.doc = service, doc
        self._proofs_seen = service.evidence_version

    async def start(self, since: int | None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The reply `{version, snapshot}` and the snapshot's events (none when resuming).

        With `since` whose continuation is intact the reply is `{version:
        since, snapshot: false}`; otherwise the text at the head follows it.
        """
        if since is not None and await self._log_rewritten(since):
            since = None  # a version it never had, or a log that no longer continues it
        if since is not None:
            return {"version": since, "snapshot": False}, []
        events, version = await self._snapshot()
        return {"version": version, "snapshot": True}, events

    async def next_page(self, version: int) -> Page | None:
        """The page after `version`: `{"entries": [{"version", "msg", "splices"}, ...]}`, or
        a snapshot when the log no longer continues `version`; None while nothing is new."""
        if self.service.evidence_version != self._proofs_seen:  # a proof may have rewritten it
            self._proofs_seen = self.service.evidence_version
            if await self._log_rewritten(version):
                return await self._snapshot()
        _head, entries = await self._splices(version)
        if not entries:
            return None
        if not _continues(version, entries):
            return await self._snapshot()
        page: list[dict[str, Any]] = []
        size = 0
        for entry in entries:
            if page and size + _entry_size(entry) > PAGE_BYTES:
                break
            page.append(splice_entry(entry))
            size += _entry_size(entry)
        return [{"entries": page}], page[-1]["version"]

    async def _snapshot(self) -> Page:
        version, text = await self.service.read(
            lambda store: store.documents.document_snapshot(self.doc)
        )
        return snapshot_events(version, text), version

    async def _splices(self, version: int) -> tuple[int, list[Any]]:
        """The head version and up to `WATCH_ENTRIES` splice entries after `version`."""
        doc = self.doc
        return await self.service.read(
            lambda store: store.documents.document_splices(doc, version, WATCH_ENTRIES)
        )

    async def _log_rewritten(self, version: int) -> bool:
        """Whether the splice log after `version` fails to continue it."""
        while True:
            head, entries = await self._splices(version)
            if not _continues(version, entries) or (not entries and version != head):
                return True
            if not entries:
                return False
            version = entries[-1].version
