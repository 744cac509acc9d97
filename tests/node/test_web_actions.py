"""The web view's writes (node/web/actions.py): `POST /api/OP` runs an IPC op, and only for a
request of our own pages carrying the token in a header; everything else is refused with a
typed reason, before anything is read or written."""

from __future__ import annotations

import json

import pytest

from tanglenode.node.ipc.area import Area
from tanglenode.node.service.store_service import StoreService
from tanglenode.node.web.actions import MAX_BODY
from tanglenode.node.web.app import WebApp
from tanglenode.node.web.hosts import AllowedHosts
from tanglenode.node.web.http import WebContext
from tanglenode.protocol.identity import feed_text, message_text
from tanglenode.storage.store import FeedStore
from tests.factories import keypair

TOKEN = "s3cret-token"
ME = keypair("web-writer")
HOST = b"127.0.0.1:8080"
OWN = [(b"host", HOST), (b"origin", b"http://" + HOST), (b"sec-fetch-site", b"same-origin")]
JSON = [(b"content-type", b"application/json")]
# A page DNS rebinding brought to us: its own name as Host and Origin, so same-origin.
REBOUND = [
    (b"host", b"evil.example:8080"),
    (b"origin", b"http://evil.example:8080"),
    (b"sec-fetch-site", b"same-origin"),
]
WITH_TOKEN = [(b"x-tanglenode-token", TOKEN.encode())]


async def no_status(digests: bool) -> dict:
    return {}


@pytest.fixture
def app(tmp_path):
    with FeedStore(tmp_path / "web", keypair=ME, map_size=2**26) as store:
        service = StoreService(store, inline=True)
        web = WebContext(no_status, TOKEN, service=service, keypair=ME, area=Area(service, ME))
        yield WebApp(web, AllowedHosts.listening("127.0.0.1", 8080)), store


async def post(app, path: str, body, headers=(*OWN, *JSON, *WITH_TOKEN), method="POST", chunks=1):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    size = -(-len(raw) // chunks) or 1
    parts = [raw[at : at + size] for at in range(0, len(raw), size)] or [b""]
    messages = [
        {"type": "http.request", "body": part, "more_body": n < len(parts) - 1}
        for n, part in enumerate(parts)
    ]
    sent: list[dict] = []

    async def receive():
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "method": method,
        "scheme": "http",
        "path": path,
        "query_string": b"",
        "headers": list(headers),
    }
    await app(scope, receive, send)
    start, answer = sent
    return start["status"], json.loads(answer["body"]) if answer["body"][:1] == b"{" else answer


def a_post(text: str) -> dict:
    return {"content": {"type": "post", "text": text}, "tangles": {"chat": None}}


async def test_a_post_from_our_page_is_published_and_its_id_answered(app):
    web, store = app
    status, reply = await post(web, "/api/publish", a_post("hello"))
    assert status == 200
    message = store.feeds.get(parse(reply["ok"]["id"]))
    assert message.content == {"type": "post", "text": "hello"}
    assert message.author == ME.public and "chat" in message.tangles
    status, reply = await post(
        web,
        "/api/publish",
        {"content": {"type": "post", "text": "re"}, "tangles": {"chat": reply["ok"]["id"]}},
    )
    assert status == 200
    assert store.feeds.get(parse(reply["ok"]["id"])).tangles["chat"].previous == (message.id,)


@pytest.mark.parametrize(
    "headers, status, says",
    [
        ([*JSON, *WITH_TOKEN, (b"host", HOST), (b"origin", b"http://evil.example")], 403, "origin"),
        ([*JSON, *WITH_TOKEN, (b"host", HOST), (b"sec-fetch-site", b"cross-site")], 403, "site"),
        ([*JSON, *WITH_TOKEN, (b"host", HOST), (b"sec-fetch-site", b"same-site")], 403, "site"),
        ([*REBOUND, *JSON, *WITH_TOKEN], 421, "Host"),
        ([*JSON, *WITH_TOKEN, (b"origin", b"http://" + HOST)], 400, "Host"),
        ([*OWN, (b"host", HOST), *JSON, *WITH_TOKEN], 400, "Host"),
        ([*OWN, *JSON], 401, "token required"),
        ([*OWN, *JSON, (b"x-tanglenode-token", b"s3cret-toke")], 401, "wrong token"),
        ([*OWN, *JSON, (b"authorization", b"Bearer nope")], 401, "wrong token"),
        ([*OWN, (b"content-type", b"text/plain"), *WITH_TOKEN], 415, "application/json"),
        ([*OWN, (b"content-type", b"application/x-www-form-urlencoded"), *WITH_TOKEN], 415, "json"),
    ],
    ids=[
        "other origin",
        "cross-site",
        "same-site",
        "rebound host",
        "no host",
        "two hosts",
        "no token",
        "wrong",
        "wrong bearer",
        "text",
        "form",
    ],
)
async def test_a_write_not_from_our_page_or_without_the_token_is_refused(
    app, headers, status, says
):
    web, store = app
    code, reply = await post(web, "/api/publish", a_post("forged"), headers=headers)
    assert code == status
    assert says in reply["error"]["message"]
    assert store.feeds.frontier().get(ME.public, 0) == 0  # nothing was published


async def test_the_token_in_the_url_alone_is_not_enough_to_write(app):
    web, store = app
    scope_query = b"token=" + TOKEN.encode()
    sent = []

    async def receive():
        return {"type": "http.request", "body": json.dumps(a_post("x")).encode()}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "scheme": "http",
        "path": "/api/publish",
        "query_string": scope_query,
        "headers": [*OWN, *JSON],
    }
    await web(scope, receive, send)
    assert sent[0]["status"] == 401
    assert store.feeds.frontier().get(ME.public, 0) == 0


async def test_bodies_are_bounded_json_objects_and_ops_are_the_writes(app):
    web, store = app
    big = a_post("x" * MAX_BODY)
    assert (await post(web, "/api/publish", big, chunks=4))[0] == 413
    assert (await post(web, "/api/publish", b"{not json"))[0] == 400
    assert (await post(web, "/api/publish", b"[1, 2]"))[0] == 400
    assert (await post(web, "/api/publish", b"\xff\xfe"))[0] == 400
    assert (await post(web, "/api/publish", b"[" * 100_000))[0] == 400
    code, reply = await post(web, "/api/status", {})
    assert code == 404 and reply["error"]["kind"] == "unknown-op"
    code, _ = await post(web, "/api/publish", a_post("x"), method="GET")
    assert code == 405
    code, reply = await post(web, "/api/doc-edit", {"doc": "not an id", "splices": []})
    assert code == 400 and reply["error"]["kind"] == "bad-request"
    code, reply = await post(web, "/api/doc-edit", {"doc": 7, "splices": []})
    assert code == 400
    assert store.feeds.frontier().get(ME.public, 0) == 0


async def test_what_the_ipc_refuses_comes_back_with_its_kind(app):
    web, store = app
    assert store.feeds.frontier().get(ME.public, 0) == 0
    unknown = message_text(bytes(32))
    code, reply = await post(web, "/api/doc-edit", {"doc": unknown, "splices": [["ins", 0, "x"]]})
    assert (code, reply["error"]["kind"]) == (404, "not-found")
    code, reply = await post(web, "/api/group-post", {"group": unknown, "content": {"t": 1}})
    assert (code, reply["error"]["kind"]) == (404, "not-found")
    deep: object = "x"
    for _ in range(40):
        deep = [deep]
    code, reply = await post(web, "/api/publish", {"content": deep, "tangles": {"chat": None}})
    assert (code, reply["error"]["kind"]) == (400, "invalid-message")


async def test_what_a_person_types_is_kept_as_typed(app):
    """HTML and bidirectional controls go into the message exactly; the pages escape them
    when they show them (tests/node/test_web.py)."""
    web, store = app
    text = '<script>alert(1)</script> \u202eevil\u202c & "quotes"'
    code, reply = await post(web, "/api/publish", a_post(text))
    assert code == 200
    doc = (await post(web, "/api/doc-create", {"title": "<b>notes</b>"}))[1]["ok"]["doc"]
    code, reply = await post(web, "/api/doc-edit", {"doc": doc, "splices": [["ins", 0, text]]})
    assert code == 200 and reply["ok"]["messages"]
    assert store.documents.document_text(store.feeds.get(parse(doc)).id) == text


def parse(text: str) -> bytes:
    from tanglenode.protocol.identity import parse_message_id

    return parse_message_id(text)


async def test_a_member_posts_into_a_group_from_its_page(app):
    from tanglenode.node.web import groups as group_pages
    from tanglenode.node.web.http import Request
    from tanglenode.storage.groups import state as groups

    web, store = app
    club = store.writes.publish(*groups.create(ME, "club")).id
    page = await group_pages.page(web.web, Request((message_text(club)[1:],), {}))
    assert b"data-api='group-post'" in page.body  # a member gets the box
    text = "<i>members only</i>"
    code, reply = await post(
        web, "/api/group-post", {"group": message_text(club), "content": {"text": text}}
    )
    assert code == 200
    view = groups.read_group(store, ME, club)
    assert [p.content for p in view.opened.values() if p.content] == [{"text": text}]
    assert text.encode() not in store.feeds.get(parse(reply["ok"]["id"])).raw  # sealed


async def test_lone_surrogates_duplicate_origins_and_a_tls_proxy(app):
    web, store = app
    body = b'{"content": {"type": "post", "text": "\\ud800"}, "tangles": {"chat": null}}'
    code, reply = await post(web, "/api/publish", body)
    assert (code, reply["error"]["kind"]) == (400, "bad-request")
    assert "surrogate" in reply["error"]["message"]
    twice = [*OWN, (b"origin", b"http://evil.example"), *JSON, *WITH_TOKEN]
    assert (await post(web, "/api/publish", a_post("x"), headers=twice))[0] == 403
    proxied = [(b"host", HOST), (b"origin", b"https://" + HOST), *JSON, *WITH_TOKEN]
    assert (await post(web, "/api/publish", a_post("via TLS"), headers=proxied))[0] == 200
    doc = (await post(web, "/api/doc-create", {"title": "t"}))[1]["ok"]["doc"]
    code, reply = await post(web, "/api/doc-edit", {"doc": doc, "splices": [["ins", 0, "a"]]})
    base = reply["ok"]["base"]
    [feed] = base
    assert feed.startswith("@")  # a weft's keys are feeds
    code, _ = await post(
        web, "/api/doc-edit", {"doc": doc, "splices": [["ins", 1, "b"]], "base": base}
    )
    assert code == 200 and store.documents.document_text(parse(doc)) == "ab"


# -- the op table, with no frame between (node/ipc/ops.py `run_op`) ----------------------------


async def test_a_write_runs_through_the_op_table_and_is_never_encoded_as_a_frame(app, monkeypatch):
    """The page's writes take `run_op`'s result as it is: neither the reply frame nor msgpack
    is on the way, for an answer or a refusal alike."""
    import tanglenode.node.ipc.ops as ipc

    def no_frame(*args, **kwargs):
        raise AssertionError("the web view encoded a frame")

    monkeypatch.setattr(ipc, "encode_frame", no_frame)
    web, store = app
    code, reply = await post(web, "/api/publish", a_post("framed?"))
    assert code == 200
    message = store.feeds.get(parse(reply["ok"]["id"]))
    assert reply["ok"]["author"] == feed_text(ME.public)
    assert message.content == {"type": "post", "text": "framed?"}
    unknown = message_text(bytes(32))
    code, reply = await post(web, "/api/publish", {"content": {}, "tangles": {"chat": unknown}})
    assert (code, reply["error"]["kind"]) == (400, "unknown-tangle")


async def test_run_op_gives_what_answer_encodes(app):
    """`answer`'s frame is `run_op`'s result encoded: the same value, the same typed error."""
    from tanglenode.node.ipc.ops import OpError, OpReply, answer, run_op
    from tanglenode.protocol.framing import FrameDecoder

    def decoded(frame: bytes):
        reader = FrameDecoder(len(frame))
        reader.receive_data(frame)
        return reader.next_frame()

    web, _store = app
    area = web.web.area
    _code, reply = await post(web, "/api/publish", a_post("one"))
    msg_id = parse(reply["ok"]["id"])
    cases = [
        ("get", {"message": msg_id}),  # a reply
        ("get", {"message": bytes(32)}),  # not found
        ("get", {"message": b"short"}),  # a request refused
        ("no-such-op", {}),
    ]
    for op, fields in cases:
        result = await run_op(area, op, fields)
        frame = decoded(await answer(area, 7, op, fields))
        if isinstance(result, OpReply):
            assert frame == {"id": 7, "ok": decoded(ipc_frame(result.value))["ok"]}
            assert frame["ok"]["content"] == {"type": "post", "text": "one"}
        else:
            assert isinstance(result, OpError)
            assert frame == decoded(ipc_frame_of(result.reply(7)))
            assert frame["error"]["kind"] == str(result.kind)
    kinds = [getattr(await run_op(area, op, fields), "kind", None) for op, fields in cases]
    assert kinds == [None, "not-found", "bad-request", "unknown-op"]


def ipc_frame(value) -> bytes:
    from tanglenode.protocol.framing import encode_frame

    return encode_frame({"id": 7, "ok": value})


def ipc_frame_of(reply: dict) -> bytes:
    from tanglenode.protocol.framing import encode_frame

    return encode_frame(reply)


def test_a_reply_as_a_handler_returns_it_renders_as_the_decoded_one():
    """Tuples (a handler's) render as lists do (msgpack's): ids as text, inside them too."""
    from tanglenode.node.present.render import render_body

    feed, msg = ME.public, bytes(range(32))
    returned = {"members": (feed,), "forks": ((feed, 3),), "waits_for": (feed, 2), "ids": (msg,)}
    decoded = {"members": [feed], "forks": [[feed, 3]], "waits_for": [feed, 2], "ids": [msg]}
    assert render_body(returned) == render_body(decoded)
    assert render_body(returned)["ids"] == [message_text(msg)]
