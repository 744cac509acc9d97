"""Messages and store records as JSON-ready dicts and one-line text, for the CLI."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Any

from protocol.identity import feed_text, message_text
from protocol.message import Message

BYTES_TAG = "$bytes"


def jsonable(value: Any) -> Any:
    """Content as JSON: binary strings become {"$bytes": base64}."""
    if isinstance(value, bytes):
        return {BYTES_TAG: base64.b64encode(value).decode()}
    if isinstance(value, list):
        return [jsonable(item) for item in value]
    if isinstance(value, dict):
        return {
            (
                f"{BYTES_TAG}:{base64.b64encode(k).decode()}" if isinstance(k, bytes) else k
            ): jsonable(v)
            for k, v in value.items()
        }
    return value


def message_dict(message: Message) -> dict[str, Any]:
    return {
        "id": message_text(message.id),
        "author": feed_text(message.author),
        "seq": message.seq,
        "prev": None if message.prev is None else message_text(message.prev),
        "timestamp": message.timestamp,
        "timeframe": {feed_text(feed): seq for feed, seq in message.timeframe.items()},
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
        "signature": base64.b64encode(message.signature).decode(),
    }


def format_timestamp(milliseconds: int) -> str:
    try:
        moment = datetime.fromtimestamp(milliseconds / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return str(milliseconds)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def message_line(message: Message) -> str:
    """`seq  id  time  [tangle names]  content` on one line."""
    tangles = ",".join(
        f"{name}{'*' if link.is_root else ''}" for name, link in message.tangles.items()
    )
    content = json.dumps(jsonable(message.content), ensure_ascii=False, separators=(",", ":"))
    return (
        f"{message.seq:>6}  {message_text(message.id)}  {format_timestamp(message.timestamp)}  "
        f"[{tangles}]  {content}"
    )
