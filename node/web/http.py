"""What a page handler is given and gives back: `Request`, `Response`, `WebContext`.

A handler is `async def handler(web: WebContext, request: Request) -> Response`.
The app (node/web/app.py) has checked the token and the method before it is
called; `request.args` are the path's segments after the route's first one,
each percent-decoded on its own (a tangle name may hold a `/`). A response
is whole (`body`) or a stream of chunks (`stream`, server-sent events).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import trio

from tanglenode.node.present.names import Names, read_petnames
from tanglenode.protocol.errors import BadIdentifier, TanglenodeError
from tanglenode.protocol.identity import Keypair, message_text, parse_message_id

Status = Callable[[bool], Awaitable[dict[str, Any]]]
"""The node's status, as the IPC `status` op replies; the argument asks for digests."""

SECURITY = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),  # the token is in the URL
    (b"cache-control", b"no-store"),
]
# Pages run our one script, from our origin, and nothing inline; styles are inline.
HTML_HEADERS = [
    (b"content-type", b"text/html; charset=utf-8"),
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; connect-src 'self'; "
        b"style-src 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; form-action 'self'; "
        b"frame-ancestors 'none'",
    ),
    *SECURITY,
]
TEXT_HEADERS = [(b"content-type", b"text/plain; charset=utf-8"), *SECURITY]
JSON_HEADERS = [(b"content-type", b"application/json"), *SECURITY]
SCRIPT_HEADERS = [(b"content-type", b"text/javascript; charset=utf-8"), *SECURITY]
EVENT_HEADERS = [(b"content-type", b"text/event-stream"), *SECURITY]


@dataclass(frozen=True)
class Request:
    """A checked GET: the route's arguments, the query (first value of each key)."""

    args: tuple[str, ...]
    query: dict[str, str]
    last_event_id: str | None = None


@dataclass
class Response:
    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes = b""
    stream: AsyncIterator[bytes] | None = None


def html_response(page: str, status: int = 200) -> Response:
    return Response(status, HTML_HEADERS, page.encode("utf-8"))


def text_response(text: str, status: int = 200) -> Response:
    return Response(status, TEXT_HEADERS, text.encode("utf-8"))


def json_response(value: Any, status: int = 200) -> Response:
    return Response(status, JSON_HEADERS, json.dumps(value, ensure_ascii=True).encode())


def not_found(what: str = "not found") -> Response:
    return text_response(what + "\n", 404)


@dataclass
class WebContext:
    """What every page reads: the node's status, its store service, keys and names."""

    status: Status
    token: str
    # node.service.store_service.StoreService; None in tests of the status page alone
    service: Any = None
    keypair: Keypair | None = None
    data_dir: Path | None = None
    streams: Any = None  # node.web.events.Streams: the live pages' event streams open now
    area: Any = None  # node.ipc.area.Area: what `POST /api/OP` runs its op on; None: read-only

    def link(self, path: str, **query: Any) -> str:
        """`path` (segments already quoted) with the token and `query`, for an href."""
        pairs = [(key, str(value)) for key, value in query.items() if value is not None]
        return path + "?" + urlencode([("token", self.token), *pairs])

    async def names(self) -> Names:
        """Petnames of `<data_dir>/petnames.json`, then the feeds' self-chosen names."""
        abouts = await self.service.read(lambda store: store.feeds.about_names())
        petnames: dict[bytes, str] = {}
        if self.data_dir is not None:
            try:
                path = self.data_dir / "petnames.json"
                petnames = await trio.to_thread.run_sync(read_petnames, path)  # a file read
            except TanglenodeError:  # damaged: the CLI says so; the view shows ids
                petnames = {}
        ours = self.keypair.public if self.keypair is not None else None
        return Names(petnames, abouts, ours)


def root_text(root: bytes) -> str:
    """A message id without its `%`, as the paths carry it."""
    return message_text(root)[1:]


def parse_root(text: str) -> bytes | None:
    """A message id given without its `%` (a path's ROOT); None if it is not one."""
    if len(text) > 64:
        return None
    try:
        return parse_message_id("%" + text)
    except BadIdentifier:
        return None


def segment(text: str) -> str:
    """One path segment, quoted (a tangle name may hold `/`, `?` or `%`)."""
    return quote(text, safe="")
