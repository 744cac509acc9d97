"""The document ops of the IPC protocol, sans-IO: their requests and checks, reply and event bodies.

Theory of operation
-------------------
The `doc-` ops (docs/IPC.md, "Documents") read and edit a document
(docs/DOCUMENTS.md) in code points, the way an editor holds text. Like
`protocol/ipc.py`, of which this is the document half, this module knows
the wire and nothing else:

- `DOC_PARSERS` checks every field of a `doc-` request before anything
  runs and gives one of the typed `Doc...Request` objects below;
  `protocol.ipc.parse_request` dispatches to it;
- a text longer than a frame holds is read in pages: `doc-show` with
  `start` and `limit` (code points, at most `SHOW_CHARS` a page) answers
  that slice of the revision, with its `length` and the `next` page's
  start; a reader names the first page's `weft` as the `at` of the next
  ones, so every page is of one revision whatever lands between them
  (`show_page` cuts it);
- `revision` reads a revision (`at`, `from`, `to`): a message id, a
  version number or a weft; `splices` reads a `doc-edit`'s splices, whose
  bounds (`MAX_SPLICES`, `MAX_SPLICE_CHARS`) a client cuts a long edit by;
  a `doc-edit`'s `base` is the revision its splices were made against
  (they merge with what happened since; with `exclusive`, the node refuses
  them with `conflict` once the document has moved past it);
- the `..._body` functions, `splice_entry` and `snapshot_events` encode
  what goes out: they read storage/documents/engine.py's records by attribute
  (protocol imports no storage);
- `apply_splices` is what a `doc-watch` client does with the splices it gets.

`node/ipc/docs.py` serves these ops on the store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from tanglenode.protocol.doc_link import BadLink, Link, parse_link
from tanglenode.protocol.ipc_fields import PAGE, bad, count, message_id, short
from tanglenode.protocol.limits import MAX_SEQ, Limits

# A title's bound (protocol.document checks the rest), and
# what one `doc-edit` may carry: a longer edit is sent as several requests, in order.
MAX_TITLE_BYTES = 200
MAX_SPLICES = 1024  # splices per doc-edit (the engine replays them in O(splices²))
MAX_SPLICE_CHARS = 1 << 18  # code points inserted per doc-edit (at most 1 MiB of UTF-8)
MAX_POSITION = 2**32 - 1  # a splice's position or length, in code points
MAX_WEFT_FEEDS = 65_536  # feeds of a weft given as `at`, `from` or `to`
MAX_DOCUMENTS_PAGE = 1000  # documents per doc-list reply
MAX_VERSIONS_PAGE = 10_000  # versions per doc-log reply: ~1 MiB
SET_ASIDE_SHOWN = 100  # set-aside messages listed by doc-log; the rest are counted
REPLIES_SHOWN = 100  # replies of one comment a doc-comments reply lists; the rest are counted
QUOTE_SHOWN = 4000  # code points of a comment's range a doc-comments reply quotes
SNAPSHOT_CHARS = 1 << 18  # code points per doc-watch snapshot event (at most 1 MiB)
SHOW_CHARS = 1 << 18  # code points per doc-show page at most (at most 1 MiB of UTF-8)
DOC_STREAMING = frozenset({"doc-watch"})  # the document ops that stream


# A revision of a document on the wire (`at`, `from`, `to`): a message id, a version
# number, or a weft (feed -> seq); None for the processed frontier.
At = bytes | int | dict[bytes, int] | None
Splice = tuple[str, int, str] | tuple[str, int, int]  # ("ins", pos, text) | ("del", pos, length)


@dataclass(frozen=True, slots=True)
class DocCreateRequest:
    title: str
    group: bytes | None = None  # the group the document is private to; None: public


@dataclass(frozen=True, slots=True)
class DocEditRequest:
    doc: bytes
    splices: tuple[Splice, ...]  # in order, each against the text the ones before it left
    base: At = None  # the revision the splices were made against; None: the current text
    exclusive: bool = False  # refuse (`conflict`) rather than merge once past `base`


@dataclass(frozen=True, slots=True)
class DocListRequest:
    start: int
    limit: int


@dataclass(frozen=True, slots=True)
class DocShowRequest:
    doc: bytes
    at: At
    start: int = 0  # a page's first code point
    limit: int | None = None  # a page's code points, 1 .. SHOW_CHARS; None: the whole text


@dataclass(frozen=True, slots=True)
class DocLogRequest:
    doc: bytes
    since: int
    limit: int


@dataclass(frozen=True, slots=True)
class DocDiffRequest:
    doc: bytes
    old: At  # `from` on the wire
    new: At  # `to` on the wire (nil: the frontier)


@dataclass(frozen=True, slots=True)
class DocBlameRequest:
    doc: bytes
    at: At


@dataclass(frozen=True, slots=True)
class DocWatchRequest:
    doc: bytes
    since: int | None  # None: start from a snapshot


@dataclass(frozen=True, slots=True)
class DocPresenceRequest:
    doc: bytes
    start: int  # code points of the current text: a selection start .. end, the caret at end
    end: int


@dataclass(frozen=True, slots=True)
class DocLinkRequest:
    doc: bytes
    start: int  # code points of the current text, end exclusive
    end: int


@dataclass(frozen=True, slots=True)
class DocResolveRequest:
    link: Link


@dataclass(frozen=True, slots=True)
class DocCommentRequest:
    """A comment on `doc`'s code points `start` .. `end` - 1, on the range `link` names,
    or a reply to comment `reply`: exactly one of the three."""

    text: str
    doc: bytes | None = None
    start: int = 0
    end: int = 0
    link: Link | None = None
    reply: bytes | None = None


@dataclass(frozen=True, slots=True)
class DocIncludeRequest:
    doc: bytes
    at: int  # code points of `doc`'s text now before the inclusion
    link: Link  # the range of another document


@dataclass(frozen=True, slots=True)
class DocRenderRequest:
    doc: bytes


@dataclass(frozen=True, slots=True)
class DocCommentsRequest:
    doc: bytes
    start: int  # the first comment of the page (in text order)


DocRequest = (
    DocCreateRequest
    | DocEditRequest
    | DocListRequest
    | DocShowRequest
    | DocLogRequest
    | DocDiffRequest
    | DocBlameRequest
    | DocWatchRequest
    | DocLinkRequest
    | DocPresenceRequest
    | DocResolveRequest
    | DocCommentRequest
    | DocCommentsRequest
    | DocIncludeRequest
    | DocRenderRequest
)


# -- fields --------------------------------------------------------------------------------


def _doc(fields: dict[str, Any]) -> bytes:
    return message_id(fields, "doc", "doc (its doc/init id)")


def revision(fields: dict[str, Any], key: str) -> At:
    """`key` as a document revision: a message id, a version number or a weft; nil: now."""
    value = fields.get(key)
    kind = type(value)
    if value is None or (kind is bytes and len(value) == 32):
        return cast(At, value)
    if kind is int and 0 <= value <= MAX_SEQ:
        return cast(At, value)
    if (
        kind is dict
        and len(value) <= MAX_WEFT_FEEDS
        and all(
            type(feed) is bytes and len(feed) == 32 and type(seq) is int and 0 <= seq <= MAX_SEQ
            for feed, seq in value.items()
        )
    ):
        return cast(At, value)
    raise bad(
        f"{key} is a message id (32 bytes), a version number, or a weft"
        f" (at most {MAX_WEFT_FEEDS} feeds: 32-byte key -> seq)"
    )


def splices(fields: dict[str, Any]) -> tuple[Splice, ...]:
    """`splices`: 1 to `MAX_SPLICES` of ["ins", pos, text] and ["del", pos, length]."""
    value = fields.get("splices")
    if type(value) is not list or not 0 < len(value) <= MAX_SPLICES:
        raise bad(f"splices is a list of 1 to {MAX_SPLICES} splices")
    parsed: list[Splice] = []
    inserted = 0
    for number, splice in enumerate(value):
        if (
            type(splice) is not list
            or len(splice) != 3
            or splice[0] not in ("ins", "del")
            or type(splice[1]) is not int
            or not 0 <= splice[1] <= MAX_POSITION
        ):
            raise bad(
                f'splice {number} is not ["ins", pos, text] or ["del", pos, length]'
                f" (pos an integer from 0 to {MAX_POSITION})"
            )
        kind, pos, what = splice
        if kind == "ins":
            if type(what) is not str or not what:
                raise bad(f"splice {number}: an insert's text is a string of 1 code point or more")
            inserted += len(what)
            if inserted > MAX_SPLICE_CHARS:
                raise bad(f"splices insert more than {MAX_SPLICE_CHARS} code points")
        elif type(what) is not int or not 0 < what <= MAX_POSITION:
            raise bad(f"splice {number}: a delete's length is an integer from 1 to {MAX_POSITION}")
        parsed.append((kind, pos, what))
    return tuple(parsed)


# -- one parser per op ---------------------------------------------------------------------


def _doc_create(fields: dict[str, Any], limits: Limits) -> DocCreateRequest:
    title = fields.get("title")
    if (
        type(title) is not str
        or not title
        or len(title) > MAX_TITLE_BYTES
        or len(title.encode("utf-8", "surrogatepass")) > MAX_TITLE_BYTES
    ):
        raise bad(f"a document's title is text of 1 to {MAX_TITLE_BYTES} bytes")
    group = None if fields.get("group") is None else message_id(fields, "group", "a group id")
    return DocCreateRequest(title, group)  # its other rules (no control characters): the engine's


def _doc_edit(fields: dict[str, Any], limits: Limits) -> DocEditRequest:
    exclusive = fields.get("exclusive", False)
    if type(exclusive) is not bool:
        raise bad("exclusive is true or false")
    return DocEditRequest(_doc(fields), splices(fields), revision(fields, "base"), exclusive)


def _doc_list(fields: dict[str, Any], limits: Limits) -> DocListRequest:
    start = count(fields, "start", 0)
    return DocListRequest(start, count(fields, "limit", MAX_DOCUMENTS_PAGE, MAX_DOCUMENTS_PAGE))


def _doc_show(fields: dict[str, Any], limits: Limits) -> DocShowRequest:
    """The whole text, or with `start` or `limit` a page of it (`limit` over `SHOW_CHARS`
    is lowered to it; nil: `SHOW_CHARS`)."""
    doc, at = _doc(fields), revision(fields, "at")
    if fields.get("start") is None and fields.get("limit") is None:
        return DocShowRequest(doc, at)
    start, limit = count(fields, "start", 0), count(fields, "limit", SHOW_CHARS, SHOW_CHARS)
    if not limit:
        raise bad(f"limit is a page's code points: 1 to {SHOW_CHARS}")
    return DocShowRequest(doc, at, start, limit)


def _doc_log(fields: dict[str, Any], limits: Limits) -> DocLogRequest:
    doc, since = _doc(fields), count(fields, "since", 0)
    return DocLogRequest(doc, since, count(fields, "limit", PAGE, MAX_VERSIONS_PAGE))


def _doc_diff(fields: dict[str, Any], limits: Limits) -> DocDiffRequest:
    doc = _doc(fields)
    if fields.get("from") is None:
        raise bad("from is a message id, a version number or a weft")
    return DocDiffRequest(doc, revision(fields, "from"), revision(fields, "to"))


def _doc_blame(fields: dict[str, Any], limits: Limits) -> DocBlameRequest:
    return DocBlameRequest(_doc(fields), revision(fields, "at"))


def _doc_watch(fields: dict[str, Any], limits: Limits) -> DocWatchRequest:
    doc = _doc(fields)
    since = None if fields.get("since") is None else count(fields, "since", 0)
    return DocWatchRequest(doc, since)


def _doc_link(fields: dict[str, Any], limits: Limits) -> DocLinkRequest:
    doc, start, end = _doc(fields), count(fields, "start", 0), count(fields, "end", 0)
    if end <= start:
        raise bad("a link's range ends after it starts: start < end")
    return DocLinkRequest(doc, start, end)


def _doc_presence(fields: dict[str, Any], limits: Limits) -> DocPresenceRequest:
    doc, start, end = _doc(fields), count(fields, "start", 0), count(fields, "end", 0)
    if end < start:
        raise bad("a selection ends where it starts or after: start <= end")
    return DocPresenceRequest(doc, start, end)


def _doc_resolve(fields: dict[str, Any], limits: Limits) -> DocResolveRequest:
    try:
        return DocResolveRequest(parse_link(fields.get("link")))
    except BadLink as error:
        raise bad(str(error)) from None


def _doc_comment(fields: dict[str, Any], limits: Limits) -> DocCommentRequest:
    text = fields.get("text")
    if type(text) is not str:
        raise bad("text is the comment's text")
    forms = [name for name in ("start", "link", "reply") if fields.get(name) is not None]
    if len(forms) != 1:
        raise bad("a comment names one of: doc with start and end, a link, or the reply's comment")
    if forms == ["link"]:
        return DocCommentRequest(text, link=_doc_resolve(fields, limits).link)
    if forms == ["reply"]:
        return DocCommentRequest(text, reply=message_id(fields, "reply", "reply (a comment id)"))
    found = _doc_link(fields, limits)
    return DocCommentRequest(text, found.doc, found.start, found.end)


def _doc_comments(fields: dict[str, Any], limits: Limits) -> DocCommentsRequest:
    return DocCommentsRequest(_doc(fields), count(fields, "start", 0))


def _doc_include(fields: dict[str, Any], limits: Limits) -> DocIncludeRequest:
    if fields.get("at") is None:
        raise bad("at is where the range goes: code points of the text before it")
    doc, at = _doc(fields), count(fields, "at", 0)
    return DocIncludeRequest(doc, at, _doc_resolve(fields, limits).link)


def _doc_render(fields: dict[str, Any], limits: Limits) -> DocRenderRequest:
    return DocRenderRequest(_doc(fields))


# Every document op, by its name on the wire.
DOC_PARSERS: dict[str, Callable[[dict[str, Any], Limits], DocRequest]] = {
    "doc-create": _doc_create,
    "doc-edit": _doc_edit,
    "doc-list": _doc_list,
    "doc-show": _doc_show,
    "doc-log": _doc_log,
    "doc-diff": _doc_diff,
    "doc-blame": _doc_blame,
    "doc-watch": _doc_watch,
    "doc-link": _doc_link,
    "doc-presence": _doc_presence,
    "doc-resolve": _doc_resolve,
    "doc-comment": _doc_comment,
    "doc-comments": _doc_comments,
    "doc-include": _doc_include,
    "doc-render": _doc_render,
}


# -- documents: bodies of replies and doc-watch events ----------------------------------------
# The arguments are storage/documents/engine.py's records, read by attribute (protocol imports no
# storage): DocumentInfo, Version, DyeSpan, BlameSpan, SpliceEntry.


def document_body(info: Any) -> dict[str, Any]:
    """One `doc-list` entry."""
    return {
        "doc": info.id,
        "title": info.title,
        "author": info.author,
        "created": info.created,
        "length": info.length,
        "versions": info.versions,
        "set_aside": info.set_aside,
        "group": info.group,  # nil: a public document
    }


def show_page(text: str, start: int, limit: int) -> dict[str, Any]:
    """Code points `start` .. `start + limit - 1` of a revision's `text`, as a `doc-show`
    page: `{text, start, length, next}`, `length` the whole text's and `next` the start of
    the page after (nil after the last; a `start` past the end is an empty last page)."""
    end = min(start + limit, len(text))
    return {
        "text": text[start:end],
        "start": start,
        "length": len(text),
        "next": end if end < len(text) else None,
    }


def comment_body(comment: Any) -> dict[str, Any]:
    """A comment (storage.documents.comments.Comment) in a doc-comments reply."""
    quote = comment.quote[:QUOTE_SHOWN]
    return {
        "comment": comment.id,
        "author": comment.author,
        "timestamp": comment.timestamp,
        "text": comment.text,
        "link": comment.link.text(),
        "quote": quote,
        "quote_cut": len(quote) < comment.length,
        "start": comment.start,
        "length": comment.length,  # code points: the range's length now, or the deleted text's
        "deleted": comment.deleted,
        "replies": [
            {"reply": r.id, "author": r.author, "timestamp": r.timestamp, "text": r.text}
            for r in comment.replies[:REPLIES_SHOWN]
        ],
        "replies_total": len(comment.replies),
    }


def part_body(part: Any) -> dict[str, Any]:
    """A piece of a rendering (storage.documents.transclusion.Part) in a doc-render reply."""
    body: dict[str, Any] = {"kind": part.kind, "text": part.text}
    if part.source is not None:
        body |= {"doc": part.source.doc, "link": part.source.text(), "author": part.author}
    if part.kind == "included":
        body["parts"] = [part_body(inner) for inner in part.parts]
    return body


def version_body(version: Any) -> dict[str, Any]:
    """One `doc-log` version: its number, message, author, time and counts."""
    return {
        "version": version.number,
        "msg": version.msg_id,
        "author": version.author,
        "timestamp": version.timestamp,
        "inserted": version.inserted,
        "deleted": version.deleted,
    }


def set_aside_body(msg_id: bytes, reason: str, detail: str) -> dict[str, Any]:
    """A message the document set aside, with its reason code (docs/DOCUMENTS.md)."""
    return {"msg": msg_id, "reason": str(reason), "detail": short(detail)}


def dye_body(span: Any) -> dict[str, Any]:
    """One `doc-diff` span: text, who inserted it and who removed it (nil: neither)."""
    return {"text": span.text, "inserted_by": span.inserted_by, "removed_by": span.removed_by}


def blame_body(span: Any) -> dict[str, Any]:
    """One `doc-blame` span: text, its author and the message that typed it; for the atoms
    of an erased edit (text ""), `erased`: the erase request's id (b"" for this node's
    purge) and `atoms`: how many (docs/DOCUMENTS.md, "Erased edits")."""
    body = {"text": span.text, "author": span.author, "msg": span.msg_id}
    if span.erased is not None:
        body["erased"], body["atoms"] = span.erased, span.erased_atoms
    return body


def splice_entry(entry: Any) -> dict[str, Any]:
    """One version of a `doc-watch` page: `{"version", "msg", "splices"}`."""
    return {
        "version": entry.version,
        "msg": entry.msg_id,
        "splices": [list(splice) for splice in entry.splices],
    }


def snapshot_events(version: int, text: str) -> list[dict[str, Any]]:
    """The text at `version` as `doc-watch` events of `SNAPSHOT_CHARS` code points each:
    `{"version", "text", "start"}`; the one with start 0 replaces the text, the others append."""
    return [
        {"version": version, "text": text[start : start + SNAPSHOT_CHARS], "start": start}
        for start in range(0, max(len(text), 1), SNAPSHOT_CHARS)
    ]


def apply_splices(text: str, splices: Any) -> str:
    """`text` after `splices` (["ins", pos, text] | ["del", pos, length], in order), as a
    `doc-watch` client keeps its copy; `ValueError` for a splice outside the text."""
    for kind, pos, what in splices:
        if kind == "ins" and 0 <= pos <= len(text):
            text = text[:pos] + what + text[pos:]
        elif kind == "del" and pos >= 0 and pos + what <= len(text):
            text = text[:pos] + text[pos + what :]
        else:
            raise ValueError(f"splice {kind} {pos} outside a text of {len(text)} code points")
    return text
