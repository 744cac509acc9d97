"""Links into a document's text: a range named by the atoms at its ends.

Theory of operation
-------------------
An atom's id, (message id, index), never changes and never leaves the
weave (a deleted atom stays, hidden): so a range named by its first and
last atoms survives every later edit. Resolved at any revision, it is the
text of the atoms between those two in the weave, inclusive, that the
revision shows: whatever was typed inside the range since is in it,
whatever was typed before its first atom or after its last is not
(docs/DOCUMENTS.md, "Links"). The link also names the revision it was
taken at (the id of the last edit the linking node had woven), so that
text deleted since can still be shown as it read.

A link is one word, safe to paste into a message or a URL:

    tangled:link/DOC/FIRST.I/LAST.J/AT

each of DOC, FIRST, LAST and AT a message id without its `%` (43
characters of base64url), I and J atom indexes (decimal, no sign, no
leading zero).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tanglenode.protocol.errors import BadIdentifier
from tanglenode.protocol.identity import message_text, parse_message_id

PREFIX = "tangled:link/"
MAX_INDEX = 2**32 - 1
_ID = r"[A-Za-z0-9_-]{43}"
_INDEX = r"(?:0|[1-9][0-9]{0,9})"
_LINK = re.compile(rf"tangled:link/({_ID})/({_ID})\.({_INDEX})/({_ID})\.({_INDEX})/({_ID})")


class BadLink(BadIdentifier):
    """Text that is not a link of this form."""


@dataclass(frozen=True, slots=True)
class Link:
    doc: bytes
    first: tuple[bytes, int]  # (message id, index) of the range's first atom
    last: tuple[bytes, int]  # ... and of its last, inclusive
    at: bytes  # the edit (or the doc/init) the linking node had woven last

    def text(self) -> str:
        def atom(ref: tuple[bytes, int]) -> str:
            return f"{message_text(ref[0])[1:]}.{ref[1]}"

        return (
            f"{PREFIX}{message_text(self.doc)[1:]}/{atom(self.first)}/{atom(self.last)}/"
            f"{message_text(self.at)[1:]}"
        )


def parse_link(text: object) -> Link:
    """The `Link` `text` spells, or `BadLink` saying why not."""
    if not isinstance(text, str) or len(text) > 400:
        raise BadLink("a link is text: tangled:link/DOC/FIRST.I/LAST.J/AT")
    found = _LINK.fullmatch(text.strip())
    if found is None:
        raise BadLink(f"not a link: {text[:80]!r} (tangled:link/DOC/FIRST.I/LAST.J/AT)")
    doc, first, i, last, j, at = found.groups()
    if int(i) > MAX_INDEX or int(j) > MAX_INDEX:
        raise BadLink("an atom index is at most 2**32 - 1")
    try:
        ids = [parse_message_id("%" + part) for part in (doc, first, last, at)]
    except BadIdentifier as error:
        raise BadLink(str(error)) from None
    return Link(ids[0], (ids[1], int(i)), (ids[2], int(j)), ids[3])
