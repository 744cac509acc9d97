"""Writing from the browser (docs/WEB.md, "Writing"): a reply typed in one node's page appears
on another node's page without a reload; a new conversation opens its own page; what a
person types (HTML, bidirectional controls) is kept as typed and shown as text, a summary
line without the controls."""

from __future__ import annotations

from tanglenode.protocol.identity import message_text
from tests.browser import WebNode, call

ROWS = "#timeline tbody tr"


async def get(node: WebNode, msg_id: bytes) -> dict:
    async with await node.client() as client:
        return await client.get(msg_id)


TYPED = "<b>bold?</b> \u202edesrever\u202c & done"


def test_a_reply_typed_on_one_node_appears_live_on_anothers_page(pages, tmp_path):
    from playwright.sync_api import expect

    alice, bob = WebNode(tmp_path, "alice"), WebNode(tmp_path, "bob")
    call(alice.start)
    call(bob.start, [alice])
    try:
        root = call(alice.publish, {"type": "post", "text": "first"}, {"chat": None})["id"]
        call(bob.wait_for_size, 1, tangle="chat", root=root)
        path = f"/t/chat/{message_text(root)[1:]}"
        writer, reader = pages(), pages()
        writer.goto(alice.url(path))
        reader.goto(bob.url(path))
        reader.wait_for_selector("#live[data-state=live]")
        reader.evaluate("window.notReloaded = true")

        writer.fill("form.compose textarea", TYPED)
        writer.click("form.compose button")
        expect(writer.locator("form.compose .result")).to_have_text("sent")
        expect(reader.locator(ROWS)).to_have_count(2)
        [stored] = call(alice.timeline, tangle="chat", root=root)[1:]
        message = call(get, alice, stored[1])
        assert message["content"]["text"] == TYPED  # kept exactly as typed
        cell = reader.locator(f"{ROWS}:last-child td.text")
        # as text, a summary line: the bidi override and its end seen as `?`, never obeyed
        expect(cell).to_have_text("<b>bold?</b> ?desrever? & done")
        assert "\u202e" not in cell.text_content()  # drops the bidi controls (clean_name)
        assert reader.locator(f"{ROWS} b").count() == 0
        assert reader.evaluate("window.notReloaded") is True

        writer.fill("form.compose textarea", "")
        writer.click("form.compose button")  # the browser's own check: nothing is sent
        assert call(alice.wait_for_size, 2, tangle="chat", root=root) == 2
    finally:
        for node in (alice, bob):
            assert call(node.stop) == 0


def test_a_new_conversation_from_the_index_and_a_refusal_shown_in_the_page(page, web_node):
    from playwright.sync_api import expect

    page.goto(web_node.url("/tangles"))
    page.fill("form.compose input[name=tangle]", "plans")
    page.fill("form.compose textarea", "shall we?")
    page.click("form.compose button")
    page.wait_for_selector("#live[data-state=live]")
    assert "/t/plans/" in page.url
    expect(page.locator(f"{ROWS} td.text")).to_have_text(["shall we?"])

    page.goto(web_node.url("/tangles"))
    page.fill("form.compose input[name=tangle]", "\u00e9" * 40)  # 80 bytes: over a name
    page.fill("form.compose textarea", "refused")
    page.click("form.compose button")
    result = page.locator("form.compose .result")
    expect(result).to_have_attribute("data-state", "error")
    assert result.inner_text().startswith(("bad-request: ", "invalid-message: "))
    assert "tangle" in result.inner_text()
    assert "/tangles" in page.url  # nothing was published: the page stays
