"""A document's text as the web pages show it: runs by author, colours, readable characters.

Theory of operation
-------------------
`/doc/ROOT` (node/web/docs.py) and its event stream (node/web/doc_events.py)
both show the text as runs of one author each. `blamed_snapshot` gives the
version and those runs at the processed frontier. The blame and the text are
two reads: it reads the text (with its version) around the blame and takes
the blame only when its text is the text of that version, so the splices that
follow apply to what the browser holds. A document that changes between every
read gets its text without colours rather than a wrong one. An author's colour
is a hash of the key, the same on every page and node; the text's control and
format characters show as `?`, one for one, so positions hold.
"""

from __future__ import annotations

import hashlib
from typing import Any

from tanglenode.node.present.names import Names
from tanglenode.node.present.text import safe, safe_lines
from tanglenode.node.service.store_service import StoreService
from tanglenode.protocol.identity import feed_text

SNAPSHOT_TRIES = 3  # blame reads that may meet a changing document before colours are dropped
UNKNOWN_COLOUR = "#e4e4ea"  # text whose author is not known (a snapshot without blame)

Run = tuple[str, bytes | None]  # a run of text and who typed it (None: not known)


def colour(author: bytes | None) -> str:
    """A light background, the same for an author on every page and every node."""
    if author is None:
        return UNKNOWN_COLOUR
    hue = int.from_bytes(hashlib.blake2b(author, digest_size=2).digest(), "big") % 360
    return f"hsl({hue},70%,86%)"


def author_body(author: bytes | None, names: Names) -> dict[str, Any]:
    """An author as frames and JSON replies carry it: id, name to show, colour."""
    if author is None:
        return {"author": None, "name": "unknown", "colour": UNKNOWN_COLOUR}
    return {"author": feed_text(author), "name": label(names, author), "colour": colour(author)}


def label(names: Names, author: bytes) -> str:
    """An author's name as the pages show it: unsafe characters as `?` (node/present/text.py)."""
    return safe(names.label(author))


def readable(text: str) -> str:
    """Document text as the pages show it (node/present/text.py `safe_lines`): each control,
    format (bidi, zero-width) or private-use character as `?`, one for one."""
    return safe_lines(text)


async def blamed_snapshot(service: StoreService, doc: bytes) -> tuple[int, list[Run]]:
    """The frontier's version and its text in runs by author (see the module docstring);
    `UnknownDocument` if the store holds no such document."""
    for _try in range(SNAPSHOT_TRIES):
        version, text = await service.read(lambda store: store.documents.document_snapshot(doc))
        spans = await service.read(lambda store: store.documents.document_blame(doc, None))
        if "".join(span.text for span in spans) == text:
            return version, merge_runs((span.text, span.author) for span in spans)
    return version, [(text, None)] if text else []


def merge_runs(runs) -> list[Run]:
    """Adjacent runs of one author as one (each text joined once: no quadratic copying)."""
    pieces: list[tuple[list[str], bytes | None]] = []
    for text, author in runs:
        if pieces and pieces[-1][1] == author:
            pieces[-1][0].append(text)
        elif text:
            pieces.append(([text], author))
    return [("".join(texts), author) for texts, author in pieces]
