"""`/doc/ROOT/history`: every edit of one document, newest first, a page at a time.

Each row is a version of this node's numbering with the edit's author (by
name, in the colour the document page gives them), its claimed time, what
it inserted and deleted, and its id: the name every node gives that
version (`tangled doc show D --at %ID`, a short prefix will do). `start` is
the newest version a page shows (default: the last); the page links to the
next older one. The document page links here.
"""

from __future__ import annotations

from tanglenode.node.web import doc_paths as doc_pages
from tanglenode.node.web.doc_text import colour, label
from tanglenode.node.web.http import Request, Response, WebContext, html_response, not_found
from tanglenode.node.web.page import e, listing, shell, when
from tanglenode.protocol.identity import message_text
from tanglenode.protocol.limits import MAX_SEQ
from tanglenode.storage.errors import UnknownDocument

HISTORY_PAGE = 100  # versions per page


async def history(web: WebContext, request: Request, doc: bytes) -> Response:
    try:
        start = doc_pages.number(request.query, "start")
    except ValueError as error:
        return doc_pages.bad_request(error)
    service, names = web.service, await web.names()
    try:
        head, _entries = await service.read(
            lambda store: store.documents.document_splices(doc, MAX_SEQ, 0)
        )
    except UnknownDocument:
        return not_found("no such document")
    top = head if start is None else min(start, head)
    low = max(0, top - HISTORY_PAGE + 1)
    versions = await service.read(
        lambda store: store.documents.document_versions(doc, low, top - low + 1)
    )
    rows = []
    for version in reversed(versions):
        shared = message_text(version.msg_id)
        rows.append(
            f"<tr><td>v{version.number}</td><td><span style='background:"
            f"{colour(version.author)}'>{e(label(names, version.author))}</span></td>"
            f"<td>{e(when(version.timestamp))}</td>"
            f"<td>+{version.inserted} -{version.deleted}</td>"
            f"<td><code title='{e(shared)}'>{e(shared[:9])}…</code></td></tr>"
        )
    older = web.link(doc_pages.doc_path(doc, "history"), start=low - 1) if low else None
    body = (
        f"<h1>History</h1><p><a href='{e(web.link(doc_pages.doc_path(doc)))}'>the document"
        f"</a> · {head + 1} versions; each edit's id names its version on every node</p>"
        + listing("history", ["version", "by", "at", "change", "id"], rows, "None.", older)
    )
    return html_response(shell(web, "history", body))
