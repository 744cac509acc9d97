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
  `delete_command` and `error_reply` encode what goes out.

The document ops (`doc-...`) are `protocol/doc_ipc.py`'s: their parsers
join `PARSERS` here, so `parse_request` serves every op. What both halves
share (`ErrorKind`, `RequestError`, the common field checks) is
`protocol/ipc_fields.py`, re-exported here.

`node/ipc/server.py` moves the frames; `node/ipc/ops.py` dispatches each typed
request through its table of handlers, which read the store, and maps the errors
they raise to an `ErrorKind`, in one place.
"""

from __future__ import annotations

import re
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
from tanglenode.protocol.doc_ipc import DOC_PARSERS, DOC_STREAMING, DocRequest
from tanglenode.protocol.errors import Reason
from tanglenode.protocol.ipc_discovery import DISCOVERY_PARSERS, DiscoveryRequest
from tanglenode.protocol.ipc_erase import ERASE_PARSERS, EraseRequests
from tanglenode.protocol.ipc_fields import (
    PAGE,
    ErrorKind,
    RequestError,
    bad,
    count,
    message_id,
    short,
)
from tanglenode.protocol.ipc_invites import INVITE_PARSERS, InviteRequests
from tanglenode.protocol.ipc_resolve import RESOLVE_PARSERS, ResolveRequest
from tanglenode.protocol.ipc_scope import SCOPE_PARSERS, ScopeRequests
from tanglenode.protocol.limits import MAX_TANGLE_NAME_BYTES, Limits
from tanglenode.protocol.message import Message

PAGE_BYTES = 1 << 20  # message bodies per stream page, by their signed size
MAX_ENTRIES = 50_000  # timeline entries or commands per reply: ~2.5 MiB at most
MAX_PEERS_PAGE = 500  # peers per `peers` reply
MAX_CLOCK_PAGE = 20_000  # clock entries per `clock` reply: ~900 KiB
STATUS_LIST = 100  # forks, stalls and peers shown by `status`; the rest are counted
STATUS_DIGESTS = 32  # tangles' digests in `status` (after the spacetime's); the rest are not
BEHIND_SHOWN = 16  # feeds of each peer's `behind` map shown in `peers`
MAX_ERROR_TEXT = 1000  # an error reply's message
MAX_OP_SHOWN = 64  # an unknown op, as quoted back
MAX_REQUEST_ID = 128  # characters of a request id that is text
MAX_GROUP_MEMBERS = 1000
MAX_GROUP_NAME = 1000
GROUP_TANGLES = ("group", "epoch", "members")
GROUP_ORDERS = ("rank", "causal-time")
TIMELINE_VIEWS = ("all", "joined")  # as storage.views.timelines.VIEWS (protocol imports no storage)
TIMELINE_ORDERS = ("rank", "causal-time")
STREAMING = frozenset({"subscribe", "watch-processed"}) | DOC_STREAMING  # ops that stream


# -- the request shapes ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TimelineRef:
    """The spacetime (`root` None), or the timeline of tangle `tangle` rooted at `root`,
    in `view` (all members, or those joined to the root) and `order` (rank or causal-time)."""

    root: bytes | None = None
    tangle: str | None = None
    view: str = "all"
    order: str = "rank"


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
    window: TimeWindow | None = None  # causal-time order only: a window of claimed times
    digest: bool = False  # the order's digest and count instead of its entries


WINDOW_MODES = ("implied", "strict")
MAX_WINDOW_TIME = (1 << 64) - 1


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """Claimed times from..to (ms, both included) and the mode (storage.engine.causal_window)."""

    from_time: int
    to_time: int
    mode: str = "implied"


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
    digests: bool = False  # add the timelines' digests (computed on demand: not free)


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
    save: bool = False  # also add the peer to the node's config file


@dataclass(frozen=True, slots=True)
class DisconnectRequest:
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
    | DisconnectRequest
    | SubscribeRequest
    | WatchProcessedRequest
    | GroupCreateRequest
    | GroupAddRequest
    | GroupExcludeRequest
    | GroupPostRequest
    | GroupShowRequest
    | GroupTimelineRequest
    | DocRequest
    | DiscoveryRequest
    | ScopeRequests
    | InviteRequests
    | EraseRequests
    | ResolveRequest
)


# -- fields: each checked, each failure a `bad-request` naming the field ---------------------


def tangle_name(name: Any) -> str:
    if (
        type(name) is not str
        or not name
        or len(name) > MAX_TANGLE_NAME_BYTES
        or len(name.encode("utf-8", "surrogatepass")) > MAX_TANGLE_NAME_BYTES
    ):
        raise bad(f"a tangle name is text of 1 to {MAX_TANGLE_NAME_BYTES} bytes")
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
    """`spacetime: true`, or `tangle` name and `root` id; optional `view` and `order`."""
    view, order = fields.get("view", "all"), fields.get("order", "rank")
    if view not in TIMELINE_VIEWS or order not in TIMELINE_ORDERS:
        raise bad(f"view: {'|'.join(TIMELINE_VIEWS)}; order: {'|'.join(TIMELINE_ORDERS)}")
    spacetime = fields.get("spacetime")
    if spacetime is not None and type(spacetime) is not bool:
        raise bad("spacetime is true or false")
    if spacetime:
        if view != "all":
            raise bad("the joined view is a tangle's, not the spacetime's")
        return TimelineRef(order=order)
    name, root = fields.get("tangle"), fields.get("root")
    if name is None or root is None:
        raise bad("name a timeline: spacetime, or tangle and root")
    if view == "joined" and order != "rank":
        raise bad("the joined view comes in rank order")
    root = message_id(fields, "root", "root")
    return TimelineRef(root, tangle_name(name), view, order)


def feeds(fields: dict[str, Any]) -> list[bytes]:
    """`members`: 1 to `MAX_GROUP_MEMBERS` feed keys."""
    members = fields.get("members")
    if (
        type(members) is not list
        or not 0 < len(members) <= MAX_GROUP_MEMBERS
        or not all(type(m) is bytes and len(m) == 32 for m in members)
    ):
        raise bad(f"members is a list of 1 to {MAX_GROUP_MEMBERS} 32-byte feed keys")
    return members


def _group(fields: dict[str, Any]) -> bytes:
    return message_id(fields, "group", "group (its root id)")


# -- one parser per op ---------------------------------------------------------------------


def _publish(fields: dict[str, Any], limits: Limits) -> PublishRequest:
    # The content is checked where it is signed (`invalid-message` with its reason).
    tangles = fields.get("tangles")
    tangles = {} if tangles is None else tangles
    if type(tangles) is not dict or len(tangles) > limits.max_tangles:
        raise bad(
            f"tangles maps at most {limits.max_tangles} names to root ids (or nil for a new root)"
        )
    for name, root in tangles.items():
        tangle_name(name)
        if root is not None and (type(root) is not bytes or len(root) != 32):
            raise bad("a tangle's root is a 32-byte id, or nil for a new root")
    return PublishRequest(fields.get("content"), tangles)


def _get(fields: dict[str, Any], limits: Limits) -> GetRequest:
    return GetRequest(message_id(fields, "message", "message"))


ONCE_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")


def once_key(fields: dict[str, Any]) -> str | None:
    """A write request's optional `once` key (node/ipc/once_replies.py): 1-64 letters, digits,
    `-` or `_`; None without one."""
    value = fields.get("once")
    if value is None:
        return None
    if type(value) is not str or ONCE_PATTERN.fullmatch(value) is None:
        raise bad("once is 1-64 letters, digits, '-' or '_' (a random key of the client's)")
    return value


def flag(fields: dict[str, Any], key: str) -> bool:
    """An optional true/false field (absent or nil: false)."""
    value = fields.get(key)
    if value is not None and type(value) is not bool:
        raise bad(f"{key} is true or false")
    return bool(value)


def _timeline(fields: dict[str, Any], limits: Limits) -> TimelineRequest:
    timeline = timeline_ref(fields)
    start = count(fields, "start", 0)
    limit = count(fields, "limit", PAGE, MAX_ENTRIES)
    window = _window(fields, timeline)
    digest = flag(fields, "digest")
    if digest and window is not None:
        raise bad("a digest is of the whole timeline, not of a time window")
    return TimelineRequest(timeline, start, limit, window, digest)


def _window(fields: dict[str, Any], timeline: TimelineRef) -> TimeWindow | None:
    """The optional `from_time` / `to_time` / `window` fields of a `timeline` request."""
    if all(fields.get(key) is None for key in ("from_time", "to_time", "window")):
        return None
    if timeline.order != "causal-time":
        raise bad("a time window needs order causal-time")
    times = []
    for key, default in (("from_time", 0), ("to_time", MAX_WINDOW_TIME)):
        value = fields.get(key, default)
        value = default if value is None else value
        if type(value) is not int or not 0 <= value <= MAX_WINDOW_TIME:
            raise bad(f"{key} is an integer of milliseconds, 0 to 2**64 - 1")
        times.append(value)
    mode = fields.get("window") or "implied"
    if mode not in WINDOW_MODES:
        raise bad(f"window: {'|'.join(WINDOW_MODES)}")
    if times[0] > times[1]:
        raise bad("from_time is after to_time")
    return TimeWindow(times[0], times[1], mode)


def _commands(fields: dict[str, Any], limits: Limits) -> CommandsRequest:
    timeline = timeline_ref(fields)
    since = count(fields, "since", 0)
    return CommandsRequest(timeline, since, count(fields, "limit", PAGE, MAX_ENTRIES))


def _placement(fields: dict[str, Any], limits: Limits) -> PlacementRequest:
    timeline = timeline_ref(fields)
    return PlacementRequest(timeline, message_id(fields, "message", "message"))


def _status(fields: dict[str, Any], limits: Limits) -> StatusRequest:
    return StatusRequest(flag(fields, "digests"))


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
        raise bad(f"connect needs address HOST:PORT: {error}") from None
    if type(key) is not bytes or len(key) != 32:
        raise bad("connect needs the peer's 32-byte key")
    return ConnectRequest(address, key, flag(fields, "save"))  # type: ignore[arg-type]


def _disconnect(fields: dict[str, Any], limits: Limits) -> DisconnectRequest:
    return DisconnectRequest(message_id(fields, "key", "key (the peer's 32-byte feed key)"))


def _subscribe(fields: dict[str, Any], limits: Limits) -> SubscribeRequest:
    timeline = timeline_ref(fields)
    since = None if fields.get("since") is None else count(fields, "since", 0)
    return SubscribeRequest(timeline, since)


def _watch_processed(fields: dict[str, Any], limits: Limits) -> WatchProcessedRequest:
    return WatchProcessedRequest(count(fields, "start", 0))


def _group_create(fields: dict[str, Any], limits: Limits) -> GroupCreateRequest:
    name = fields.get("name", "")
    if type(name) is not str or len(name) > MAX_GROUP_NAME or not name.isprintable():
        raise bad(
            f"a group name is printable text on one line, at most {MAX_GROUP_NAME} characters"
        )
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
        raise bad(f"tangle: {'|'.join(GROUP_TANGLES)}; order: {'|'.join(GROUP_ORDERS)}")
    return GroupTimelineRequest(_group(fields), tangle, order)


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
    "disconnect": _disconnect,
    "subscribe": _subscribe,
    "watch-processed": _watch_processed,
    "group-create": _group_create,
    "group-add": _group_add,
    "group-exclude": _group_exclude,
    "group-post": _group_post,
    "group-show": _group_show,
    "group-timeline": _group_timeline,
    **DOC_PARSERS,
    **DISCOVERY_PARSERS,
    **SCOPE_PARSERS,
    **RESOLVE_PARSERS,
    **INVITE_PARSERS,
    **ERASE_PARSERS,
}
OPS = frozenset(PARSERS)


def request_header(frame: Any) -> tuple[Any, str]:
    """A frame's request id and op; `bad-request` for a frame that is no request at all."""
    if not isinstance(frame, dict) or type(frame.get("op")) is not str:
        raise bad("a request is a map with an op")
    number = frame.get("id")
    if not (
        number is None
        or type(number) is int
        or (type(number) is str and len(number) <= MAX_REQUEST_ID)
    ):
        raise bad("a request id is an integer or a short string")
    return number, frame["op"]


def parse_request(op: str, frame: dict[str, Any], limits: Limits) -> Request:
    """The typed request `op` names, every field checked; `unknown-op` or `bad-request`."""
    parser = PARSERS.get(op)
    if parser is None:
        raise RequestError(ErrorKind.UNKNOWN_OP, f"no operation {short(op, MAX_OP_SHOWN)!r}")
    return parser(frame, limits)


# -- what goes out ---------------------------------------------------------------------------


def error_reply(
    number: Any, kind: ErrorKind, text: str, reason: str | None = None, feed: bytes | None = None
) -> dict[str, Any]:
    """`{"id", "error": {"kind", "message"[, "reason"][, "feed"]}}`, the text cut to its cap;
    `feed` the one the error is about, where it names one (a tangle root's author)."""
    body: dict[str, Any] = {"kind": str(kind), "message": short(text, MAX_ERROR_TEXT)}
    if reason is not None:
        body["reason"] = str(reason)
    if feed is not None:
        body["feed"] = bytes(feed)
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
    """A message as replies and events carry it; its timeframe as signed, feed -> [seq, tag]."""
    tags = message.timeframe_tags
    return {
        "id": message.id,
        "author": message.author,
        "seq": message.seq,
        "prev": message.prev,
        "timestamp": message.timestamp,
        "timeframe": {feed: [seq, tags[feed]] for feed, seq in message.timeframe.items()},
        "tangles": {
            name: {"root": link.root, "previous": list(link.previous or ())}
            for name, link in message.tangles.items()
        },
        "content": bounded_content(message.content),
        "has_content": message.has_content,  # false: erased, purged or never had (nil content)
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


def digest_body(version: int, count: int, digest: bytes) -> dict[str, Any]:
    """A timeline's digest as replies carry it: `{version, count, digest}` (32 bytes)."""
    return {"version": version, "count": count, "digest": digest}


def processed_entry(index: int, message: Message | None) -> dict[str, Any]:
    """One entry of a `watch-processed` page."""
    return {"index": index, "message": message_body(message) if message else None}
