"""The web view's ASGI app, served by hypercorn inside the node.

Theory of operation
-------------------
`tangled run --web HOST:PORT` (config `web.listen`) starts `serve_web` in the
daemon's nursery. Hypercorn's Trio worker parses HTTP (no parser of ours);
this module is the ASGI app behind it: the token, the method, the route,
then one page handler (`ROUTES`). The server stops with the node: the daemon
cancels its nursery, and hypercorn's connections end with it. A fault
inside hypercorn ends only the view, which serves again (`serve_web`). It reports the
URL it bound (port 0 takes any free port), which `status` carries as `web`.

Every request must first name the view's own address in `Host`
(node/web/hosts.py): a page that DNS rebinding let another site's script
reach names that site, and gets 421 before the token is looked at, so that
a leaked token is no key for a rebinding page. Then every request must
carry the token of `<data_dir>/web-token`
(node/web/token.py), as `?token=` or `Authorization: Bearer`; it is compared
in constant time (`hmac.compare_digest`), and a request without it gets 401
and nothing else. A write (`POST /api/OP`, node/web/actions.py) must carry
it in a header, and come from our own pages. The view shows private groups'
timelines, and other local users can reach a port on 127.0.0.1: the token is what keeps them out, as
file permissions keep them off the IPC socket. Links carry it (no cookie:
cookies ignore the port, so one would reach every local server).

The path is split on `/` before it is percent-decoded (`raw_path`), so a
tangle name may hold any character. Handlers read the store through the
node's `StoreService` and the status through the IPC `status` handler, so
the view, the metrics and the CLI cannot disagree. A handler that raises
gets a 500 with one line, logged; the node serves on.

Imported by node/daemon.py only, so `tangled status` and the other short
commands never load hypercorn or prometheus-client.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
from collections.abc import Awaitable, Callable, Sequence
from importlib import resources
from typing import Any
from urllib.parse import parse_qsl, unquote

import structlog
import trio
from hypercorn.config import Config
from hypercorn.trio import serve

from tanglenode.node.ipc.ops import run_op
from tanglenode.node.web import actions, docs, groups, home, peers, tangles, thread
from tanglenode.node.web.hosts import AllowedHosts, BadHost
from tanglenode.node.web.http import (
    SCRIPT_HEADERS,
    TEXT_HEADERS,
    Request,
    Response,
    WebContext,
    not_found,
    text_response,
)
from tanglenode.node.web.metrics import METRICS_HEADERS, Metrics
from tanglenode.node.web.status_page import status_page
from tanglenode.protocol.address import parse_address

log = structlog.get_logger("web")

Handler = Callable[[WebContext, Request], Awaitable[Response]]
MAX_SEGMENTS = 8
API = "/api/"  # POST /api/OP: the page's writes
MAX_QUERY = 4096  # bytes of query string
RESTART_SECONDS = 0.1  # between a fault inside hypercorn and serving again
MAX_RESTART_SECONDS = 30.0  # the longest wait, when every start fails


def _script(name: str) -> Handler:
    """The handler serving the package's script `name` (node/web/NAME)."""

    async def serve_script(web: WebContext, request: Request) -> Response:
        text = resources.files("tanglenode.node.web").joinpath(name).read_bytes()
        return Response(200, SCRIPT_HEADERS, text)

    return serve_script


async def _editor_script(web: WebContext, request: Request) -> Response:
    text = resources.files("tanglenode.node.web").joinpath("editor.js").read_bytes()
    return Response(200, SCRIPT_HEADERS, text)


# (first segment, number of segments) -> handler; "" is `/`.
ROUTES: dict[tuple[str, int], Handler] = {
    ("", 1): home.page,
    ("status", 1): status_page,
    ("view.js", 1): _script("view.js"),
    ("social.js", 1): _script("social.js"),  # the home, thread, peers and groups pages'
    ("thread", 3): thread.page,  # /thread/NAME/ROOT
    ("editor.js", 1): _editor_script,  # the document editor, /docs' form (docs/WEB.md)
    ("tangles", 1): tangles.index,
    ("t", 3): tangles.page,
    ("t", 4): tangles.events,  # /t/NAME/ROOT/events
    ("docs", 1): docs.index,
    ("doc", 2): docs.page,
    ("doc", 3): docs.part,  # /doc/ROOT/ + events, at, history, comments, rendered
    ("groups", 1): groups.index,
    ("groups", 2): groups.page,
    ("peers", 1): peers.page,
    ("peers", 2): peers.state,  # /peers/state
}


class WebApp:
    """The ASGI app: the Host first, then the token, then `/metrics` or a route of
    `ROUTES`. `hosts` may be replaced once the view has bound (`serve_web`)."""

    def __init__(self, web: WebContext, hosts: AllowedHosts) -> None:
        self.web = web
        self.hosts = hosts
        self._token = web.token.encode("ascii")
        self.metrics = Metrics(web.service, web.streams)

    async def __call__(self, scope: dict[str, Any], receive, send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return  # no websockets: the live pages use server-sent events
        try:
            self.hosts.check(scope)
        except BadHost as bad:
            await _respond(send, _misdirected(scope, bad))
            return
        if scope["path"].startswith(API):  # writes: checked otherwise (node/web/actions.py)
            await _respond(send, await self._write(scope, receive))
            return
        if not self._authorised(scope):
            headers = [*TEXT_HEADERS, (b"www-authenticate", b"Bearer")]
            await _respond(
                send, Response(401, headers, b"a token is required (see `tangled status`)\n")
            )
            return
        if scope["method"] != "GET":
            await _respond(send, Response(405, [*TEXT_HEADERS, (b"allow", b"GET")], b"GET only\n"))
            return
        try:
            response = await self._route(scope)
        except Exception:  # a bug of ours: this request fails, the node serves on
            log.exception("web request failed", path=scope["path"][:200])
            response = text_response("internal error (see the node's log)\n", 500)
        await _respond(send, response, receive)

    async def _write(self, scope: dict[str, Any], receive) -> Response:
        """`POST /api/OP`: the op run as the IPC runs it, once the origin, the token and the
        body pass (node/web/actions.py)."""
        if scope["method"] != "POST":
            return Response(405, [*TEXT_HEADERS, (b"allow", b"POST")], b"POST only\n")
        try:
            actions.check_origin(scope)
            actions.check_token(scope["headers"], self._token)
            if self.web.area is None:
                raise actions.Refused(503, "refused", "this view cannot write")
            kind = dict(scope["headers"]).get(b"content-type", b"")
            if kind.split(b";")[0].strip().lower() != b"application/json":
                raise actions.Refused(415, "bad-request", "the body is application/json")
            body = await _body(receive, actions.MAX_BODY)
            op = scope["path"][len(API) :]
            fields = actions.request_fields(op, body)
        except actions.Refused as refused:
            return actions.refused_response(refused)
        return actions.reply_response(await run_op(self.web.area, op, fields), op)

    async def _route(self, scope: dict[str, Any]) -> Response:
        if scope["path"] == "/metrics":
            return Response(200, METRICS_HEADERS, await self.metrics.render(self.web))
        raw = scope.get("raw_path") or scope["path"].encode("utf-8")
        segments = raw.split(b"?", 1)[0].decode("latin-1").split("/")[1:]
        if len(segments) > MAX_SEGMENTS or len(scope["query_string"]) > MAX_QUERY:
            return text_response("request too long\n", 414)
        args = tuple(unquote(part, errors="replace") for part in segments)
        handler = ROUTES.get((args[0], len(args))) if args else None  # `GET *` has none
        if handler is None:
            return not_found()
        query = dict(reversed(parse_qsl(scope["query_string"].decode("latin-1"))))
        last_event_id = next(
            (v.decode("latin-1") for k, v in scope["headers"] if k == b"last-event-id"), None
        )
        return await handler(self.web, Request(args[1:], query, last_event_id))

    def _authorised(self, scope: dict[str, Any]) -> bool:
        query = scope["query_string"].decode("latin-1")
        given = [
            value.encode("utf-8", "surrogateescape")
            for key, value in parse_qsl(query[:MAX_QUERY])
            if key == "token"
        ]
        for name, value in scope["headers"]:
            if name == b"authorization" and value[:7].lower() == b"bearer ":
                given.append(value[7:].strip())
        return any(hmac.compare_digest(candidate, self._token) for candidate in given)


def _misdirected(scope: dict[str, Any], bad: BadHost) -> Response:
    """A request naming another Host: its reason, as JSON to a write, else as text."""
    if scope["path"].startswith(API):
        return actions.refused_response(actions.Refused(bad.status, "host", bad.reason))
    return text_response(bad.reason + "\n", bad.status)


async def _body(receive, limit: int) -> bytes:
    """The request's body, or `Refused` (413) once it passes `limit` bytes (read no more)."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise actions.Refused(400, "bad-request", "the request ended before its body")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise actions.Refused(413, "bad-request", f"the body is over {limit} bytes")
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


async def _lifespan(receive, send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _respond(send, response: Response, receive=None) -> None:
    headers = list(response.headers)
    if response.stream is None:
        headers.append((b"content-length", str(len(response.body)).encode()))
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    if response.stream is None:
        await send({"type": "http.response.body", "body": response.body})
        return
    async with trio.open_nursery() as nursery:  # the stream ends when the browser leaves
        nursery.start_soon(_until_disconnect, receive, nursery.cancel_scope)
        async with contextlib.aclosing(response.stream) as chunks:
            async for chunk in chunks:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        nursery.cancel_scope.cancel()


async def _until_disconnect(receive, scope: trio.CancelScope) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()


async def serve_web(
    listen: str,
    web: WebContext,
    hosts: Sequence[str] = (),
    *,
    task_status=trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the view on `listen` until cancelled; `task_status` gets the bound base URL.

    It answers the Hosts that name `listen`, with the port it bound, and those
    of `hosts` (`web.hosts`; node/web/hosts.py). A fault inside hypercorn (one
    raised before our app is called, which would otherwise end the daemon's
    nursery and the node with it) is logged, and the view serves again on the
    address it bound; the node's peers and IPC never see it. Failing to bind
    at the start is the daemon's to report.
    """
    config = Config()
    config.bind = [listen]
    config.errorlog = logging.getLogger("tanglenode.web")  # not hypercorn's own stderr handler
    config.accesslog = None
    config.graceful_timeout = 1.0
    host, port = parse_address(listen, lowest_port=0)
    app = WebApp(web, AllowedHosts.listening(host, port, hosts))  # port 0: none until bound

    async def started(*, task_status=trio.TASK_STATUS_IGNORED) -> None:
        await serve(app, config, mode="asgi", task_status=task_status)

    base, delay = None, RESTART_SECONDS
    while True:
        began = trio.current_time()
        try:
            async with trio.open_nursery() as nursery:
                binds = await nursery.start(started)
                if base is None:
                    base = binds[0]
                    config.bind = [base.removeprefix("http://")]  # port 0: the one it took
                    _bound, port = parse_address(config.bind[0])
                    app.hosts = AllowedHosts.listening(host, port, hosts)
                    task_status.started(base + "/")
        except Exception:
            if base is None:
                raise
            # A fault now and then restarts at once; one at every start (the address taken
            # meanwhile) waits longer each time, up to MAX_RESTART_SECONDS, and logs as often.
            delay = RESTART_SECONDS if trio.current_time() - began > 60 else delay
            log.exception("web view failed; serving it again", url=base, after_seconds=delay)
            await trio.sleep(delay)
            delay = min(delay * 2, MAX_RESTART_SECONDS)
