"""Documents by title (issue 46, item 2; docs/WEB.md, "The document page"): a document
started from `/docs`' form on one node opens in its page, appears on the other node's list
with its title, authors and last edit, and one made private to a group is sealed in it."""

from __future__ import annotations

import json

from tests.browser import WebNode, call, tangled
from tests.browser.test_document_editing import EDITOR, ask, expect_value


def create_in_browser(page, node: WebNode, title: str, group: str = "") -> str:
    """Fill `/docs`' form and wait for the new document's page; the document's id."""
    from playwright.sync_api import expect

    page.goto(node.url("/docs"))
    page.fill("#new-doc input[name=title]", title)
    if group:
        page.select_option("#new-doc select[name=group]", group)
    bodies: list[str] = []
    page.on("request", lambda r: bodies.append(r.post_data or "") if "/api/" in r.url else None)
    page.click("#new-doc button")
    page.wait_for_url("**/doc/**")
    page.wait_for_selector("#live[data-state=live]")
    expect(page.locator("h1")).to_have_text(title)
    expect(page.locator("#editor-state")).to_have_text("saved")
    assert len(bodies) == 1 and "once" in json.loads(bodies[0])  # one POST, done once
    return page.locator(EDITOR).get_attribute("data-doc")


def test_a_document_made_in_the_browser_appears_on_the_other_node(pages, tmp_path):
    from playwright.sync_api import expect

    alice, bob = WebNode(tmp_path, "alice"), WebNode(tmp_path, "bob")
    call(alice.start)
    call(bob.start, [alice])
    try:
        tangled(alice, "about", "alice")
        page_a = pages()
        doc = create_in_browser(page_a, alice, "Garden rota")
        page_a.locator(EDITOR).click()
        page_a.keyboard.type("Water on Mondays.", delay=5)
        expect(page_a.locator("#editor-state")).to_have_text("saved", timeout=20_000)
        expect_value(page_a, "Water on Mondays.")

        from tanglenode.protocol.identity import parse_message_id

        root = parse_message_id(doc)
        call(bob.wait_for_size, 2, tangle="doc", root=root)
        page_b = pages()
        page_b.goto(bob.url("/docs"))
        row = page_b.locator("#documents tbody tr", has_text="Garden rota")
        expect(row).to_have_count(1)
        expect(row.locator(".authors")).to_have_text("~alice")
        expect(row.locator(".last-edit")).not_to_have_text("")
        expect(row.locator("td").last).to_have_text("public")
        row.locator("a").click()
        page_b.wait_for_selector("#live[data-state=live]")
        expect_value(page_b, "Water on Mondays.")
        assert call(ask, bob, "doc-show", doc=root)["text"] == "Water on Mondays."
    finally:
        for node in (alice, bob):
            assert call(node.stop) == 0


def test_a_document_made_private_to_a_group_is_sealed_in_it(pages, tmp_path):
    from playwright.sync_api import expect

    alice = WebNode(tmp_path, "alice")
    call(alice.start)
    try:
        group = call(ask, alice, "group-create", name="allotment")["group"]
        from tanglenode.protocol.identity import message_text

        page = pages()
        doc = create_in_browser(page, alice, "Seed orders", group=message_text(group))
        from tanglenode.protocol.identity import parse_message_id

        listed = call(ask, alice, "doc-list")["documents"]
        [info] = [d for d in listed if d["doc"] == parse_message_id(doc)]
        assert info["group"] == group
        page.goto(alice.url("/docs"))
        row = page.locator("#documents tbody tr", has_text="Seed orders")
        expect(row.locator("td").last).to_have_text("private")
    finally:
        assert call(alice.stop) == 0
