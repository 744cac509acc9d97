"""The peers page says on each peer whether we follow it, and its buttons follow and unfollow
(docs/WEB.md, "Pages": `/peers`); at a phone's 390 px nothing on it scrolls sideways."""

from __future__ import annotations

from tests.browser import WebNode, call


def test_follow_state_on_each_peer_and_its_buttons(pages, tmp_path):
    from playwright.sync_api import expect

    alice, bob = WebNode(tmp_path, "alice"), WebNode(tmp_path, "bob")
    call(alice.start)
    call(bob.start, [alice])
    try:
        page = pages()
        page.goto(alice.url("/peers"))
        row = page.locator(f"#peers tbody tr[data-key='{bob.feed_id}']")
        expect(row.locator(".follow")).to_have_text("not followed")
        expect(row).to_have_attribute("data-follow", "not followed")
        assert row.locator("button[data-peer-action=unfollow]").count() == 0

        row.locator("button[data-peer-action=follow]").click()
        expect(page.locator("#peer-result")).to_have_text("follow: done")
        expect(row.locator(".follow")).to_have_text("following")
        expect(row.locator("button[data-peer-action=follow]")).to_have_count(0)
        page.reload()  # the node's answer, not the page's memory
        expect(row.locator(".follow")).to_have_text("following")

        row.locator("button[data-peer-action=unfollow]").click()
        expect(page.locator("#peer-result")).to_have_text("unfollow: done")
        expect(row.locator(".follow")).to_have_text("not followed")
        expect(row.locator("button[data-peer-action=follow]")).to_have_count(1)

        row.locator("button[data-peer-action=block]").click()
        expect(row.locator(".follow")).to_have_text("blocked")
        expect(row.locator("button[data-peer-action=unblock]")).to_have_count(1)
    finally:
        for node in (alice, bob):
            assert call(node.stop) == 0


def test_the_peers_page_fits_a_390_px_screen(browser, tmp_path):
    alice, bob = WebNode(tmp_path, "alice"), WebNode(tmp_path, "bob")
    call(alice.start)
    call(bob.start, [alice])
    context = browser.new_context(viewport={"width": 390, "height": 844})
    try:
        page = context.new_page()
        page.goto(alice.url("/peers"))
        row = page.locator(f"#peers tbody tr[data-key='{bob.feed_id}']")
        row.locator("td").nth(2).filter(has_text="connected").wait_for()
        page.locator("form.invite-create button").click()  # the code and its QR code shown
        page.locator(".invite-made").wait_for()
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, width
        assert page.evaluate("document.body.scrollWidth") <= 390
        box = row.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
        assert row.locator("button[data-peer-action=follow]").is_visible()
    finally:
        context.close()
        for node in (alice, bob):
            assert call(node.stop) == 0
