"""The web view's app and token: a fake status, ASGI called directly; and the Host it
answers, over real HTTP to the view served on a socket."""

import json
import os
import re
import stat

import pytest
import trio
from prometheus_client.parser import text_string_to_metric_families

from tanglenode.config.settings import ConfigError
from tanglenode.node.cli.names import Names
from tanglenode.node.service.store_service import StoreService
from tanglenode.node.web.app import WebApp
from tanglenode.node.web.events import Streams, event_stream, frame, resume_version
from tanglenode.node.web.hosts import AllowedHosts, BadHost
from tanglenode.node.web.http import WebContext, root_text, segment
from tanglenode.node.web.page import listing
from tanglenode.node.web.status_page import render_status
from tanglenode.node.web.token import load_or_create_token, read_token
from tanglenode.protocol.address import parse_host
from tanglenode.protocol.identity import Keypair, feed_text
from tanglenode.storage.store import FeedStore

TOKEN = "s3cret-token"
OUR_HOST = b"127.0.0.1:8080"
LOOPBACK = AllowedHosts.listening("127.0.0.1", 8080)
ME, THEM, OTHER = b"\x01" * 32, b"\x02" * 32, b"\x03" * 32
HOSTILE = "<img src=x onerror=alert(1)>"


def peer(key: bytes, **fields) -> dict:
    return {
        "key": key,
        "address": "127.0.0.1:9",
        "connected": True,
        "direction": "out",
        "caught_up": True,
        "behind_feeds": 0,
        "behind_messages": 0,
        "last_error": None,
    } | fields


def a_status(digests: bool = True) -> dict:
    return {
        "feed": ME,
        "listen": "127.0.0.1:8008",
        "feeds": 3,
        "messages": 42,
        "forks": [[OTHER, 7]],
        "forks_total": 1,
        "suspected_forks": [
            {
                "feed": OTHER,
                "seq": 3,
                "named_tag": b"\xff" * 16,
                "held_tag": b"\x00" * 16,
                "named_by": THEM,
            }
        ],
        "suspected_forks_total": 2,
        "final": 17,
        "stalls": [{"feed": THEM, "seq": 5, "waits_for": [OTHER, 4]}],
        "stalls_total": 1,
        "peers": [
            peer(THEM),
            peer(
                OTHER,
                caught_up=False,
                behind={THEM: 7, ME: 2},
                behind_feeds=3,
                behind_messages=9,
                address=HOSTILE,
            ),
            peer(ME, connected=False, caught_up=False, last_error=HOSTILE),
        ],
        "peers_total": 5,
        "peers_connected": 2,
        "subscribers": 4,
        "store_full": None,
        "digests": [
            {"spacetime": True, "version": 1, "count": 42, "digest": b"\xaa" * 32},
            {
                "tangle": HOSTILE,
                "root": b"\x04" * 32,
                "version": 1,
                "count": 2,
                "digest": b"\xbb" * 32,
            },
        ]
        if digests
        else [],
    }


async def fake_status(digests: bool) -> dict:
    return a_status(digests)


async def request(
    path: str, *, query: bytes = b"", headers=(), method: str = "GET"
) -> tuple[int, dict[bytes, bytes], bytes]:
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    headers = list(headers)
    if not any(name == b"host" for name, _value in headers):
        headers.insert(0, (b"host", OUR_HOST))
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "query_string": query,
        "headers": headers,
    }
    await WebApp(WebContext(fake_status, TOKEN), LOOPBACK)(scope, receive, send)
    start, body = sent
    return start["status"], dict(start["headers"]), body["body"]


async def test_no_token_no_content_whatever_the_path():
    for path in ("/", "/metrics", "/elsewhere"):
        code, headers, body = await request(path)
        assert code == 401 and headers[b"www-authenticate"] == b"Bearer"
        assert b"42" not in body
    for query in (
        b"token=s3cret-toke",
        b"token=s3cret-token-",
        b"token=%FF%FE",
        b"tok=s3cret-token",
    ):
        assert (await request("/", query=query))[0] == 401, query
    wrong = [(b"authorization", b"Bearer nope"), (b"authorization", b"Basic " + TOKEN.encode())]
    for header in wrong:
        assert (await request("/", headers=[header]))[0] == 401, header


async def test_the_token_in_the_query_or_as_a_bearer():
    assert (await request("/", query=b"x=1&token=s3cret-token"))[0] == 200
    assert (await request("/", headers=[(b"authorization", b"bearer s3cret-token")]))[0] == 200
    assert (await request("/nowhere", query=b"token=s3cret-token"))[0] == 404
    assert (await request("*", query=b"token=s3cret-token"))[0] == 404  # OPTIONS' target
    code, headers, _ = await request("/", query=b"token=s3cret-token", method="POST")
    assert code == 405 and headers[b"allow"] == b"GET"


async def test_metrics_are_the_status_counts_in_a_registry_of_our_own():
    code, headers, body = await request("/metrics", query=b"token=s3cret-token")
    assert code == 200 and headers[b"content-type"].startswith(b"text/plain; version=")
    values = {
        sample.name: sample.value
        for family in text_string_to_metric_families(body.decode())
        for sample in family.samples
    }
    assert values == {
        "tanglenode_messages": 42,
        "tanglenode_feeds": 3,
        "tanglenode_peers_connected": 2,
        "tanglenode_peers": 5,
        "tanglenode_forks": 1,
        "tanglenode_suspected_forks": 2,
        "tanglenode_stalls": 1,
        "tanglenode_final_positions": 17,
        "tanglenode_ipc_subscribers": 4,
        "tanglenode_store_full": 0,
    }


def test_the_page_shows_everything_and_escapes_what_others_wrote():
    page = render_status(a_status(), Names(abouts={THEM: HOSTILE}))
    assert "<img" not in page
    assert page.count("&lt;img src=x onerror=alert(1)&gt;") == 7  # address, error, tangle, names
    assert feed_text(ME) in page and "listening on <code>127.0.0.1:8008</code>" in page
    assert "3 feeds, 42 messages, 1 forks, 1 stalled" in page
    assert "the first 17 spacetime positions" in page
    assert "2 connected of 5" in page
    assert "127.0.0.1:9: caught up" in page
    assert "behind by 9 messages on 3 feeds" in page
    assert "<li>~&lt;img src=x onerror=alert(1)&gt;: 7 messages</li>" in page  # per feed
    assert "and 1 more feeds" in page
    assert "not connected (&lt;img" in page
    assert page.count("~&lt;img src=x onerror=alert(1)&gt;") == 4  # THEM's own name, escaped
    assert f"<code>{feed_text(OTHER)}</code> at 7" in page  # the fork
    assert "5 waits for @AwMDAwMD" in page  # a stall, by short id
    assert "<h2>Suspected forks: 2</h2>" in page  # one shown, one more counted
    assert (
        f"<code>{feed_text(OTHER)}</code> at 3: ~&lt;img src=x onerror=alert(1)&gt; names "
        f"<code>{'_' * 21}w</code>, held <code>{'A' * 22}</code></li>"
    ) in page
    assert "<li class='muted'>and 1 more</li>" in page
    assert "<td>spacetime</td><td>42</td>" in page
    tangle_root = root_text(b"\x04" * 32)
    assert f"<a href='/t/{segment(HOSTILE)}/{tangle_root}'>" in page  # the tangle's page
    nothing = {"peers": [], "forks": [], "stalls": [], "suspected_forks": []}
    quiet = render_status(a_status() | nothing | {"suspected_forks_total": 0}, Names())
    assert quiet.count("<li class='muted'>none</li>") == 4


def test_the_token_file_is_private_made_once_and_kept(tmp_path):
    path = tmp_path / "data" / "web-token"
    assert read_token(path) is None
    token = load_or_create_token(path)
    assert len(token) >= 40 and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert load_or_create_token(path) == read_token(path) == token
    path.write_text("\n")  # an empty leftover is replaced, not trusted
    assert load_or_create_token(path) not in ("", token)


def test_a_token_others_may_read_is_refused_not_used(tmp_path):
    path = tmp_path / "web-token"
    load_or_create_token(path)
    path.chmod(0o644)
    with pytest.raises(ConfigError, match="group or others may read it; run `chmod 600"):
        load_or_create_token(path)


def test_a_stream_resumes_from_the_browsers_last_event_id_before_the_query():
    assert resume_version("12", "3") == 12
    assert resume_version(None, "3") == 3
    for bad in ("", "-1", "1e3", "0x10", "٣", "9" * 20):  # only plain decimal versions
        assert resume_version(bad, None) is None, bad
    assert resume_version("junk", "7") == 7


async def test_live_views_are_bounded_and_the_next_one_is_told_to_retry():
    web = WebContext(fake_status, TOKEN, streams=Streams(limit=2))

    async def nothing(_position: int) -> None:
        return None

    held = [event_stream(web, [], 0, nothing) for _ in range(2)]
    assert [response.status for response in held] == [200, 200]
    refused = event_stream(web, [], 0, nothing)
    assert refused.status == 503 and b"at most 2 live views" in refused.body
    assert web.streams.refused == 1  # /metrics' tanglenode_web_streams_refused_total
    first = held[0].stream
    assert (await first.__anext__()).startswith(b"retry: ")  # the stream runs ...
    await first.aclose()  # ... and a browser that leaves frees its place
    assert event_stream(web, [], 0, nothing).status == 200


def test_a_frame_is_one_event_whatever_the_text():
    text = frame("commands", {"text": "two\nlines\r\n\n</script>\u2028"}, 7)
    assert text.count(b"\n\n") == 1 and text.endswith(b"\n\n")
    assert text.startswith(b"id: 7\nevent: commands\ndata: {")


async def test_a_stream_that_fails_says_so_and_ends_and_frees_its_place(tmp_path):
    store = FeedStore(tmp_path / "store")
    web = WebContext(fake_status, TOKEN, service=StoreService(store), streams=Streams(limit=1))

    async def broken(_position: int) -> None:
        raise RuntimeError("a bug")

    response = event_stream(web, [], 0, broken)
    chunks = [chunk async for chunk in response.stream]
    assert chunks[-1].startswith(b'event: failed\ndata: {"message":"internal error')
    assert web.streams.open == 0
    store.close()


def test_an_index_page_lists_rows_or_says_none_and_links_the_next_page():
    rows = ["<tr><td>a</td></tr>", "<tr><td>b</td></tr>"]
    shown = listing("things", ["name <x>"], rows, "none", "/things?token=t&after=b")
    assert shown.startswith("<table id='things'><thead><tr><th>name &lt;x&gt;</th></tr>")
    assert "<tbody><tr><td>a</td></tr><tr><td>b</td></tr></tbody>" in shown
    assert shown.endswith("<p><a href='/things?token=t&amp;after=b'>more</a></p>")
    assert "more" not in listing("things", ["name"], rows, "none", None)
    assert listing("things", ["name"], [], "nothing <b>yet</b>", "/x") == (
        "<p class='muted'>nothing <b>yet</b></p>"  # no rows: no table, no next page
    )


# -- the Host, over real HTTP: the view served by hypercorn on a socket (node/web/hosts.py) --


async def http(port: int, head: bytes, body: bytes = b"") -> tuple[int, bytes, bytes]:
    """Send `head` (the request line and headers, as a browser or a rebinding page would
    send them) and `body` to the view on 127.0.0.1:`port`; (status, headers, what of the body
    came with them). A stream's headers come alone: the connection is closed then."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(head + b"\r\n" + body)
        received = b""
        with trio.fail_after(10):
            while b"\r\n\r\n" not in received:
                chunk = await stream.receive_some(65536)
                if not chunk:
                    break
                received += chunk
            headers, _, rest = received.partition(b"\r\n\r\n")
            length = re.search(rb"(?im)^content-length: *(\d+)", headers)
            while length and len(rest) < int(length[1]):
                chunk = await stream.receive_some(65536)
                if not chunk:
                    break
                rest += chunk
    return int(headers.split(b" ", 2)[1]), headers.lower(), rest


def get(path: str, host: bytes | None, *extra: bytes) -> bytes:
    lines = [f"GET {path} HTTP/1.1".encode()]
    lines += [b"Host: " + host] if host is not None else []
    return b"\r\n".join([*lines, *extra, b"Connection: close", b""])


def post(path: str, host: bytes, origin: bytes, body: bytes) -> bytes:
    return b"\r\n".join(
        [
            f"POST {path} HTTP/1.1".encode(),
            b"Host: " + host,
            b"Origin: " + origin,
            b"Sec-Fetch-Site: same-origin",
            b"X-Tanglenode-Token: " + TOKEN.encode(),
            b"Content-Type: application/json",
            f"Content-Length: {len(body)}".encode(),
            b"Connection: close",
            b"",
        ]
    )


async def test_a_rebinding_host_with_the_token_is_refused_and_our_own_host_served(tmp_path):
    """A page DNS rebinding brought to the node names its own site as Host (and, the page
    being same-origin to itself, as Origin too). With the token leaked, it still reads no
    page, no stream and writes nothing: 421, before the token is looked at. The same
    requests naming the address the view listens on are served."""
    from tanglenode.node.ipc.area import Area
    from tanglenode.node.web.app import serve_web

    keypair = Keypair(bytes(range(32)))
    with FeedStore(tmp_path / "web", keypair=keypair, map_size=2**26) as store:
        async with trio.open_nursery() as nursery:
            service = StoreService(store, inline=True)
            web = WebContext(
                fake_status,
                TOKEN,
                service=service,
                keypair=keypair,
                streams=Streams(),
                area=Area(service, keypair),
            )
            base = await nursery.start(serve_web, "127.0.0.1:0", web)
            port = int(base.rstrip("/").rsplit(":", 1)[1])
            root = store.writes.publish({"type": "post", "text": "root"}, {"chat": None}).id
            ours, evil = f"127.0.0.1:{port}".encode(), f"evil.example:{port}".encode()
            token = f"?token={TOKEN}"
            stream = f"/t/chat/{root_text(root)}/events{token}&since=0"
            publish = json.dumps({"content": {"type": "post"}, "tangles": {"chat": None}}).encode()
            for path in ("/" + token, "/metrics" + token, stream, "/view.js" + token):
                code, headers, body = await http(port, get(path, evil))
                assert code == 421, path
                assert body == b"this view does not answer that Host (web.listen, web.hosts)\n"
                assert b"text/event-stream" not in headers
            bearer = b"Authorization: Bearer " + TOKEN.encode()
            assert (await http(port, get("/", evil, bearer)))[0] == 421
            code, _, body = await http(
                port, post("/api/publish", evil, b"http://" + evil, publish), publish
            )
            assert code == 421 and json.loads(body)["error"]["kind"] == "host"
            assert store.feeds.frontier()[keypair.public] == 1  # nothing was written
            for hostile in (b"evil.example", b"127.0.0.1:1", b"[::2]:" + str(port).encode()):
                assert (await http(port, get("/" + token, hostile)))[0] == 421, hostile
            for bad in (b"", b"127.0.0.1:" + b"9" * 400, b"\xff\xfe", b"a b:1", b"[::1"):
                code, _, body = await http(port, get("/" + token, bad))
                assert code == 400 and b"Traceback" not in body, bad
            twice = get("/" + token, ours, b"Host: " + evil)
            assert (await http(port, twice))[0] == 400
            unnamed = b"GET /" + token.encode() + b" HTTP/1.0\r\nConnection: close\r\n"
            assert (await http(port, unnamed))[0] == 400  # HTTP/1.0 may leave it out; we do not
            # Our own address, in every way a browser on this machine writes it: served.
            for host in (ours, f"localhost:{port}".encode(), f"[::1]:{port}".encode()):
                code, headers, body = await http(port, get("/status" + token, host))
                assert code == 200 and feed_text(ME).encode() in body, (host, code, body[:300])
            assert (await http(port, get("/", ours)))[0] == 401  # the token is still needed
            code, headers, _ = await http(port, get(stream, ours))
            assert code == 200 and b"content-type: text/event-stream" in headers
            code, _, body = await http(
                port, post("/api/publish", ours, b"http://" + ours, publish), publish
            )
            assert code == 200 and json.loads(body)["ok"]["id"].startswith("%")
            assert store.feeds.frontier()[keypair.public] == 2
            nursery.cancel_scope.cancel()  # the view stops


def host_scope(*hosts: bytes) -> dict:
    return {"headers": [(b"host", host) for host in hosts]}


@pytest.mark.parametrize(
    "listen, also, answered, refused",
    [
        (
            "127.0.0.1",
            (),
            [b"127.0.0.1:8080", b"localhost:8080", b"LOCALHOST:8080", b"[::1]:8080"],
            [b"evil.example:8080", b"127.0.0.1:8081", b"127.0.0.1", b"10.0.0.1:8080"],
        ),
        ("[::1]", (), [b"[::1]:8080", b"[0:0::1]:8080", b"localhost:8080"], [b"[::2]:8080"]),
        (
            "0.0.0.0",  # any address: an address cannot be rebound; names only as listed
            ("node.lan:8080", "proxy.example"),
            [
                *(b"192.168.1.5:8080", b"[fe80::1]:8080", b"localhost:8080"),
                *(b"node.lan:8080", b"proxy.example", b"proxy.example:443"),
            ],
            [b"evil.example:8080", b"192.168.1.5:9", b"node.lan:9", b"node.lan"],
        ),
        ("192.168.1.5", (), [b"192.168.1.5:8080"], [b"localhost:8080", b"127.0.0.1:8080"]),
    ],
    ids=["loopback", "ipv6 loopback", "wildcard and web.hosts", "one address"],
)
def test_the_hosts_answered_name_where_the_view_listens(listen, also, answered, refused):
    hosts = AllowedHosts.listening(listen, 8080, also)
    for host in answered:
        hosts.check(host_scope(host))
    for host in refused:
        with pytest.raises(BadHost) as raised:
            hosts.check(host_scope(host))
        assert raised.value.status == 421, host
    with pytest.raises(BadHost) as raised:
        hosts.check(host_scope(b"127.0.0.1:8080", b"127.0.0.1:8080"))
    assert raised.value.status == 400
    assert AllowedHosts.listening(listen, 80).answers(*parse_host(listen)) is True  # no port
    with pytest.raises(BadHost):  # port 0: not bound yet, nothing is answered
        AllowedHosts.listening("127.0.0.1", 0).check(host_scope(b"127.0.0.1:0"))
