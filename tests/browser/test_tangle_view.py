"""A tangle's page in headless Chromium, on a real node: the rows in timeline order, then a
new message and a reorder (a late message that moves another) applied without a reload."""

from __future__ import annotations

import socket

from tanglenode.node.web.events import MAX_STREAMS
from tanglenode.protocol.identity import message_text
from tests.browser import WAIT_MS, call, tangled
from tests.factories import keypair, late_reply
from tests.integration.test_chaos import send

ROWS = "#timeline tbody tr"


def shown(page) -> list[tuple[str, str, str]]:
    """(id, state, content) of each row, as the page shows them now."""
    return [
        (row.get_attribute("data-id"), row.get_attribute("data-state"), row.inner_text())
        for row in page.locator(ROWS).all()
    ]


def timeline(node, root: bytes) -> list[str]:
    return [message_text(entry[1]) for entry in call(node.timeline, tangle="chat", root=root)]


def wait_for_rows(page, count: int) -> None:
    """Until the table has `count` rows (polled by playwright, not by a script of ours: the
    page's policy forbids evaluating strings)."""
    from playwright.sync_api import expect  # here: without playwright the tests are skipped

    expect(page.locator(ROWS)).to_have_count(count)


def test_the_timeline_in_order_then_a_new_message_without_a_reload(page, web_node):
    tangled(web_node, "about", "alice")
    root = call(web_node.publish, {"text": "first"}, {"chat": None})["id"]
    for text in ("second", "third"):
        call(web_node.publish, {"text": text}, {"chat": root})
    page.goto(web_node.url(f"/t/chat/{message_text(root)[1:]}"))
    page.wait_for_selector("#live[data-state=live]")
    rows = shown(page)
    assert [row[0] for row in rows] == timeline(web_node, root)
    assert [row[2].split("\t")[3] for row in rows] == ["first", "second", "third"]
    assert all("~alice" in row[2] for row in rows)
    page.evaluate("window.notReloaded = true")  # gone if the page were loaded again

    call(web_node.publish, {"text": "fourth, live"}, {"chat": root})
    wait_for_rows(page, 4)
    assert [row[0] for row in shown(page)] == timeline(web_node, root)
    assert page.locator(f"{ROWS}:last-child td.text").inner_text() == "fourth, live"
    assert page.locator("#count").inner_text() == "4"
    assert page.evaluate("window.notReloaded") is True


def test_a_late_message_moves_a_row_and_a_pending_row_joins_without_a_reload(page, web_node):
    root, a2, b1, c1 = late_reply()
    pusher = keypair("pusher")
    call(send, web_node, pusher, [root, a2, c1], lambda found: found["messages"] == 3)

    page.goto(web_node.url(f"/t/chat/{message_text(root.id)[1:]}"))
    page.wait_for_selector("#live[data-state=live]")
    before = shown(page)
    assert [row[0] for row in before] == timeline(web_node, root.id)
    states = {row[0]: row[1] for row in before}
    assert states[message_text(c1.id)] == "pending"  # it waits for b1
    assert page.locator("#pending-count").inner_text() == "1"
    position_of_c1 = [row[0] for row in before].index(message_text(c1.id))
    page.evaluate("window.notReloaded = true")

    call(send, web_node, pusher, [b1], lambda found: found["messages"] == 4)
    wait_for_rows(page, 4)
    page.wait_for_selector(f"tr[data-id='{message_text(c1.id)}'][data-state=joined]")
    after = shown(page)
    assert [row[0] for row in after] == timeline(web_node, root.id)
    ids = [row[0] for row in after]
    assert ids.index(message_text(c1.id)) > ids.index(message_text(b1.id))  # moved after b1
    assert ids.index(message_text(c1.id)) != position_of_c1
    assert page.locator("#pending-count").inner_text() == "0"
    assert page.evaluate("window.notReloaded") is True


def test_after_the_node_restarts_the_page_resumes_where_it_was(page, web_node):
    root = call(web_node.publish, {"text": "before"}, {"chat": None})["id"]
    page.goto(web_node.url(f"/t/chat/{message_text(root)[1:]}"))
    page.wait_for_selector("#live[data-state=live]")
    page.evaluate("window.notReloaded = true")
    call(web_node.publish, {"text": "applied"}, {"chat": root})
    wait_for_rows(page, 2)

    port = web_node.base.rstrip("/").rsplit(":", 1)[1]
    assert call(web_node.stop) == 0
    page.wait_for_selector("#live[data-state=reconnecting]")
    call(web_node.start, extra_env={"TANGLED_WEB__LISTEN": f"127.0.0.1:{port}"})
    page.wait_for_selector("#live[data-state=live]")  # the browser reconnected by itself
    call(web_node.publish, {"text": "after the restart"}, {"chat": root})
    wait_for_rows(page, 3)
    texts = [row[2].split("\t")[3] for row in shown(page)]
    assert texts == ["before", "applied", "after the restart"]  # nothing twice, nothing lost
    assert [row[0] for row in shown(page)] == timeline(web_node, root)
    assert page.evaluate("window.notReloaded") is True


def test_a_page_refused_a_stream_keeps_trying_and_catches_up(page, web_node):
    root = call(web_node.publish, {"text": "first"}, {"chat": None})["id"]
    path = f"/t/chat/{message_text(root)[1:]}"
    host, port = web_node.base.removeprefix("http://").rstrip("/").rsplit(":", 1)
    request = f"GET {path}/events?token={web_node.token}&since=0 HTTP/1.1\r\n"
    request += f"Host: {host}:{port}\r\n\r\n"  # the view answers its own address only
    held = []
    for _ in range(MAX_STREAMS):  # every live view the node allows, held open
        held.append(socket.create_connection((host, int(port)), timeout=WAIT_MS / 1000))
        held[-1].sendall(request.encode())
        assert held[-1].recv(4096).startswith(b"HTTP/1.1 200")
    page.goto(web_node.url(path))
    page.wait_for_selector("#live[data-state=reconnecting]")  # refused: 503
    page.evaluate("window.notReloaded = true")
    for connection in held:
        connection.close()
    page.wait_for_selector("#live[data-state=live]", timeout=WAIT_MS)
    call(web_node.publish, {"text": "after the wait"}, {"chat": root})
    wait_for_rows(page, 2)
    assert [row[0] for row in shown(page)] == timeline(web_node, root)
    assert page.evaluate("window.notReloaded") is True


def test_our_message_erased_from_its_page_stays_in_place_as_erased(page, web_node):
    from playwright.sync_api import expect

    root = call(web_node.publish, {"text": "keep me"}, {"chat": None})["id"]
    gone = call(web_node.publish, {"text": "take me back"}, {"chat": root})["id"]
    page.goto(web_node.url(f"/t/chat/{message_text(root)[1:]}"))
    page.wait_for_selector("#live[data-state=live]")
    page.on("dialog", lambda dialog: dialog.accept())  # "Erase ... on every node?"
    row = page.locator(f"{ROWS}[data-id='{message_text(gone)}']")
    row.locator("button[data-erase]").click()
    expect(row.locator("td.text")).to_have_text("(erased)")
    held = call(web_node.request, "get", message=gone)
    assert not held["has_content"] and "erased_by" in held
    page.reload()  # the page drawn again: the row in its place, erased, no button
    page.wait_for_selector("#live[data-state=live]")
    assert [r[0] for r in shown(page)] == timeline(web_node, root)
    expect(row.locator("td.text")).to_have_text("(erased)")
    expect(row.locator("button[data-erase]")).to_have_count(0)
