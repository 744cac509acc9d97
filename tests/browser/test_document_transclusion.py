"""The document page's rendering with the ranges it includes (docs/WEB.md, "The document page"):
a range of another document, included from the page at the editor's caret, shows in place,
marked, follows that document's edits made on another node, and a cycle shows as such."""

from __future__ import annotations

from tests.browser import WebNode, call
from tests.browser.test_document_editing import EDITOR, ask, expect_value, open_editor


def test_an_included_range_shows_in_place_and_follows_its_edits(pages, tmp_path):
    from playwright.sync_api import expect

    alice, bob = WebNode(tmp_path, "alice"), WebNode(tmp_path, "bob")
    call(alice.start)
    call(bob.start, [alice])
    try:
        report = call(ask, alice, "doc-create", title="report")["doc"]
        call(ask, alice, "doc-edit", doc=report, splices=[["ins", 0, "Budget: . End."]])
        sheet = call(ask, bob, "doc-create", title="sheet")["doc"]
        call(ask, bob, "doc-edit", doc=sheet, splices=[["ins", 0, "total 1200 euros"]])
        call(alice.wait_for_size, 2, tangle="doc", root=sheet)
        link = call(ask, alice, "doc-link", doc=sheet, start=6, end=16)["link"]

        page = open_editor(pages, alice, report)
        page.locator(EDITOR).evaluate("(area) => { area.focus(); area.setSelectionRange(8, 8); }")
        page.fill("form.include-form input[name=link]", link)
        page.click("form.include-form button")
        expect(page.locator("form.include-form .result")).to_have_text("included")
        rendered = page.locator("#rendered-text")
        expect(rendered).to_have_text("Budget: 1200 euros. End.")
        expect(rendered.locator(".included")).to_have_text("1200 euros")
        expect_value(page, "Budget: . End.")  # its own text

        call(ask, bob, "doc-edit", doc=sheet, splices=[["ins", 7, "9"]])  # on the other node
        expect(rendered.locator(".included")).to_have_text("19200 euros", timeout=20_000)

        back = call(ask, alice, "doc-link", doc=report, start=0, end=6)["link"]  # "Budget"
        call(ask, alice, "doc-include", doc=sheet, at=8, link=back)  # sheet now includes it
        expect(rendered.locator(".included .not-followed")).to_have_text(
            "\u27e6cycle\u27e7", timeout=20_000
        )
    finally:
        for node in (alice, bob):
            assert call(node.stop) == 0
