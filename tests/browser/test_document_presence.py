"""Presence (issue 46, item 3; docs/WEB.md, "The document page"): where an author types on
node A shows on node B's page of the document, as a caret marked with the author's name
(`data-presence`), within a second, and moves as they type; a selection shows too. Nothing of
it is a message: the feeds hold the same messages before and after."""

from __future__ import annotations

import time

from tests.browser import WebNode, call, tangled
from tests.browser.test_document_editing import EDITOR, ask, expect_value, open_editor


def test_an_author_typing_on_one_node_shows_on_the_other_nodes_page(pages, tmp_path):
    from playwright.sync_api import expect

    alice, bob = WebNode(tmp_path, "alice"), WebNode(tmp_path, "bob")
    call(alice.start)
    call(bob.start, [alice])
    try:
        tangled(alice, "about", "alice")
        tangled(bob, "about", "bob")
        doc = call(ask, alice, "doc-create", title="agenda")["doc"]
        call(ask, alice, "doc-edit", doc=doc, splices=[["ins", 0, "One. Two. Three."]])
        call(bob.wait_for_size, 2, tangle="doc", root=doc)
        page_a, page_b = open_editor(pages, alice, doc), open_editor(pages, bob, doc)
        # bob knows alice's name before her caret comes (about messages travel as any)
        page_b.wait_for_function(
            "() => document.querySelector('#legend').textContent.includes('~alice')"
        )
        caret = page_b.locator(f"{EDITOR} mark[data-presence='~alice']")
        expect(caret).to_have_count(0)

        page_a.locator(EDITOR).evaluate("area => { area.focus(); area.setSelectionRange(4, 4); }")
        typed = time.monotonic()
        page_a.keyboard.type(" and", delay=5)
        caret.wait_for(state="attached", timeout=1_000 + 5 * 4 + 200)  # typing, then 1 s
        assert time.monotonic() - typed < 1.5
        expect_value(page_b, "One. and Two. Three.")
        # her caret sits where she types, after the word (positions of bob's own text)
        page_b.wait_for_function(
            "() => { const m = document.querySelector(\"#text mark[data-presence='~alice']\");"
            " const r = document.createRange(); r.setStart(document.getElementById('text'), 0);"
            " r.setEndBefore(m); return r.toString() === 'One. and'; }",
            timeout=5_000,
        )

        # a selection: the selected text is marked with her name on bob's page
        page_a.locator(EDITOR).evaluate("area => area.setSelectionRange(9, 13)")  # "Two."
        selected = page_b.locator(f"{EDITOR} span[data-selected-by='~alice']")
        expect(selected).to_have_text("Two.", timeout=1_000)

        # and bob's caret on alice's page, the other way
        page_b.locator(EDITOR).evaluate("area => { area.focus(); area.setSelectionRange(0, 0); }")
        page_b.keyboard.type("Zero. ", delay=5)
        expect(page_a.locator(f"{EDITOR} mark[data-presence='~bob']")).to_be_attached(timeout=1_000)
        expect(page_a.locator("#editor-state")).to_have_text("saved", timeout=20_000)
        expect(page_b.locator("#editor-state")).to_have_text("saved", timeout=20_000)
        # presence writes nothing: carets moved, shown on the other node, no message more
        held = [call(node.status)["messages"] for node in (alice, bob)]
        for start, end in ((0, 0), (2, 5), (6, 6)):
            page_b.locator(EDITOR).evaluate(f"area => area.setSelectionRange({start}, {end})")
            marked = page_a.locator(f"{EDITOR} span[data-selected-by='~bob']")
            expect(marked).to_have_count(1 if end > start else 0, timeout=1_000)
        expect(page_a.locator(f"{EDITOR} mark[data-presence='~bob']")).to_be_attached()
        assert [call(node.status)["messages"] for node in (alice, bob)] == held
        assert call(ask, alice, "doc-show", doc=doc)["text"].startswith("Zero. One. and")
    finally:
        for node in (alice, bob):
            assert call(node.stop) == 0
