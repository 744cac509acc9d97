"""The web view's writes: `POST /api/OP`, an IPC op asked from the page.

Theory of operation
-------------------
A page changes the node only through `POST /api/OP`, where OP is one of
`WRITE_OPS`: the IPC's own ops (docs/IPC.md), run by the IPC's own path
(`node.ipc.ops.run_op`, which the socket's `answer` runs too: the same request
checks, the same handler, the same typed errors), so the page can do nothing
a local program could not, and nothing the IPC refuses. Nothing is encoded
for a socket on the way: the handler's reply value (or its `OpError`) becomes
the page's JSON here. Before that (and after the app has checked, for
every request, that its `Host` names the view's own address:
node/web/hosts.py, so a page DNS rebinding brought here, whose Origin
matches its Host, gets no further), in this order:

1. The token is in a header (`X-Tanglenode-Token`, or `Authorization:
   Bearer`), never only in the URL a page may leak: missing, 401 "token
   required"; wrong, 401 "wrong token" (compared in constant time).
2. The request is from our own pages: a browser sends `Origin` with every
   POST, and `Sec-Fetch-Site`; an `Origin` other than the one the request
   came to, or a `Sec-Fetch-Site` other than `same-origin` (or `none`, typed
   by the user), is refused with 403 before anything is read.
3. The body is JSON (`Content-Type: application/json`), at most
   `MAX_BODY` bytes (read no further), an object. Ids travel as text
   (`%…` messages, `@…` feeds) in the fields that hold them
   (`ID_FIELDS`, `FEED_FIELDS`) and become bytes there only: a person's text
   elsewhere is never read as an id.

The reply is JSON: `{"ok": …}` with ids as text (`render_body`, as the CLI's
`--json` shows them), or `{"error": {"kind", "message"}}` with the IPC's error
kind and an HTTP status for it.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable
from typing import Any

import structlog

from tanglenode.node.ipc.ops import OpError, OpReply
from tanglenode.node.present.render import render_body
from tanglenode.node.web.http import JSON_HEADERS, Response
from tanglenode.node.web.invites import with_qr
from tanglenode.protocol.errors import BadIdentifier
from tanglenode.protocol.identity import parse_feed, parse_message_id
from tanglenode.protocol.ipc import ErrorKind

log = structlog.get_logger("web")

MAX_BODY = 256 * 1024  # the editor sends at most 50,000 code points a request (view.js)
WRITE_OPS = frozenset(
    {
        "publish",
        "doc-create",
        "doc-edit",
        "doc-comment",
        "doc-include",
        "doc-presence",  # writes nothing: where our caret is (node/gossip/presence.py)
        "group-create",
        "group-add",
        "group-exclude",
        "group-post",
        "connect",
        "disconnect",
        "follow",
        "unfollow",
        "block",
        "unblock",
        "invite-create",
        "invite-use",
        "delete",
    }
)
# What the page gets beside an op's own reply: the invite's QR code (node/web/invites.py).
DRAWN: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {"invite-create": with_qr}
ID_FIELDS = frozenset({"doc", "root", "group", "msg", "reply", "message"})  # ids, as `%…`
FEED_FIELDS = frozenset({"feed", "key", "members"})  # a feed id (or a list of them), as `@…`
STATUS_OF = {
    ErrorKind.NOT_FOUND: 404,
    ErrorKind.SEALED: 404,
    ErrorKind.CONFLICT: 409,
    ErrorKind.UNKNOWN_OP: 404,
    ErrorKind.STORE_FULL: 507,
    ErrorKind.INTERNAL: 500,
}


class Refused(Exception):
    """A write refused before the op runs: HTTP status, the IPC-like kind and a message."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


def refused_response(error: Refused) -> Response:
    return _json({"error": {"kind": error.kind, "message": error.message}}, error.status)


def _json(value: Any, status: int) -> Response:
    return Response(status, JSON_HEADERS, json.dumps(value, ensure_ascii=True).encode())


def check_token(headers: list[tuple[bytes, bytes]], token: bytes) -> None:
    """The token of a header, or `Refused` (401): "token required" or "wrong token"."""
    given = [value for name, value in headers if name == b"x-tanglenode-token"]
    given += [
        value[7:].strip()
        for name, value in headers
        if name == b"authorization" and value[:7].lower() == b"bearer "
    ]
    if not given:
        raise Refused(401, "token", "token required (in the X-Tanglenode-Token header)")
    if not any(hmac.compare_digest(candidate, token) for candidate in given):
        raise Refused(401, "token", "wrong token")


def check_origin(scope: dict[str, Any]) -> None:
    """`Refused` (403) unless the request comes from a page of this view: every `Origin`
    it carries names the host it came to (over http, or https through a TLS proxy),
    and every `Sec-Fetch-Site` says same-origin (or none: typed by the user)."""
    headers = scope["headers"]
    sites = [value for name, value in headers if name == b"sec-fetch-site"]
    if any(site not in (b"same-origin", b"none") for site in sites):
        raise Refused(403, "origin", "refused: the request comes from another site")
    hosts = [value for name, value in headers if name == b"host"]
    ours = {scheme + b"://" + host for host in hosts[:1] for scheme in (b"http", b"https")}
    for origin in (value for name, value in headers if name == b"origin"):
        if origin not in ours:
            raise Refused(403, "origin", "refused: the request comes from another origin")


def request_fields(op: str, body: bytes) -> dict[str, Any]:
    """The IPC request an `/api/OP` body asks for, ids as bytes; `Refused` (400) if it is
    not a JSON object of text ids where ids belong."""
    if op not in WRITE_OPS:
        ops = ", ".join(sorted(WRITE_OPS))
        raise Refused(404, str(ErrorKind.UNKNOWN_OP), f"no write {op[:64]!r} (one of: {ops})")
    try:
        fields = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        detail = f"the body is not JSON: {str(error)[:200]}"
        raise Refused(400, str(ErrorKind.BAD_REQUEST), detail) from None
    if not isinstance(fields, dict):
        raise Refused(400, str(ErrorKind.BAD_REQUEST), "the body is a JSON object")
    if not _all_text_encodes(fields):
        detail = "text holds a lone surrogate (\\ud800-\\udfff): not Unicode text"
        raise Refused(400, str(ErrorKind.BAD_REQUEST), detail)
    try:
        for key in ID_FIELDS & fields.keys():
            if fields[key] is not None:
                fields[key] = _message_id(fields[key])
        for key in FEED_FIELDS & fields.keys():
            value = fields[key]
            fields[key] = [_feed(v) for v in value] if isinstance(value, list) else _feed(value)
        if isinstance(fields.get("tangles"), dict):  # publish: name -> root id or nil
            fields["tangles"] = {
                name: None if root is None else _message_id(root)
                for name, root in fields["tangles"].items()
            }
        if isinstance(fields.get("base"), dict):  # doc-edit: a weft, feed -> seq
            fields["base"] = {_feed(feed): seq for feed, seq in fields["base"].items()}
        elif isinstance(fields.get("base"), str):  # or a message id
            fields["base"] = _message_id(fields["base"])
    except BadIdentifier as error:
        raise Refused(400, str(ErrorKind.BAD_REQUEST), str(error)) from None
    return fields


def _all_text_encodes(value: Any) -> bool:
    """Whether every string in `value` (keys too) is text UTF-8 can carry: JSON can
    spell a lone surrogate, which no message or IPC frame holds. Iterative: JSON's own
    nesting is bounded by the body's size, not by Python's stack."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return False
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True


def _message_id(value: Any) -> bytes:
    if not isinstance(value, str):
        raise BadIdentifier("a message id is text: %…")
    return parse_message_id(value)


def _feed(value: Any) -> bytes:
    if not isinstance(value, str):
        raise BadIdentifier("a feed id is text: @…")
    return parse_feed(value)


def reply_response(result: OpReply | OpError, op: str = "") -> Response:
    """`op`'s result (node.ipc.ops.run_op) as the page's JSON."""
    if isinstance(result, OpError):
        return _error(result.kind, result.message)
    ok = render_body(result.value)
    if op in DRAWN and isinstance(ok, dict):
        ok = DRAWN[op](ok)
    try:
        return _json({"ok": ok}, 200)
    except (ValueError, TypeError, OverflowError) as error:
        # Every reply is plain data by design; this is the net under that, as the socket's.
        log.warning("web reply not sent", op=op[:64], error=str(error)[:200])
        return _error(ErrorKind.REPLY_TOO_LARGE, str(error)[:200])


def _error(kind: ErrorKind, message: str) -> Response:
    return _json({"error": {"kind": str(kind), "message": message}}, STATUS_OF.get(kind, 400))
