"""A document's text as the `doc` commands read it: whole, however long, of one revision.

Theory of operation
-------------------
A `doc-show` reply is one frame, at most 4 MiB (docs/IPC.md), so a command
never asks for a text in one reply: it reads pages (`start`, `limit`: code
points, at most `SHOW_CHARS` a page, about 1 MiB) until `next` is nil. The
first page is read at the revision asked for (None: the text now) and names
it exactly (`weft`); every next page asks `at` that weft, so each page is a
slice of that one revision, and an edit woven between two requests changes
none of them: the text is never torn. The version is the first page's (the
node's, for the text now).

A weft stops naming a text only when a proof removes a message it names
(docs/DOCUMENTS.md): the node then answers the next page `not-found`, since
it no longer holds that revision. The reader starts again from the first
page, at most `TRIES` times (a forker whose proofs keep coming), then says
why. A page of another `length` than the first's is met the same way.

`call(op, **arguments)` is `Backend.call`: the running node over its socket,
or the node's handlers on the store opened here, page by page alike. A
node from before pages answers the first request with the whole text, and
no `next`: the reader takes it as the last page.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tanglenode.node.cli.support import NotFound
from tanglenode.node.ipc.oneshot import NodeError
from tanglenode.protocol.doc_ipc import SHOW_CHARS
from tanglenode.protocol.ipc_fields import ErrorKind

TRIES = 3  # reads from the first page, while proofs remove what the revision named


class RevisionLost(NotFound):
    """The revision being read stopped being one this node holds, try after try (exit 4)."""


def read_text(
    call: Callable[..., Any], doc: bytes, at: Any = None, page: int = SHOW_CHARS
) -> dict[str, Any]:
    """`{version, text, weft}` of `doc` at revision `at` (None: now), the whole text read
    page by page from one revision (see the module's docstring); `page` code points a
    request."""
    for _try in range(TRIES):
        first = call("doc-show", doc=doc, at=at, start=0, limit=page)
        parts, following = [first["text"]], first.get("next")  # none: a node before pages
        try:
            while following is not None:
                shown = call("doc-show", doc=doc, at=first["weft"], start=following, limit=page)
                if shown["length"] != first["length"]:
                    raise NotFound("the revision's text changed length between pages")
                parts.append(shown["text"])
                following = shown["next"]
        except (NotFound, NodeError) as error:  # as `Backend.call` translates it, or not
            if isinstance(error, NodeError) and error.kind != ErrorKind.NOT_FOUND:
                raise
            continue  # a proof removed a message the weft names: read the revision again
        return {"version": first["version"], "text": "".join(parts), "weft": first["weft"]}
    raise RevisionLost(
        f"the revision of the document kept changing while its text was read ({TRIES} tries): "
        "proofs removed messages it named; run it again"
    )


def revision_weft(call: Callable[..., Any], doc: bytes, at: Any = None) -> Any:
    """The weft naming revision `at` of `doc` (None: now), read without its text."""
    return call("doc-show", doc=doc, at=at, start=0, limit=1)["weft"]
