"""The margin of `/doc/ROOT`: its comments beside their ranges, and `/doc/ROOT/comments`.

Theory of operation
-------------------
The document page (node/web/docs.py) carries an `aside#comments`: a form to
comment on the text selected in the editor, and the list of comments
(docs/DOCUMENTS.md, "Comments") in the order of their ranges in the text,
each with the text it quotes (marked when all of it was deleted), who wrote
it, its replies and a box to answer it. view.js fills the list from
`/doc/ROOT/comments` (JSON: IPC `doc-comments`' page, ids as text, each
author's name and colour as the text's legend shows them) every
`POLL_SECONDS`, redrawing only when something changed and never under a
reply being typed; choosing a comment highlights its range in `#text`.
Comments and replies are written through `POST /api/doc-comment`
(node/web/actions.py), each with a `once` key.

Everything a person wrote reaches the page through `textContent` only.
"""

from __future__ import annotations

from typing import Any

from tanglenode.node.ipc.area import Area
from tanglenode.node.ipc.docs import doc_comments
from tanglenode.node.present.render import render_body
from tanglenode.node.web.doc_text import colour, label
from tanglenode.node.web.http import Request, Response, WebContext, json_response, not_found
from tanglenode.node.web.page import e
from tanglenode.protocol.doc_ipc import DocCommentsRequest
from tanglenode.protocol.document import MAX_COMMENT_BYTES
from tanglenode.storage.errors import SealedDocument, UnknownDocument

POLL_SECONDS = 3


def margin_html(link: str) -> str:
    """The `aside` the script fills from `link` (`/doc/ROOT/comments`)."""
    return (
        f"<aside id='comments' data-comments='{e(link)}' data-poll='{POLL_SECONDS}'>"
        "<h2>Comments <span id='comment-count'></span></h2>"
        "<form class='comment-form'><p class='muted'>Select text in the editor, then:</p>"
        f"<textarea name='text' rows='3' maxlength='{MAX_COMMENT_BYTES}' required></textarea>"
        "<p><button type='submit'>Comment on the selection</button> "
        "<output class='result' aria-live='polite'></output></p></form>"
        "<ol id='comment-list'></ol></aside>"
    )


async def comments(web: WebContext, request: Request, doc: bytes) -> Response:
    """`/doc/ROOT/comments`: the first page of the document's comments, as JSON."""
    try:
        page = await doc_comments(Area(web.service, web.keypair), DocCommentsRequest(doc, 0))
    except (UnknownDocument, SealedDocument):
        return not_found("no such document")
    names = await web.names()

    def person(entry: dict[str, Any]) -> dict[str, Any]:
        author = entry["author"]
        return render_body(entry) | {"name": label(names, author), "colour": colour(author)}

    shown = [
        person(comment) | {"replies": [person(reply) for reply in comment["replies"]]}
        for comment in page["comments"]
    ]
    return json_response({"comments": shown, "total": page["total"]})
