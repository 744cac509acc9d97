"""The web view and `/metrics`: a small ASGI app served by hypercorn inside the node.

Theory of operation
-------------------
`tangled run --web HOST:PORT` (config `web.listen`) starts `serve_web` in the
daemon's nursery. Hypercorn's Trio worker parses HTTP (no parser of ours);
this module is the ASGI app behind it and nothing else. The server stops
with the node: the daemon cancels its nursery, and hypercorn's connections
end with it. It reports the URL it bound (port 0 takes any free port), which
`status` carries as `web`.

Every request must carry the token of `<data_dir>/web-token`
(node/web_token.py), as `?token=` or `Authorization: Bearer`; it is compared
in constant time (`hmac.compare_digest`), and a request without it gets 401
and nothing else. The view may show private groups' timelines one day, and
other local users can reach a port on 127.0.0.1: the token is what keeps
them out, as file permissions keep them off the IPC socket.

Both pages read the same data `tangled status` reads, at request time, by
one call (`Status`: the IPC handler itself, node/ipc_peers.py, plus the IPC
server's count of open streams as `subscribers`), so the view, the metrics
and the CLI cannot disagree. `/metrics` sets gauges in a
registry of our own (not prometheus-client's global one, which would mix in
the process collectors and outlive the node in tests) and renders it with
no `await` between, so concurrent scrapes cannot interleave. `/` is plain
server-rendered HTML; every value that comes from others (tangle names,
peers' errors, addresses) goes through `html.escape`, and the page may run
no script (`Content-Security-Policy`).

Imported by node/daemon.py only, so `tangled status` and the other short
commands never load hypercorn or prometheus-client.
"""

from __future__ import annotations

import hmac
import html
import logging
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar
from urllib.parse import parse_qs

import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from prometheus_client import CollectorRegistry, Gauge, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from tanglenode.node.cli.digest import digest_rows
from tanglenode.protocol.identity import feed_text

Status = Callable[[bool], Awaitable[dict[str, Any]]]
"""The node's status, as the IPC `status` op replies; the argument asks for digests."""

HTML_HEADERS = [
    (b"content-type", b"text/html; charset=utf-8"),
    (b"content-security-policy", b"default-src 'none'; style-src 'unsafe-inline'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),  # the token is in the URL
    (b"cache-control", b"no-store"),
]
TEXT_HEADERS = [(b"content-type", b"text/plain; charset=utf-8"), (b"cache-control", b"no-store")]
METRICS_HEADERS = [(b"content-type", CONTENT_TYPE_LATEST.encode()), (b"cache-control", b"no-store")]


class Metrics:
    """The gauges, in a registry of our own, set from a status at each scrape."""

    GAUGES: ClassVar[dict[str, tuple[str, str]]] = {
        "messages": ("tanglenode_messages", "Messages in the store"),
        "feeds": ("tanglenode_feeds", "Feeds in the store"),
        "peers_connected": ("tanglenode_peers_connected", "Peers connected now"),
        "peers_total": ("tanglenode_peers", "Peers known (connected, dialed or seen)"),
        "forks_total": ("tanglenode_forks", "Feeds caught forking"),
        "stalls_total": ("tanglenode_stalls", "Messages waiting for one they depend on"),
        "final": ("tanglenode_final_positions", "Spacetime positions that can no longer change"),
        "subscribers": ("tanglenode_ipc_subscribers", "IPC streams open (subscribe, watches)"),
    }

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._gauges = {
            key: Gauge(name, text, registry=self.registry)
            for key, (name, text) in self.GAUGES.items()
        }

    def render(self, status: dict[str, Any]) -> bytes:
        for key, gauge in self._gauges.items():
            gauge.set(status[key])
        return generate_latest(self.registry)


def render_page(status: dict[str, Any]) -> str:
    """The status page: every value from others escaped."""
    e = html.escape
    feed = feed_text(status["feed"])
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>tanglenode {e(feed[:12])}</title></head><body>",
        f"<h1>tanglenode</h1><p>feed <code>{e(feed)}</code>",
        f" listening on <code>{e(str(status.get('listen', '')))}</code></p>",
        f"<p>{status['feeds']} feeds, {status['messages']} messages, ",
        f"{status['forks_total']} forks, {status['stalls_total']} stalled</p>",
        f"<p>final: the first {status['final']} spacetime positions can no longer change</p>",
        f"<h2>Peers: {status['peers_connected']} connected of {status['peers_total']}</h2><ul>",
    ]
    for peer in status["peers"]:
        parts.append(f"<li><code>{e(feed_text(peer['key']))}</code> {e(_peer_state(peer))}</li>")
    parts.append("</ul><h2>Forks</h2><ul>")
    for author, seq in status["forks"]:
        parts.append(f"<li><code>{e(feed_text(author))}</code> at {int(seq)}</li>")
    parts.append("</ul><h2>Stalls</h2><ul>")
    for stall in status["stalls"]:
        needs_feed, needs_seq = stall["waits_for"]
        parts.append(
            f"<li><code>{e(feed_text(stall['feed']))}</code> {int(stall['seq'])} waits for "
            f"<code>{e(feed_text(needs_feed))}</code> {int(needs_seq)}</li>"
        )
    parts.append("</ul><h2>Digests</h2><table>")
    for where, count, digest in digest_rows(status.get("digests", [])):
        parts.append(
            f"<tr><td>{e(where)}</td><td>{count}</td><td><code>{e(digest)}</code></td></tr>"
        )
    parts.append("</table></body></html>\n")
    return "".join(parts)


def _peer_state(peer: dict[str, Any]) -> str:
    where = peer["address"] or ("inbound" if peer["direction"] == "in" else "-")
    if not peer["connected"]:
        why = f" ({peer['last_error']})" if peer["last_error"] else ""
        return f"{where}: not connected{why}"
    if peer["caught_up"]:
        return f"{where}: caught up"
    return f"{where}: behind by {peer['behind_messages']} messages on {peer['behind_feeds']} feeds"


class WebApp:
    """The ASGI app: token first, then `/` or `/metrics`."""

    def __init__(self, status: Status, token: str) -> None:
        self.status = status
        self._token = token.encode("ascii")
        self.metrics = Metrics()

    async def __call__(self, scope: dict[str, Any], receive, send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return  # websockets: none yet
        if not self._authorised(scope):
            headers = [*TEXT_HEADERS, (b"www-authenticate", b"Bearer")]
            await _respond(send, 401, headers, b"a token is required (see `tangled status`)\n")
            return
        if scope["method"] != "GET":
            await _respond(send, 405, [*TEXT_HEADERS, (b"allow", b"GET")], b"GET only\n")
            return
        if scope["path"] == "/metrics":
            body = self.metrics.render(await self.status(False))
            await _respond(send, 200, METRICS_HEADERS, body)
        elif scope["path"] == "/":
            page = render_page(await self.status(True))
            await _respond(send, 200, HTML_HEADERS, page.encode("utf-8"))
        else:
            await _respond(send, 404, TEXT_HEADERS, b"not found\n")

    def _authorised(self, scope: dict[str, Any]) -> bool:
        given = [
            value.encode("utf-8", "surrogateescape")
            for value in parse_qs(scope["query_string"].decode("latin-1")).get("token", [])
        ]
        for name, value in scope["headers"]:
            if name == b"authorization" and value[:7].lower() == b"bearer ":
                given.append(value[7:].strip())
        return any(hmac.compare_digest(candidate, self._token) for candidate in given)


async def _lifespan(receive, send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _respond(send, code: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": code, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def serve_web(
    listen: str, status: Status, token: str, *, task_status=trio.TASK_STATUS_IGNORED
) -> None:
    """Serve the view on `listen` until cancelled; `task_status` gets the bound base URL."""
    config = Config()
    config.bind = [listen]
    config.errorlog = logging.getLogger("tanglenode.web")  # not hypercorn's own stderr handler
    config.accesslog = None
    config.graceful_timeout = 1.0

    async def started(*, task_status=trio.TASK_STATUS_IGNORED) -> None:
        await serve(WebApp(status, token), config, mode="asgi", task_status=task_status)

    async with trio.open_nursery() as nursery:
        binds = await nursery.start(started)
        task_status.started(binds[0] + "/")
