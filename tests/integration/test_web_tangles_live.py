"""A tangle's page and its event stream on a real node: rows in timeline order with names,
the `ins`/`mov` commands live, resumption by `Last-Event-ID`, pending rows, hostile text."""

from __future__ import annotations

import re
from html import unescape

from tanglenode.protocol.identity import message_text
from tests.factories import keypair, late_reply
from tests.integration.test_chaos import send
from tests.integration.test_cli_live import cli
from tests.integration.test_web_live import HOSTILE, get, web_node
from tests.sse import EventReader


def tangle_url(base: str, name: str, root: bytes, token: str, suffix: str = "") -> str:
    from urllib.parse import quote

    return f"{base}t/{quote(name, safe='')}/{message_text(root)[1:]}{suffix}?token={token}"


def rows(page: str) -> list[tuple[str, str, list[str]]]:
    """(id, state, cell texts) of each row of the timeline table."""
    body = page.split("<tbody", 1)[1].split("</tbody>", 1)[0]
    found = []
    for match in re.finditer(r"<tr data-id='([^']*)' data-state='([^']*)'.*?</tr>", body):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", match.group(0))
        found.append((unescape(match.group(1)), match.group(2), [unescape(c) for c in cells]))
    return found


async def test_the_page_lists_the_timeline_in_order_with_names_and_content(tmp_path):
    node, base, token = await web_node(tmp_path)
    assert (await cli(node, "about", "alice")).returncode == 0
    root = (await node.publish({"text": "hello"}, {"chat": None}))["id"]
    for text in ("one", "two"):
        await node.publish({"text": text}, {"chat": root})
    code, headers, page = await get(tangle_url(base, "chat", root, token))
    assert code == 200 and "script-src 'self'" in headers["Content-Security-Policy"]
    order = [message_text(entry[1]) for entry in await node.timeline(tangle="chat", root=root)]
    shown = rows(page)
    assert [row[0] for row in shown] == order
    assert [row[2][3] for row in shown] == ["hello", "one", "two"]
    assert {row[2][1] for row in shown} == {"~alice"} and {row[1] for row in shown} == {"joined"}
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", shown[0][2][2])
    assert "data-tangle-events=" in page and "/view.js?token=" in page
    code, _, listing = await get(f"{base}tangles?token={token}")
    assert code == 200 and tangle_url(base, "chat", root, token).removeprefix(base) in unescape(
        listing
    )
    assert await node.stop() == 0


async def test_the_stream_sends_inserts_and_a_move_and_resumes_by_version(tmp_path):
    node, base, token = await web_node(tmp_path)
    root, a2, b1, c1 = late_reply()
    pusher = keypair("pusher")
    await send(node, pusher, [root, a2, c1], lambda found: found["messages"] == 3)
    _, _, page = await get(tangle_url(base, "chat", root.id, token))
    states = {row[0]: row[1] for row in rows(page)}
    assert states[message_text(c1.id)] == "pending"  # it names b1, not here yet
    version = int(re.search(r"data-version='(\d+)'", page).group(1))

    url = tangle_url(base, "chat", root.id, token, "/events") + f"&since={version}"
    reader = await EventReader.open(url)
    assert reader.status == 200 and reader.headers[b"content-type"] == b"text/event-stream"
    unjoined, _ = await reader.until("unjoined")
    assert unjoined == {"states": {message_text(c1.id): "pending"}, "complete": True}
    await send(node, pusher, [b1], lambda found: found["messages"] == 4)
    body, reached = await reader.until("commands")
    kinds = [next(iter(command)) for command in body["commands"]]
    assert kinds == ["ins", "mov"], body  # b1 arrives, then c1 moves after it
    assert body["commands"][0]["row"]["text"] == "b1"
    assert body["states"] == {message_text(c1.id): "joined"}
    assert reached == version + 2
    await reader.aclose()

    # a browser that reconnects with its last version gets what followed, and only that
    await node.publish({"text": "later"}, {"chat": root.id})
    again = await EventReader.open(url, last_event_id=reached)
    body, after = await again.until("commands")
    assert after == reached + 1 and body["commands"][0]["row"]["text"] == "later"
    assert body["commands"][0]["state"] == "joined"
    await again.aclose()
    assert await node.stop() == 0


async def test_hostile_names_and_versions_get_escaped_or_refused(tmp_path):
    node, base, token = await web_node(tmp_path)
    root = (await node.publish({"text": HOSTILE}, {HOSTILE: None}))["id"]
    code, _, page = await get(tangle_url(base, HOSTILE, root, token))
    assert code == 200 and "<script>" not in page and page.count("&lt;script&gt;") >= 2
    assert rows(page)[0][2][3] == HOSTILE
    odd = "a/b?c%d#e"  # a name is any text: the path is split before it is decoded
    odd_root = (await node.publish({"text": "odd"}, {odd: None}))["id"]
    code, _, page = await get(tangle_url(base, odd, odd_root, token))
    assert code == 200 and [row[2][3] for row in rows(page)] == ["odd"]
    for bad in ("%", "AAAA", "x" * 2000):
        assert (await get(f"{base}t/chat/{bad}?token={token}"))[0] == 404
    events = tangle_url(base, HOSTILE, root, token, "/events")
    assert (await get(events))[0] == 400  # no version to start from
    assert (await get(events + "&since=-1"))[0] == 400
    reader = await EventReader.open(events + "&since=99")  # a version it never had
    data, _ = await reader.until("reset")
    assert data == {"version": 1}
    await reader.aclose()
    unknown = tangle_url(base, "nothing", root, token)
    code, _, page = await get(unknown)
    assert code == 200 and rows(page) == []  # a tangle not seen yet is empty, and may fill
    assert await node.stop() == 0


async def test_a_group_tangle_shows_its_posts_opened_with_our_keys(tmp_path):
    node, base, token = await web_node(tmp_path)
    async with await node.client() as client:
        group = (await client.request("group-create", name="friends"))["group"]
        await client.request("group-post", group=group, content={"text": "only for us"})
    code, _, page = await get(tangle_url(base, "group", group, token))
    texts = [row[2][3] for row in rows(page)]
    assert code == 200 and texts[-1] == "[group friends] only for us", texts
    assert "only for us" not in (await get(tangle_url(base, "group", group, "wrong")))[2]
    assert await node.stop() == 0
