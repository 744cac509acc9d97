"""The document and group pages of a real node: the text, its splices live over a raw HTTP
event stream, resumption by `Last-Event-ID` with nothing twice, the slider's JSON, a group."""

from __future__ import annotations

import json
import re
from html import unescape

from tanglenode.protocol.doc_ipc import apply_splices
from tanglenode.protocol.identity import message_text
from tests.integration.test_cli_live import cli
from tests.integration.test_web_live import HOSTILE, get, web_node
from tests.sse import EventReader

ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


def doc_url(base: str, doc: bytes, token: str, rest: str = "") -> str:
    return f"{base}doc/{message_text(doc)[1:]}{rest}?token={token}"


def text_of(page: str, element_id: str) -> str:
    inside = page.split(f"id='{element_id}'", 1)[1].split(">", 1)[1].split("</div>", 1)[0]
    return unescape(re.sub(r"<[^>]*>", "", inside))


async def test_a_document_page_and_its_splices_live_resumed_without_duplicates(tmp_path):
    node, base, token = await web_node(tmp_path)
    assert (await cli(node, "about", HOSTILE)).returncode == 0
    async with await node.client() as client:
        doc = (await client.request("doc-create", title=HOSTILE))["doc"]
        done = await cli(node, "doc", "insert", message_text(doc), "0", "hello <b>")
        assert done.returncode == 0, done.stderr

        code, headers, page = await get(doc_url(base, doc, token))
        assert code == 200 and "script-src 'self'" in headers["Content-Security-Policy"]
        assert "<script>" not in page and f"<h1>{ESCAPED}</h1>" in page
        assert text_of(page, "text") == "hello <b>"
        assert f"data-author='{node.feed_id}'" in page and f"~{ESCAPED}" in page
        version = int(re.search(r"id='text'[^>]* data-version='(\d+)'", page).group(1))
        assert version == 1

        url = doc_url(base, doc, token, "/events") + f"&since={version}"
        events = await EventReader.open(url)
        assert events.status == 200
        await client.request("doc-edit", doc=doc, splices=[["ins", 9, " world"]])
        event, data, reached = await events.frame()  # nothing before it: no snapshot
        assert (event, reached, data["splices"]) == ("splice", 2, [["ins", 9, " world"]])
        assert data["author"] == node.feed_id and data["name"] == "~" + HOSTILE
        await events.aclose()

        # the browser comes back with the last id it saw, its page still at version 1
        await client.request("doc-edit", doc=doc, splices=[["del", 0, 1], ["ins", 0, "H"]])
        again = await EventReader.open(url, last_event_id=reached)
        event, data, after = await again.frame()
        assert (event, after) == ("splice", 3)  # version 2 is not sent again
        assert apply_splices("hello <b> world", data["splices"]) == "Hello <b> world"
        await again.aclose()
        fresh = await EventReader.open(doc_url(base, doc, token, "/events"))
        event, data, at = await fresh.frame()
        assert (event, at, data["last"]) == ("snapshot", 3, True)
        assert "".join(run["text"] for run in data["runs"]) == "Hello <b> world"
        await fresh.aclose()

    code, headers, body = await get(doc_url(base, doc, token, "/at") + "&v=2")
    assert code == 200 and headers["Content-Type"] == "application/json"
    revision = json.loads(body)
    assert revision["text"] == "hello <b> world" and revision["compared"] == 1
    assert [(s["text"], s["inserted_by"]) for s in revision["spans"]] == [
        ("hello <b>", None),
        (" world", "~" + HOSTILE),
    ]
    assert (await get(doc_url(base, doc, token, "/at") + "&v=two"))[0] == 400
    code, _, listing = await get(f"{base}docs?token={token}")
    assert code == 200 and doc_url(base, doc, token).removeprefix(base) in unescape(listing)
    assert await node.stop() == 0


async def test_a_group_page_shows_its_members_and_a_post(tmp_path):
    node, base, token = await web_node(tmp_path)
    assert (await cli(node, "about", "alice")).returncode == 0
    async with await node.client() as client:
        group = (await client.request("group-create", name=HOSTILE))["group"]
        post = {"type": "post", "text": "meet at <noon> & bring " + HOSTILE}
        posted = (await client.request("group-post", group=group, content=post))["id"]
    code, _, page = await get(f"{base}groups/{message_text(group)[1:]}?token={token}")
    assert code == 200 and "<script>" not in page
    assert f"<h1>{ESCAPED}</h1>" in page and "Members: 1" in page
    assert f"<li><span data-feed='{node.feed_id}' title='{node.feed_id}'>~alice</span>" in page
    row = re.search(rf"<tr data-id='{message_text(posted)}' data-state='valid'.*?</tr>", page)
    assert row is not None
    assert f"meet at &lt;noon&gt; &amp; bring {ESCAPED}" in row.group(0)
    code, _, listing = await get(f"{base}groups?token={token}")
    assert code == 200 and message_text(group) in listing and "<td>member</td>" in listing
    assert await node.stop() == 0
