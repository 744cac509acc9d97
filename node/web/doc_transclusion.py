"""The document page's rendering with the ranges it includes, and `/doc/ROOT/rendered`.

Theory of operation
-------------------
A document's own text is what `#text` and the editor show (positions count
its code points); the ranges of other documents it includes
(docs/DOCUMENTS.md, "Transclusion") are shown apart, in `section#rendered`:
the text with each inclusion in place, marked and titled with the document
it comes from, and what cannot be followed (a cycle, a private document this
node cannot open, ...) as a marked word saying why. view.js fills it from
`/doc/ROOT/rendered` (JSON: IPC `doc-render`'s parts, ids as text) every
`POLL_SECONDS`, redrawing when it changed, so an included range follows its
document's edits. The section's form includes a range (a link, from `doc
link` or another page) at the editor's caret, through `POST /api/doc-include`.

Everything a person wrote reaches the page through `textContent` only.
"""

from __future__ import annotations

from tanglenode.node.ipc.area import Area
from tanglenode.node.ipc.docs import doc_render
from tanglenode.node.present.render import render_body
from tanglenode.node.web.http import Request, Response, WebContext, json_response, not_found
from tanglenode.node.web.page import e
from tanglenode.protocol.doc_ipc import DocRenderRequest
from tanglenode.storage.errors import SealedDocument, UnknownDocument

POLL_SECONDS = 3


def rendered_html(link: str) -> str:
    """The section the script fills from `link` (`/doc/ROOT/rendered`)."""
    return (
        f"<section id='rendered' data-rendered='{e(link)}' data-poll='{POLL_SECONDS}'>"
        "<h2>With the ranges it includes</h2>"
        "<div id='rendered-text' class='muted'>It includes no range of another document.</div>"
        "<form class='include-form'><input name='link' required maxlength='400' "
        "placeholder='tangled:link/…' autocomplete='off'> "
        "<button type='submit'>Include at the editor's caret</button> "
        "<output class='result' aria-live='polite'></output></form></section>"
    )


async def rendered(web: WebContext, request: Request, doc: bytes) -> Response:
    """`/doc/ROOT/rendered`: the document with its inclusions in place, as JSON."""
    try:
        found = await doc_render(Area(web.service, web.keypair), DocRenderRequest(doc))
    except (UnknownDocument, SealedDocument):
        return not_found("no such document")
    return json_response(render_body(found))
