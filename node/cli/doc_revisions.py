"""Naming a revision of a document on the command line (`--at`, `--base`, FROM, TO).

A revision is a message id as printed (`%...`: the text just after that edit,
the same on every node), cut short to at least four characters after the `%`
when one version's id starts so (`resolve_at`, which asks the document; a
trailing `…` as printed is dropped); a weft
`@FEED=SEQ,...`; this node's own version number (`v12` or `12`); or `now`
(`head`): the current text (docs/DOCUMENTS.md, "Edits from a base").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from tanglenode.node.cli.support import Ambiguous, BadInput, NotFound
from tanglenode.protocol.doc_ipc import MAX_VERSIONS_PAGE
from tanglenode.protocol.identity import message_text, parse_feed, parse_message_id
from tanglenode.protocol.ipc_resolve import MAX_CANDIDATES, MIN_PREFIX_CHARS

VERSION = re.compile(r"v?(\d{1,19})")
NOW = ("now", "head")  # the current text, where a revision is asked for


def parse_at(text: str) -> Any:
    """A revision as the wire names it: a message id, a version number, or a weft; None for
    `now` (or `head`): the current text. A short message id (`%` and at least
    `MIN_PREFIX_CHARS` of its characters) is looked up in the document by `resolve_at`."""
    text = text.strip()
    if text.lower() in NOW:
        return None
    if text.startswith("%"):
        text = text.removesuffix("…").removesuffix("...")
    if text.startswith("%") and len(text) < MESSAGE_ID_CHARS:
        if len(text) < 1 + MIN_PREFIX_CHARS:
            raise BadInput(
                f"{text!r}: a short message id needs at least {MIN_PREFIX_CHARS} characters after %"
            )
        return ShortId(text)
    if text.startswith("%"):
        return parse_message_id(text)
    if match := VERSION.fullmatch(text):
        return int(match.group(1))
    if "=" in text:
        weft: dict[bytes, int] = {}
        for part in text.split(","):
            feed, sep, seq = part.strip().rpartition("=")
            if not sep or not seq.isdigit():
                raise BadInput(f"{part[:80]!r}: a weft is @FEED=SEQ,... (feeds as printed)")
            weft[parse_feed(feed)] = int(seq)
        return weft
    raise BadInput(f"{text[:80]!r}: expected a message id (%...), a version (v12) or @FEED=SEQ,...")


MESSAGE_ID_CHARS = 44  # `%` and 43 characters of base64


class ShortId(str):
    """A message id cut short, as `doc log` users copy them: found among the document's."""


def resolve_at(call: Callable[..., Any], doc: bytes, at: Any) -> Any:
    """`at`, with a short id made the one message id of `doc` it starts; `NotFound` when
    no version's id starts so, `Ambiguous` (listing them) when several do."""
    if not isinstance(at, ShortId):
        return at
    found, since = [], 0
    while True:
        page = call("doc-log", doc=doc, since=since, limit=MAX_VERSIONS_PAGE)["versions"]
        found += [v["msg"] for v in page if message_text(v["msg"]).startswith(at)]
        if len(page) < MAX_VERSIONS_PAGE:
            break
        since = page[-1]["version"] + 1
    if not found:
        raise NotFound(f"{at}: no version of {message_text(doc)} has an id starting so")
    if len(found) > 1:
        listed = ", ".join(message_text(msg) for msg in found[:MAX_CANDIDATES])
        more = f" and {len(found) - MAX_CANDIDATES} more" if len(found) > MAX_CANDIDATES else ""
        raise Ambiguous(f"{at} names several versions: {listed}{more}; give more of the id")
    return found[0]
