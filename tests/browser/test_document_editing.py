"""Editing a document in place (docs/WEB.md, "The document page"): two pages on two nodes type
into one document at the same time, through a partition and a heal, and both end with every
keystroke of both, identical to `doc show` on each node."""

from __future__ import annotations

import json
from typing import Any

import trio

from tanglenode.node.localnet import REQUEST_SECONDS
from tanglenode.protocol.identity import feed_text
from tests.browser import WebNode, call, losing_the_first_answer, tangled

EDITOR = "#text"  # the dyed text and the editor in one (node/web/editor.js)


def expect_value(page, text: str, timeout: float = 20_000) -> None:
    """Wait until the editor holds exactly `text` (its model, not the drawn `?`s)."""
    page.wait_for_function(
        "text => document.querySelector('#text').value === text", arg=text, timeout=timeout
    )


async def ask(node: WebNode, op: str, **arguments: Any) -> Any:
    with trio.fail_after(REQUEST_SECONDS):
        async with await node.client() as client:
            return await client.request(op, **arguments)


def open_editor(pages, node: WebNode, doc: bytes):
    from playwright.sync_api import expect

    page = pages()
    page.goto(node.url(f"/doc/{_path(doc)}"))
    page.wait_for_selector("#live[data-state=live]")
    expect(page.locator("#editor-state")).to_have_text("saved")
    return page


def _path(doc: bytes) -> str:
    from tanglenode.protocol.identity import message_text

    return message_text(doc)[1:]


def type_at(page, where: str, words: list[str]) -> None:
    """Type `words` (each a unique token and a space) at the start or the end of the text,
    one key at a time, as a person would."""
    editor = page.locator(EDITOR)
    editor.click()
    page.keyboard.press("Control+Home" if where == "start" else "Control+End")
    for word in words:
        page.keyboard.type(word + " ", delay=5)


def settle(pages, nodes, doc: bytes) -> str:
    """Once every page has sent all it holds and the nodes hold the same messages, the
    text: the same on each node, and what each page shows."""
    from playwright.sync_api import expect

    for page in pages:
        expect(page.locator("#editor-state")).to_have_text("saved", timeout=20_000)
    held = set()
    for node in nodes:
        held |= {entry[1] for entry in call(node.timeline, tangle="doc", root=doc)}
    for node in nodes:
        call(node.wait_for_size, len(held), tangle="doc", root=doc)
    texts = {call(ask, node, "doc-show", doc=doc)["text"] for node in nodes}
    assert len(texts) == 1
    [text] = texts
    for page in pages:
        expect_value(page, text)
    return text


def test_two_pages_on_two_nodes_type_at_once_through_a_partition_and_a_heal(pages, tmp_path):
    alice, bob = WebNode(tmp_path, "alice"), WebNode(tmp_path, "bob")
    call(alice.start)
    call(bob.start, [alice])
    try:
        doc = call(ask, alice, "doc-create", title="minutes")["doc"]
        call(ask, alice, "doc-edit", doc=doc, splices=[["ins", 0, "Minutes.\n"]])
        call(bob.wait_for_size, 2, tangle="doc", root=doc)
        page_a, page_b = open_editor(pages, alice, doc), open_editor(pages, bob, doc)

        typed_a = [f"a{n}" for n in range(12)]
        typed_b = [f"b{n}" for n in range(12)]
        for n in range(0, 12, 3):  # at the same time: turns of a few keystrokes each
            type_at(page_a, "start", typed_a[n : n + 3])
            type_at(page_b, "end", typed_b[n : n + 3])
        first = settle([page_a, page_b], [alice, bob], doc)

        alice_feed = feed_text(call(alice.status)["feed"])
        call(ask, bob, "disconnect", key=call(alice.status)["feed"])  # the partition
        apart_a = [f"x{n}" for n in range(6)]
        apart_b = [f"y{n}" for n in range(6)]
        type_at(page_a, "end", apart_a)
        type_at(page_b, "start", apart_b)
        from playwright.sync_api import expect

        for page in (page_a, page_b):
            expect(page.locator("#editor-state")).to_have_text("saved", timeout=20_000)
        assert "x0" not in call(ask, bob, "doc-show", doc=doc)["text"]  # apart indeed
        status = call(alice.status)
        call(ask, bob, "connect", address=status["listen"], key=status["feed"])  # the heal
        final = settle([page_a, page_b], [alice, bob], doc)

        for token in typed_a + typed_b + apart_a + apart_b:
            assert f"{token} " in final, token  # every keystroke of both, in one piece
        assert final.count(" ") == len(typed_a + typed_b + apart_a + apart_b)
        assert "Minutes.\n" in final and len(first) < len(final)
        assert alice_feed.startswith("@")
    finally:
        for node in (alice, bob):
            assert call(node.stop) == 0


def test_a_paste_longer_than_one_request_is_sent_in_parts_and_typing_goes_on(pages, tmp_path):
    from playwright.sync_api import expect

    node = WebNode(tmp_path, "writer")
    call(node.start)
    try:
        doc = call(ask, node, "doc-create", title="long")["doc"]
        page = open_editor(pages, node, doc)
        page.locator(EDITOR).click()
        pasted = "\u4e00" * 120_000  # 360 KB of UTF-8: three requests' worth
        page.keyboard.insert_text(pasted)
        page.keyboard.type(" ok")
        expect(page.locator("#editor-state")).to_have_text("saved", timeout=60_000)
        assert call(ask, node, "doc-show", doc=doc)["text"] == pasted + " ok"
    finally:
        assert call(node.stop) == 0


def test_an_edit_whose_answer_was_lost_is_sent_again_and_done_once(pages, tmp_path):
    """The node does the first request, its answer never reaches the page: the page sends
    the very same request again (its `once` key), and the text holds the words once."""
    from playwright.sync_api import expect

    alice = WebNode(tmp_path, "alice")
    call(alice.start)
    try:
        doc = call(ask, alice, "doc-create", title="retry")["doc"]
        call(ask, alice, "doc-edit", doc=doc, splices=[["ins", 0, "start."]])
        page = open_editor(pages, alice, doc)
        bodies: list[str] = []
        page.route("**/api/doc-edit", losing_the_first_answer(bodies))
        page.locator(EDITOR).click()
        page.keyboard.press("Control+End")
        page.keyboard.type(" once", delay=5)
        expect(page.locator("#editor-state")).to_have_text("saved", timeout=20_000)
        assert len(bodies) >= 2 and bodies[1] == bodies[0]  # the same request, key and all
        assert call(ask, alice, "doc-show", doc=doc)["text"] == "start. once"
        expect_value(page, "start. once")
    finally:
        assert call(alice.stop) == 0


def test_a_word_replaced_in_the_editor_is_the_whole_word_deleted_and_inserted(pages, tmp_path):
    """Selecting "bins" and typing "boxes" over it (one input event) publishes the word, not
    its letters: `doc log -p` shows "bins" deleted and "boxes" inserted, nothing else."""
    from playwright.sync_api import expect

    alice = WebNode(tmp_path, "alice")
    call(alice.start)
    try:
        doc = call(ask, alice, "doc-create", title="words")["doc"]
        call(ask, alice, "doc-edit", doc=doc, splices=[["ins", 0, "worm bins here"]])
        page = open_editor(pages, alice, doc)
        page.locator(EDITOR).evaluate("area => area.setSelectionRange(5, 9)")  # "bins"
        page.locator(EDITOR).focus()
        page.keyboard.insert_text("boxes")
        expect(page.locator("#editor-state")).to_have_text("saved", timeout=20_000)
        assert call(ask, alice, "doc-show", doc=doc)["text"] == "worm boxes here"
        log = json.loads(tangled(alice, "doc", "log", _id(doc), "-p", "--json"))
        change = log["versions"][-1]["change"]
        assert [s["text"] for s in change if s["removed_by"]] == ["bins"]
        assert [s["text"] for s in change if s["inserted_by"]] == ["boxes"]
    finally:
        assert call(alice.stop) == 0


def _id(doc: bytes) -> str:
    from tanglenode.protocol.identity import message_text

    return message_text(doc)


def test_text_an_input_method_composes_is_taken_once_it_ends(pages, tmp_path):
    """An IME (here Chromium's, through the DevTools protocol) composes in the editor: the
    page leaves the DOM to it meanwhile and takes what it wrote at the end, once."""
    from playwright.sync_api import expect

    node = WebNode(tmp_path, "writer")
    call(node.start)
    try:
        doc = call(ask, node, "doc-create", title="ime")["doc"]
        call(ask, node, "doc-edit", doc=doc, splices=[["ins", 0, "rendez-vous: "]])
        page = open_editor(pages, node, doc)
        page.locator(EDITOR).click()
        page.keyboard.press("Control+End")
        page.evaluate(
            "() => { window.composed = []; const t = document.getElementById('text');"
            " for (const k of ['compositionstart', 'compositionend'])"
            " t.addEventListener(k, () => window.composed.push(k)); }"
        )
        devtools = page.context.new_cdp_session(page)
        for partial in ("t", "to", "とう"):
            devtools.send(
                "Input.imeSetComposition",
                {"text": partial, "selectionStart": len(partial), "selectionEnd": len(partial)},
            )
        devtools.send("Input.insertText", {"text": "東京"})
        expect(page.locator("#editor-state")).to_have_text("saved", timeout=20_000)
        expect_value(page, "rendez-vous: 東京")
        assert page.evaluate("window.composed") == ["compositionstart", "compositionend"]
        assert call(ask, node, "doc-show", doc=doc)["text"] == "rendez-vous: 東京"
    finally:
        assert call(node.stop) == 0


def test_the_editor_shows_unsafe_characters_as_marks_but_copies_them_exactly(pages, tmp_path):
    """A right-to-left override in the text shows as `?` (positions hold), yet the editor's
    value, a copy of it and typing after it keep the character itself."""
    from playwright.sync_api import expect

    node = WebNode(tmp_path, "writer")
    call(node.start)
    try:
        doc = call(ask, node, "doc-create", title="bidi")["doc"]
        call(ask, node, "doc-edit", doc=doc, splices=[["ins", 0, "a\u202eb"]])
        page = open_editor(pages, node, doc)
        expect(page.locator(EDITOR)).to_have_text("a?b")
        expect_value(page, "a\u202eb")
        copied = page.locator(EDITOR).evaluate(
            "area => { area.focus(); area.setSelectionRange(0, 3);"
            " const data = new DataTransfer();"
            " area.dispatchEvent(new ClipboardEvent('copy', {clipboardData: data,"
            " bubbles: true, cancelable: true}));"
            " return data.getData('text/plain'); }"
        )
        assert copied == "a\u202eb"
        page.keyboard.press("Control+End")
        page.keyboard.type("c", delay=5)
        expect(page.locator("#editor-state")).to_have_text("saved", timeout=20_000)
        assert call(ask, node, "doc-show", doc=doc)["text"] == "a\u202ebc"
    finally:
        assert call(node.stop) == 0
