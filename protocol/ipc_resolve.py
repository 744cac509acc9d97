"""The `resolve` op's half of the IPC protocol, sans-IO: names people type, to ids.

What the CLI prints, it accepts back (docs/IPC.md, "Wire", its row): a
message id cut short (`%AbCd`), a feed id cut short (`@AbCdEfGh…`), the name a
feed chose itself (`~alice`) and a document's title. Only the store can say
which ids they stand for, so the CLI asks with `resolve`, whether the node
runs or not:

    {"op": "resolve", "kind": KIND, "text": TEXT}

`kind` is one of `RESOLVE_KINDS`:

- `message`: `text` is the start of a message id's base64url text, without the
  `%` (at least `MIN_PREFIX_CHARS`, at most 43 characters); the messages held
  (or held as fork evidence) whose id starts so;
- `feed`: the same for a feed id, without the `@`; the feeds held;
- `name`: the feeds whose own latest `about` names them `text` (without `~`);
  those named exactly so, else those named so but for case;
- `title`: the documents titled `text`, exactly, else but for case.

The reply is `{"found": [{"id"[, "title"]}], "more"}`: at most
`MAX_CANDIDATES` (in id order for the prefixes, in the order documents were
woven for titles; each title as the document has it), `more` true when
there were others. What to do with none, one or several is the asker's.
The parser joins `protocol.ipc.PARSERS`; the handler is `node/ipc/resolve.py`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tanglenode.protocol.errors import BadIdentifier
from tanglenode.protocol.identity import ID_CHARS, parse_feed, prefix_range
from tanglenode.protocol.ipc_fields import bad
from tanglenode.protocol.limits import Limits

RESOLVE_KINDS = ("message", "feed", "name", "title")
MIN_PREFIX_CHARS = 4  # 24 bits: one in 16 million ids share them
MAX_CANDIDATES = 10  # ids a reply lists; `more` says there were others
MAX_NAME_BYTES = 200  # a name or title asked for (titles are at most 200 bytes, names 40 chars)


@dataclass(frozen=True, slots=True)
class ResolveRequest:
    kind: str  # one of RESOLVE_KINDS
    text: str  # a prefix without its sigil, a self-chosen name without `~`, or a title
    low: bytes = b""  # a prefix's ids, from `low` to `high` inclusive
    high: bytes = b""


def _resolve(fields: dict[str, Any], limits: Limits) -> ResolveRequest:
    kind, text = fields.get("kind"), fields.get("text")
    if kind not in RESOLVE_KINDS:
        raise bad(f"kind is one of {', '.join(RESOLVE_KINDS)}")
    if type(text) is not str:
        raise bad("text is a string")
    if kind in ("message", "feed"):
        try:
            if len(text) < MIN_PREFIX_CHARS:
                raise BadIdentifier("too short")
            if len(text) == ID_CHARS:  # a whole id: is it held?
                low = high = parse_feed("@" + text)  # both kinds of id are 32 bytes so
            else:
                low, high = prefix_range(text)
        except BadIdentifier:
            raise bad(
                f"text is the start of an id without its sigil: {MIN_PREFIX_CHARS} to "
                f"{ID_CHARS} base64url characters"
            ) from None
        return ResolveRequest(kind, text, low, high)
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:  # a lone surrogate names nothing
        size = 0
    if not 0 < size <= MAX_NAME_BYTES:
        raise bad(f"text is a name or title: 1 to {MAX_NAME_BYTES} bytes of UTF-8 text")
    return ResolveRequest(kind, text)


RESOLVE_PARSERS: dict[str, Callable[[dict[str, Any], Limits], ResolveRequest]] = {
    "resolve": _resolve,
}
