"""Messages, IPC replies and store records as JSON-ready values and one-line text.

The CLI prints them (`--json`, and times and tags in its human views); the web
view answers its writes with `render_body` (node/web/actions.py). The message
codec is imported for type annotations only: rendering a reply loads none of it.
"""

from __future__ import annotations

import base64
import math
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from tanglenode.protocol.identity import feed_text, message_text

if TYPE_CHECKING:  # the message codec is not needed to render a reply's content
    from tanglenode.protocol.message import Message

BYTES_TAG = "$bytes"
FLOAT_TAG = "$float"
TOO_DEEP_TAG = "$too-deep"
# Deeper than any content a node accepts now (max_content_depth is at most 256) and
# shallow enough for json.dumps, which recurses; a deeper stored value is cut here.
RENDER_DEPTH = 300


def _scalar(value: Any) -> Any:
    if isinstance(value, bytes):
        return {BYTES_TAG: base64.b64encode(value).decode()}
    if isinstance(value, float) and not math.isfinite(value):
        return {
            FLOAT_TAG: "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        }
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return {"$unknown": repr(value)[:200]}  # nothing the store accepts; never crash on it


def _key(key: Any) -> str:
    if isinstance(key, bytes):
        return f"{BYTES_TAG}:{base64.b64encode(key).decode()}"
    return key if isinstance(key, str) else repr(key)


def jsonable(value: Any, max_depth: int = RENDER_DEPTH) -> Any:
    """Content as JSON: binary strings become {"$bytes": base64}, NaN and infinities
    {"$float": "NaN" | "Infinity" | "-Infinity"}, and arrays or maps nested deeper
    than `max_depth` {"$too-deep": true}. Iterative: no value can exhaust the stack.
    """
    holder: list[Any] = [None]
    stack: list[tuple[Any, Any, Any, int]] = [(value, holder, 0, 0)]
    while stack:
        item, parent, slot, depth = stack.pop()
        kind = type(item)
        if kind is list or kind is tuple or kind is dict:
            if depth >= max_depth:
                parent[slot] = {TOO_DEEP_TAG: True}
                continue
            if kind is dict:
                out: Any = dict.fromkeys(_key(k) for k in item)
                stack.extend((v, out, _key(k), depth + 1) for k, v in item.items())
            else:
                out = [None] * len(item)
                stack.extend((v, out, i, depth + 1) for i, v in enumerate(item))
            parent[slot] = out
        else:
            parent[slot] = _scalar(item)
    return holder[0]


def tag_text(tag: bytes) -> str:
    """A timeframe entry's tag as text: unpadded URL-safe base64 like an id's, without the
    sigil (a tag is no id); its first 21 characters are those of the named id after its `%`."""
    return base64.urlsafe_b64encode(tag).rstrip(b"=").decode("ascii")


def message_dict(message: Message) -> dict[str, Any]:
    """A message as the CLI's JSON shows it: ids as text, the timeframe as signed,
    `{"@feed": [seq, tag]}` with the tag as `tag_text`; `has_content` as every IPC message
    body says it (false: its header alone, erased, purged or never had)."""
    tags = message.timeframe_tags
    return {
        "id": message_text(message.id),
        "author": feed_text(message.author),
        "seq": message.seq,
        "prev": None if message.prev is None else message_text(message.prev),
        "timestamp": message.timestamp,
        "timeframe": {
            feed_text(feed): [seq, tag_text(tags[feed])] for feed, seq in message.timeframe.items()
        },
        "tangles": {
            name: {
                "root": None if link.root is None else message_text(link.root),
                "previous": None
                if link.previous is None
                else [message_text(p) for p in link.previous],
            }
            for name, link in message.tangles.items()
        },
        "content": jsonable(message.content),
        "has_content": message.has_content,
        "signature": base64.b64encode(message.signature).decode(),
    }


TIME_WIDTH = 20  # columns of a `format_timestamp` date, and of any uint64 number of ms


def format_timestamp(milliseconds: int) -> str:
    """A time (milliseconds since the epoch) as every command shows it to a person:
    `YYYY-MM-DD HH:MM:SSZ`, UTC to the second (the form `--from-time` and `--to-time`
    take back); the number itself if it is no date. `--json` keeps the milliseconds."""
    try:
        moment = datetime.fromtimestamp(milliseconds / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return str(milliseconds)
    return moment.isoformat(sep=" ", timespec="seconds").replace("+00:00", "Z")


RENDERED_FEEDS = ("author", "feed", "key", "inviter")  # a feed id where a key says so
FEED_MAPS = ("clock", "behind", "not_followed", "blocked", "base", "weft")  # feed -> seq
FEED_LISTS = ("members", "excluded", "redeemed_by")


def render_body(value: Any) -> Any:
    """An IPC reply with ids as text: bytes of 32 become @feed or %message by where they sit.

    It takes a reply as the socket's client reads it (lists) and as a handler returns
    it (node/ipc/ops.py `run_op`, for the web view: tuples too)."""
    if isinstance(value, dict):
        rendered = {}
        for key, item in value.items():
            if isinstance(key, bytes):  # a map keyed by message id
                rendered[message_text(key)] = render_body(item)
                continue
            if key in RENDERED_FEEDS and isinstance(item, bytes):
                rendered[key] = feed_text(item)
            elif key == "content":
                rendered[key] = jsonable(item)
            elif key == "timeframe" and isinstance(item, dict):
                rendered[key] = {feed_text(f): [e[0], tag_text(e[1])] for f, e in item.items()}
            elif key in FEED_MAPS and isinstance(item, dict):
                rendered[key] = {feed_text(feed): seq for feed, seq in item.items()}
            elif key in FEED_LISTS and isinstance(item, list | tuple):
                rendered[key] = [feed_text(feed) for feed in item]
            elif key == "forks" and isinstance(item, list | tuple):  # [[feed, seq], ...]
                rendered[key] = [[feed_text(pair[0]), pair[1]] for pair in item]
            elif key == "waits_for" and isinstance(item, list | tuple):  # [feed, seq]
                rendered[key] = [feed_text(item[0]), item[1]]
            else:
                rendered[key] = render_body(item)
        return rendered
    if isinstance(value, list | tuple):
        return [render_body(item) for item in value]
    if isinstance(value, bytes):
        return message_text(value)
    return value
