"""The IPC protocol, sans-IO: request shapes and their checks, reply and event bodies, error kinds.

Theory of operation
-------------------
The wire is docs/IPC.md: a client sends frames `{"op": NAME, "id": N,
...arguments}`; each gets `{"id": N, "ok": RESULT}` or `{"id": N, "error":
{"kind", "message"[, "reason"]}}`, and a stream op then sends `{"id": N,
"event": EVENT}` frames. This module knows that wire and nothing else, like
h11 knows HTTP: it neither reads a socket nor a store.

- `request_header(frame)` gives a frame's request id and op, or refuses
  the frame as a whole (the reply then carries no id);
- `parse_request(op, frame, limits)` checks every field of that op before
  anything runs and returns one of the typed `...Request` objects below;
  each refusal is a `RequestError` whose `kind` is an `ErrorKind`;
- `message_body`, `bounded_content`, `insert_command`, `move_command`,
  `delete_command`, the `doc_...` bodies and `error_reply` encode what goes out;
- `apply_splices` is what a `doc-watch` client does with the splices it gets.

`node/ipc.py` moves the frames, dispatches each typed request through its
table of handlers, reads the store and maps the errors it raises to an
`ErrorKind`, in one place.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tanglenode.protocol.address import BadAddress, parse_address
from tanglenode.protocol.canonical import (
    HARD_MAX_DEPTH,
    ExtensionType,
    NonFiniteFloat,
    TooDeep,
    check_value,
)
from tanglenode.protocol.errors import Reason, TanglenodeError
from tanglenode.protocol.limits import MAX_SEQ, MAX_TANGLE_NAME_BYTES, Limits
from tanglenode.protocol.message import Message

PAGE = 1000  # default `limit`; timeline commands or processed entries per stream page
PAGE_BYTES = 1 << 20  # message bodies per stream page, by their signed size
MAX_ENTRIES = 50_000  # timeline entries or commands per reply: ~2.5 MiB at most
MAX_PEERS_PAGE = 500  # peers per `peers` reply
MAX_CLOCK_PAGE = 20_000  # clock entries per `clock` reply: ~900 KiB
STATUS_LIST = 100  # forks, stalls and peers shown by `status`; the rest are counted
BEHIND_SHOWN = 16  # feeds of each peer's `behind` map shown in `peers`
MAX_TEXT = 300  # an address or last error as shown
MAX_ERROR_TEXT = 1000  # an error reply's message
MAX_OP_SHOWN = 64  # an unknown op, as quoted back
MAX_REQUEST_ID = 128  # characters of a request id that is text
MAX_GROUP_MEMBERS = 1000
MAX_GROUP_NAME = 1000
GROUP_TANGLES = ("group", "epoch", "members")
GROUP_ORDERS = ("rank", "causal-time")
STREAMING = frozenset({"subscribe", "watch-processed", "doc-watch"})  # ops that stream
# Documents (docs/DOCUMENTS.md): a title's bound (protocol.document checks the rest), and
# what one `doc-edit` may carry: a longer edit is sent as several requests, in order.
MAX_TITLE_BYTES = 200
MAX_SPLICES = 1024  # splices per doc-edit (the engine replays them in O(splices²))
MAX_SPLICE_CHARS = 1 << 18  # code points inserted per doc-edit (at most 1 MiB of UTF-8)
MAX_POSITION = 2**32 - 1  # a splice's position or length, in code points
MAX_WEFT_FEEDS = 65_536  # feeds of a weft given as `at`, `from` or `to`
MAX_DOCUMENTS_PAGE = 1000  # documents per doc-list reply
MAX_VERSIONS_PAGE = 10_000  # versions per doc-log reply: ~1 MiB
SET_ASIDE_SHOWN = 100  # set-aside messages listed by doc-log; the rest are counted
SNAPSHOT_CHARS = 1 << 18  # code points per doc-watch snapshot event (at most 1 MiB)


class ErrorKind(enum.StrEnum):
    """The `kind` of an error reply: stable codes (docs/IPC.md, "Error kinds")."""

    BAD_FRAME = "bad-frame"
    BAD_REQUEST = "bad-request"
    UNKNOWN_OP = "unknown-op"
    NOT_FOUND = "not-found"
    INVALID_MESSAGE = "invalid-message"
    UNKNOWN_TANGLE = "unknown-tangle"
    GROUP = "group"
    OWN_FEED_FORKED = "own-feed-forked"
    OWN_FEED_BEHIND = "own-feed-behind"
    STORE_FULL = "store-full"
    NO_IDENTITY = "no-identity"
    REFUSED = "refused"
    REPLY_TOO_LARGE = "reply-too-large"
    INTERNAL = "internal"
    # Raised by the client library itself; the node never sends these.
    DISCONNECTED = "disconnected"
    PROTOCOL = "protocol"


class RequestError(TanglenodeError):
    """A request the node refuses: `kind` for clients, `reason` a message's reason code."""

    def __init__(self, kind: ErrorKind, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.reason = reason


def short(text: str | None, limit: int = MAX_TEXT) -> str | None:
    """`text` cut to `limit` characters, marked with "..." where it was cut."""
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 3] + "..."


# -- the request shapes ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TimelineRef:
    """The spacetime (`root` None), or the timeline of tangle `tangle` rooted at `root`."""

    root: bytes | None = None
    tangle: str | None = None


@dataclass(frozen=True, slots=True)
class PublishRequest:
    content: Any
    tangles: dict[str, bytes | None]  # name -> root id, or None to root a new tangle


@dataclass(frozen=True, slots=True)
class GetRequest:
    message: bytes


@dataclass(frozen=True, slots=True)
class TimelineRequest:
    timeline: TimelineRef
    start: int
    limit: int


@dataclass(frozen=True, slots=True)
class CommandsRequest:
    timeline: TimelineRef
    since: int
    limit: int


@dataclass(frozen=True, slots=True)
class PlacementRequest:
    timeline: TimelineRef
    message: bytes


@dataclass(frozen=True, slots=True)
class StatusRequest:
    pass


@dataclass(frozen=True, slots=True)
class PeersRequest:
    start: int
    limit: int


@dataclass(frozen=True, slots=True)
class ClockRequest:
    peer: bytes | None  # None: our own clock
    start: int
    limit: int


@dataclass(frozen=True, slots=True)
class ConnectRequest:
    address: str
    key: bytes


@dataclass(frozen=True, slots=True)
class SubscribeRequest:
    timeline: TimelineRef
    since: int | None  # None: start from a snapshot


@dataclass(frozen=True, slots=True)
class WatchProcessedRequest:
    start: int


@dataclass(frozen=True, slots=True)
class GroupCreateRequest:
    name: str


@dataclass(frozen=True, slots=True)
class GroupAddRequest:
    group: bytes
    members: list[bytes]


@dataclass(frozen=True, slots=True)
class GroupExcludeRequest:
    group: bytes
    members: list[bytes]


@dataclass(frozen=True, slots=True)
class GroupPostRequest:
    group: bytes
    content: Any


@dataclass(frozen=True, slots=True)
class GroupShowRequest:
    group: bytes


@dataclass(frozen=True, slots=True)
class GroupTimelineRequest:
    group: bytes
    tangle: str
    order: str


# A revision of a document on the wire (`at`, `from`, `to`): a message id, a version
# number, or a weft (feed -> seq); None for the processed frontier.
At = bytes | int | dict[bytes, int] | None
Splice = tuple[str, int, str] | tuple[str, int, int]  # ("ins", pos, text) | ("del", pos, length)


@dataclass(frozen=True, slots=True)
class DocCreateRequest:
    title: str


@dataclass(frozen=True, slots=True)
class DocEditRequest:
    doc: bytes
    splices: tuple[Splice, ...]  # in order, each against the text the ones before it left


@dataclass(frozen=True, slots=True)
class DocListRequest:
    start: int
    limit: int


@dataclass(frozen=True, slots=True)
class DocShowRequest:
    doc: bytes
    at: At


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


Request = (
    PublishRequest
    | GetRequest
    | TimelineRequest
    | CommandsRequest
    | PlacementRequest
    | StatusRequest
    | PeersRequest
    | ClockRequest
    | ConnectRequest
    | SubscribeRequest
    | WatchProcessedRequest
    | GroupCreateRequest
    | GroupAddRequest
    | GroupExcludeRequest
    | GroupPostRequest
    | GroupShowRequest
    | GroupTimelineRequest
    | DocCreateRequest
    | DocEditRequest
    | DocListRequest
    | DocShowRequest
    | DocLogRequest
    | DocDiffRequest
    | DocBlameRequest
    | DocWatchRequest
)


# -- fields: each checked, each failure a `bad-request` naming the field ---------------------


def _bad(message: str) -> RequestError:
    return RequestError(ErrorKind.BAD_REQUEST, message)


def count(fields: dict[str, Any], key: str, default: int, maximum: int = MAX_SEQ) -> int:
    """A non-negative integer field; values over `maximum` are lowered to it."""
    value = fields.get(key, default)
    if value is None:
        value = default
    if type(value) is not int or value < 0:
        raise _bad(f"{key} is an integer of 0 or more")
    return min(value, maximum)


def message_id(fields: dict[str, Any], key: str, what: str) -> bytes:
    """A 32-byte id field; `what` names it in the refusal."""
    value = fields.get(key)
    if type(value) is not bytes or len(value) != 32:
        raise _bad(f"{what} is a 32-byte id")
    return value


def tangle_name(name: Any) -> str:
    if (
        type(name) is not str
        or not name
        or len(name) > MAX_TANGLE_NAME_BYTES
        or len(name.encode("utf-8", "surrogatepass")) > MAX_TANGLE_NAME_BYTES
    ):
        raise _bad(f"a tangle name is text of 1 to {MAX_TANGLE_NAME_BYTES} bytes")
    return name


_CONTENT_REASONS = {
    TooDeep: Reason.TOO_DEEP,
    NonFiniteFloat: Reason.NON_FINITE_FLOAT,
    ExtensionType: Reason.EXT_TYPE,
}


def content(value: Any, max_depth: int) -> Any:
    """Content a message may hold (the rules of docs/FORMAT.md), else `invalid-message`."""
    try:
        check_value(value, max_depth)
    except (TooDeep, NonFiniteFloat, ExtensionType) as error:
        reason = _CONTENT_REASONS[type(error)]
        raise RequestError(
            ErrorKind.INVALID_MESSAGE, f"{reason}: content: {error}", reason
        ) from None
    return value


def timeline_ref(fields: dict[str, Any]) -> TimelineRef:
    """`spacetime: true`, or `tangle` name and `root` id."""
    spacetime = fields.get("spacetime")
    if spacetime is not None and type(spacetime) is not bool:
        raise _bad("spacetime is true or false")
    if spacetime:
        return TimelineRef()
    name, root = fields.get("tangle"), fields.get("root")
    if name is None or root is None:
        raise _bad("name a timeline: spacetime, or tangle and root")
    root = message_id(fields, "root", "root")
    return TimelineRef(root, tangle_name(name))


def feeds(fields: dict[str, Any]) -> list[bytes]:
    """`members`: 1 to `MAX_GROUP_MEMBERS` feed keys."""
    members = fields.get("members")
    if (
        type(members) is not list
        or not 0 < len(members) <= MAX_GROUP_MEMBERS
        or not all(type(m) is bytes and len(m) == 32 for m in members)
    ):
        raise _bad(f"members is a list of 1 to {MAX_GROUP_MEMBERS} 32-byte feed keys")
    return members


def _group(fields: dict[str, Any]) -> bytes:
    return message_id(fields, "group", "group (its root id)")


def _doc(fields: dict[str, Any]) -> bytes:
    return message_id(fields, "doc", "doc (its doc/init id)")


def revision(fields: dict[str, Any], key: str) -> At:
    """`key` as a document revision: a message id, a version number or a weft; nil: now."""
    value = fields.get(key)
    kind = type(value)
    if value is None or (kind is bytes and len(value) == 32):
        return value
    if kind is int and 0 <= value <= MAX_SEQ:
        return value
    if (
        kind is dict
        and len(value) <= MAX_WEFT_FEEDS
        and all(
            type(feed) is bytes and len(feed) == 32 and type(seq) is int and 0 <= seq <= MAX_SEQ
            for feed, seq in value.items()
        )
    ):
        return value
    raise _bad(
        f"{key} is a message id (32 bytes), a version number, or a weft"
        f" (at most {MAX_WEFT_FEEDS} feeds: 32-byte key -> seq)"
    )


def splices(fields: dict[str, Any]) -> tuple[Splice, ...]:
    """`splices`: 1 to `MAX_SPLICES` of ["ins", pos, text] and ["del", pos, length]."""
    value = fields.get("splices")
    if type(value) is not list or not 0 < len(value) <= MAX_SPLICES:
        raise _bad(f"splices is a list of 1 to {MAX_SPLICES} splices")
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
            raise _bad(
                f'splice {number} is not ["ins", pos, text] or ["del", pos, length]'
                f" (pos an integer from 0 to {MAX_POSITION})"
            )
        kind, pos, what = splice
        if kind == "ins":
            if type(what) is not str or not what:
                raise _bad(f"splice {number}: an insert's text is a string of 1 code point or more")
            inserted += len(what)
            if inserted > MAX_SPLICE_CHARS:
                raise _bad(f"splices insert more than {MAX_SPLICE_CHARS} code points")
        elif type(what) is not int or not 0 < what <= MAX_POSITION:
            raise _bad(f"splice {number}: a delete's length is an integer from 1 to {MAX_POSITION}")
        parsed.append((kind, pos, what))
    return tuple(parsed)


# -- one parser per op ---------------------------------------------------------------------


def _publish(fields: dict[str, Any], limits: Limits) -> PublishRequest:
    # The content is checked where it is signed (`invalid-message` with its reason).
    tangles = fields.get("tangles")
    tangles = {} if tangles is None else tangles
    if type(tangles) is not dict or len(tangles) > limits.max_tangles:
        raise _bad(
            f"tangles maps at most {limits.max_tangles} names to root ids (or nil for a new root)"
        )
    for name, root in tangles.items():
        tangle_name(name)
        if root is not None and (type(root) is not bytes or len(root) != 32):
            raise _bad("a tangle's root is a 32-byte id, or nil for a new root")
    return PublishRequest(fields.get("content"), tangles)


def _get(fields: dict[str, Any], limits: Limits) -> GetRequest:
    return GetRequest(message_id(fields, "message", "message"))


def _timeline(fields: dict[str, Any], limits: Limits) -> TimelineRequest:
    timeline = timeline_ref(fields)
    start = count(fields, "start", 0)
    return TimelineRequest(timeline, start, count(fields, "limit", PAGE, MAX_ENTRIES))


def _commands(fields: dict[str, Any], limits: Limits) -> CommandsRequest:
    timeline = timeline_ref(fields)
    since = count(fields, "since", 0)
    return CommandsRequest(timeline, since, count(fields, "limit", PAGE, MAX_ENTRIES))


def _placement(fields: dict[str, Any], limits: Limits) -> PlacementRequest:
    timeline = timeline_ref(fields)
    return PlacementRequest(timeline, message_id(fields, "message", "message"))


def _status(fields: dict[str, Any], limits: Limits) -> StatusRequest:
    return StatusRequest()


def _peers(fields: dict[str, Any], limits: Limits) -> PeersRequest:
    start = count(fields, "start", 0)
    return PeersRequest(start, count(fields, "limit", MAX_PEERS_PAGE, MAX_PEERS_PAGE))


def _clock(fields: dict[str, Any], limits: Limits) -> ClockRequest:
    start = count(fields, "start", 0)
    limit = count(fields, "limit", MAX_CLOCK_PAGE, MAX_CLOCK_PAGE)
    peer = None
    if fields.get("peer") is not None:
        peer = message_id(fields, "peer", "peer (its 32-byte key)")
    return ClockRequest(peer, start, limit)


def _connect(fields: dict[str, Any], limits: Limits) -> ConnectRequest:
    address, key = fields.get("address"), fields.get("key")
    try:
        parse_address(address)
    except BadAddress as error:
        raise _bad(f"connect needs address HOST:PORT: {error}") from None
    if type(key) is not bytes or len(key) != 32:
        raise _bad("connect needs the peer's 32-byte key")
    return ConnectRequest(address, key)  # type: ignore[arg-type]  # parse_address: a str


def _subscribe(fields: dict[str, Any], limits: Limits) -> SubscribeRequest:
    timeline = timeline_ref(fields)
    since = None if fields.get("since") is None else count(fields, "since", 0)
    return SubscribeRequest(timeline, since)


def _watch_processed(fields: dict[str, Any], limits: Limits) -> WatchProcessedRequest:
    return WatchProcessedRequest(count(fields, "start", 0))


def _group_create(fields: dict[str, Any], limits: Limits) -> GroupCreateRequest:
    name = fields.get("name", "")
    if type(name) is not str or len(name) > MAX_GROUP_NAME:
        raise _bad(f"a group name is text of at most {MAX_GROUP_NAME} characters")
    return GroupCreateRequest(name)


def _group_add(fields: dict[str, Any], limits: Limits) -> GroupAddRequest:
    members = feeds(fields)
    return GroupAddRequest(_group(fields), members)


def _group_exclude(fields: dict[str, Any], limits: Limits) -> GroupExcludeRequest:
    members = feeds(fields)
    return GroupExcludeRequest(_group(fields), members)


def _group_post(fields: dict[str, Any], limits: Limits) -> GroupPostRequest:
    value = content(fields.get("content"), limits.max_content_depth)
    return GroupPostRequest(_group(fields), value)


def _group_show(fields: dict[str, Any], limits: Limits) -> GroupShowRequest:
    return GroupShowRequest(_group(fields))


def _group_timeline(fields: dict[str, Any], limits: Limits) -> GroupTimelineRequest:
    tangle, order = fields.get("tangle", "group"), fields.get("order", "rank")
    if tangle not in GROUP_TANGLES or order not in GROUP_ORDERS:
        raise _bad(f"tangle: {'|'.join(GROUP_TANGLES)}; order: {'|'.join(GROUP_ORDERS)}")
    return GroupTimelineRequest(_group(fields), tangle, order)


def _doc_create(fields: dict[str, Any], limits: Limits) -> DocCreateRequest:
    title = fields.get("title")
    if (
        type(title) is not str
        or not title
        or len(title) > MAX_TITLE_BYTES
        or len(title.encode("utf-8", "surrogatepass")) > MAX_TITLE_BYTES
    ):
        raise _bad(f"a document's title is text of 1 to {MAX_TITLE_BYTES} bytes")
    return DocCreateRequest(title)  # its other rules (no control characters) are the engine's


def _doc_edit(fields: dict[str, Any], limits: Limits) -> DocEditRequest:
    doc = _doc(fields)
    return DocEditRequest(doc, splices(fields))


def _doc_list(fields: dict[str, Any], limits: Limits) -> DocListRequest:
    start = count(fields, "start", 0)
    return DocListRequest(start, count(fields, "limit", MAX_DOCUMENTS_PAGE, MAX_DOCUMENTS_PAGE))


def _doc_show(fields: dict[str, Any], limits: Limits) -> DocShowRequest:
    return DocShowRequest(_doc(fields), revision(fields, "at"))


def _doc_log(fields: dict[str, Any], limits: Limits) -> DocLogRequest:
    doc, since = _doc(fields), count(fields, "since", 0)
    return DocLogRequest(doc, since, count(fields, "limit", PAGE, MAX_VERSIONS_PAGE))


def _doc_diff(fields: dict[str, Any], limits: Limits) -> DocDiffRequest:
    doc = _doc(fields)
    if fields.get("from") is None:
        raise _bad("from is a message id, a version number or a weft")
    return DocDiffRequest(doc, revision(fields, "from"), revision(fields, "to"))


def _doc_blame(fields: dict[str, Any], limits: Limits) -> DocBlameRequest:
    return DocBlameRequest(_doc(fields), revision(fields, "at"))


def _doc_watch(fields: dict[str, Any], limits: Limits) -> DocWatchRequest:
    doc = _doc(fields)
    since = None if fields.get("since") is None else count(fields, "since", 0)
    return DocWatchRequest(doc, since)


# Every op the node serves, by its name on the wire.
PARSERS: dict[str, Callable[[dict[str, Any], Limits], Request]] = {
    "publish": _publish,
    "get": _get,
    "timeline": _timeline,
    "commands": _commands,
    "placement": _placement,
    "status": _status,
    "peers": _peers,
    "clock": _clock,
    "connect": _connect,
    "subscribe": _subscribe,
    "watch-processed": _watch_processed,
    "group-create": _group_create,
    "group-add": _group_add,
    "group-exclude": _group_exclude,
    "group-post": _group_post,
    "group-show": _group_show,
    "group-timeline": _group_timeline,
    "doc-create": _doc_create,
    "doc-edit": _doc_edit,
    "doc-list": _doc_list,
    "doc-show": _doc_show,
    "doc-log": _doc_log,
    "doc-diff": _doc_diff,
    "doc-blame": _doc_blame,
    "doc-watch": _doc_watch,
}
OPS = frozenset(PARSERS)


def request_header(frame: Any) -> tuple[Any, str]:
    """A frame's request id and op; `bad-request` for a frame that is no request at all."""
    if not isinstance(frame, dict) or type(frame.get("op")) is not str:
        raise _bad("a request is a map with an op")
    number = frame.get("id")
    if not (
        number is None
        or type(number) is int
        or (type(number) is str and len(number) <= MAX_REQUEST_ID)
    ):
        raise _bad("a request id is an integer or a short string")
    return number, frame["op"]


def parse_request(op: str, frame: dict[str, Any], limits: Limits) -> Request:
    """The typed request `op` names, every field checked; `unknown-op` or `bad-request`."""
    parser = PARSERS.get(op)
    if parser is None:
        raise RequestError(ErrorKind.UNKNOWN_OP, f"no operation {short(op, MAX_OP_SHOWN)!r}")
    return parser(frame, limits)


# -- what goes out ---------------------------------------------------------------------------


def error_reply(
    number: Any, kind: ErrorKind, text: str, reason: str | None = None
) -> dict[str, Any]:
    """`{"id", "error": {"kind", "message"[, "reason"]}}`, the text cut to its cap."""
    body: dict[str, Any] = {"kind": str(kind), "message": short(text, MAX_ERROR_TEXT)}
    if reason is not None:
        body["reason"] = str(reason)
    return {"id": number, "error": body}


def bounded_content(value: Any) -> Any:
    """Content as it goes out: a stored value nested past what a frame can hold is marked."""
    kind = type(value)
    if kind is list or kind is dict:
        try:
            check_value(value, HARD_MAX_DEPTH)
        except TooDeep:
            return {"$too-deep": True}
        except ValueError:
            pass  # NaN or an ext type stored before the content rules: msgpack carries them
    return value


def message_body(message: Message) -> dict[str, Any]:
    """A message as replies and events carry it."""
    return {
        "id": message.id,
        "author": message.author,
        "seq": message.seq,
        "prev": message.prev,
        "timestamp": message.timestamp,
        "timeframe": message.timeframe,
        "tangles": {
            name: {"root": link.root, "previous": list(link.previous or ())}
            for name, link in message.tangles.items()
        },
        "content": bounded_content(message.content),
    }


def insert_command(
    pos: int, msg_id: bytes, message: Message | None = None, version: int | None = None
) -> dict[str, Any]:
    """`{"ins": pos, "id": id}` in a `commands` reply; in a stream `{"v", "ins", "message"}`
    with the message's body (its id alone when the store no longer holds it)."""
    if version is None:
        return {"ins": pos, "id": msg_id}
    return {"v": version, "ins": pos, "message": message_body(message) if message else msg_id}


def move_command(src: int, dst: int, version: int | None = None) -> dict[str, Any]:
    """`{"mov": [from, to]}`, with `"v"` first in a stream."""
    wire = {"mov": [src, dst]}
    return wire if version is None else {"v": version, **wire}


def delete_command(pos: int, version: int | None = None) -> dict[str, Any]:
    """`{"del": pos}`, with `"v"` first in a stream."""
    wire = {"del": pos}
    return wire if version is None else {"v": version, **wire}


def processed_entry(index: int, message: Message | None) -> dict[str, Any]:
    """One entry of a `watch-processed` page."""
    return {"index": index, "message": message_body(message) if message else None}


# -- documents: bodies of replies and doc-watch events ----------------------------------------
# The arguments are storage/documents.py's records, read by attribute (protocol imports no
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
    }


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
    """One `doc-blame` span: text, its author and the message that typed it."""
    return {"text": span.text, "author": span.author, "msg": span.msg_id}


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
