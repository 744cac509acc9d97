"""Comments in the document page's margin (docs/WEB.md, "The document page"): a comment made
on a selection in one node's page appears beside its range on another node's page without a
reload, is answered there, marks its range when chosen, and stays, marked, when its text is
deleted; what people wrote shows as text, never as markup."""

from __future__ import annotations

from tests.browser import WebNode, call
from tests.browser.test_document_editing import EDITOR, ask, open_editor

NASTY = "<b>bold?</b> \u202eevil\u202c & <script>x</script>"


def select(page, start: int, end: int) -> None:
    script = f"(area) => {{ area.focus(); area.setSelectionRange({start}, {end}); }}"
    page.locator(EDITOR).evaluate(script)


def test_a_comment_made_on_one_page_is_answered_on_another_and_outlives_its_text(pages, tmp_path):
    from playwright.sync_api import expect

    alice, bob = WebNode(tmp_path, "alice"), WebNode(tmp_path, "bob")
    call(alice.start)
    call(bob.start, [alice])
    try:
        doc = call(ask, alice, "doc-create", title="plan")["doc"]
        call(ask, alice, "doc-edit", doc=doc, splices=[["ins", 0, "Meet at the old mill."]])
        call(bob.wait_for_size, 2, tangle="doc", root=doc)
        page_a, page_b = open_editor(pages, alice, doc), open_editor(pages, bob, doc)

        select(page_a, 12, 20)  # "old mill"
        page_a.fill("form.comment-form textarea", NASTY)
        page_a.click("form.comment-form button")
        expect(page_a.locator("form.comment-form .result")).to_have_text("sent")

        comment_b = page_b.locator("#comment-list li.comment")
        expect(comment_b).to_have_count(1, timeout=20_000)  # no reload: the margin polls
        expect(comment_b.locator("q")).to_have_text("old mill")
        expect(comment_b.locator(".comment-text")).to_have_text(NASTY)  # as text
        assert page_b.locator("#comment-list b, #comment-list script").count() == 0

        comment_b.locator("input[name=text]").fill("the one by the river")
        comment_b.locator("input[name=text]").press("Enter")
        expect(comment_b.locator(".reply-text")).to_have_text("the one by the river")
        expect(page_a.locator("#comment-list .reply-text")).to_have_text(
            "the one by the river", timeout=20_000
        )

        page_b.locator("#comment-list li.comment q").click()  # its range, marked
        expect(page_b.locator("#text .linked")).to_have_text("old mill")

        call(ask, alice, "doc-edit", doc=doc, splices=[["del", 12, 9]])  # "old mill."
        expect(page_b.locator("#comment-list li.comment.deleted q")).to_have_text(
            "old mill", timeout=20_000
        )
        shown = call(ask, bob, "doc-comments", doc=doc)["comments"]
        assert [(c["text"], c["deleted"]) for c in shown] == [(NASTY, True)]
        assert [r["text"] for r in shown[0]["replies"]] == ["the one by the river"]
    finally:
        for node in (alice, bob):
            assert call(node.stop) == 0


def test_commenting_without_a_selection_says_what_to_do(pages, tmp_path):
    from playwright.sync_api import expect

    alice = WebNode(tmp_path, "alice")
    call(alice.start)
    try:
        doc = call(ask, alice, "doc-create", title="plan")["doc"]
        call(ask, alice, "doc-edit", doc=doc, splices=[["ins", 0, "text"]])
        page = open_editor(pages, alice, doc)
        page.fill("form.comment-form textarea", "a note")
        page.click("form.comment-form button")
        result = page.locator("form.comment-form .result")
        expect(result).to_have_text("select the text to comment on in the editor first")
        assert call(ask, alice, "doc-comments", doc=doc)["comments"] == []
    finally:
        assert call(alice.stop) == 0
