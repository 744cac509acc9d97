"""The peers page in headless Chromium (docs/WEB.md, "Pages": `/peers`): a peer added in the page
connects and catches up (saved in the config when asked), its row shows it live with its rates
and when it was last seen, and its buttons reach the node."""

from __future__ import annotations

from tanglenode.protocol.identity import feed_text
from tests.browser import WebNode, call


def test_a_peer_added_in_the_page_connects_and_catches_up(pages, tmp_path):
    from playwright.sync_api import expect

    alice, bob = WebNode(tmp_path, "alice"), WebNode(tmp_path, "bob")
    call(alice.start)
    call(bob.start)
    try:
        for n in range(3):
            call(bob.publish, {"type": "post", "text": f"from bob {n}"}, {"chat": None})
        bob_status = call(bob.status)
        page = pages()
        page.goto(alice.url("/peers"))
        own = feed_text(call(alice.status)["feed"])
        expect(page.locator("#own-feed")).to_have_text(own)
        assert page.locator("#qr svg path").count() == 1  # the QR code, drawn in the page
        expect(page.locator("#peers tbody tr")).to_have_count(0)

        page.fill("form.connect input[name=address]", str(bob_status["listen"]))
        page.fill("form.connect input[name=key]", feed_text(bob_status["feed"]))
        page.check("form.connect input[name=save]")
        page.click("form.connect button")
        expect(page.locator("form.connect .result")).to_have_text(
            f"dialing {bob_status['listen']} (saved in the config)"
        )
        config = (alice.data_dir / "tangled.toml").read_text()
        assert feed_text(bob_status["feed"]) in config  # dialed at every start from now on
        row = page.locator(f"#peers tbody tr[data-key='{feed_text(bob_status['feed'])}']")
        expect(row.locator("td").nth(2)).to_contain_text("connected")
        assert call(alice.wait_for_size, 3, spacetime=True) >= 3  # caught up
        expect(row.locator("td").nth(3)).not_to_have_text("0")  # messages received
        # Rates from two polls: messages and kilobytes a second, each way.
        expect(row.locator("td").nth(5)).to_contain_text(" msg, ")
        expect(row.locator("td").nth(6)).to_contain_text(" kB")
        expect(row.locator("td").nth(7)).to_have_text("0")  # nothing carried that we lack
        expect(row.locator("td").nth(8)).to_have_text("")  # every feed carried: none left out
        expect(row.locator("td").nth(9)).to_contain_text("now (connected")

        row.locator("button[data-peer-action=disconnect]").click()
        expect(page.locator("#peer-result")).to_have_text("disconnect: done")
        expect(row.locator("td").nth(2)).to_have_text("not connected")
        expect(row.locator("td").nth(9)).to_contain_text(" s ago")  # last seen

        page.fill("form.connect input[name=address]", str(bob_status["listen"]))
        page.fill("form.connect input[name=key]", own)  # ourselves: refused
        page.click("form.connect button")
        expect(page.locator("form.connect .result")).to_contain_text("this node's own")

        page.fill("form.connect input[name=key]", feed_text(bob_status["feed"]))
        page.fill("form.connect input[name=address]", "no port here")
        page.click("form.connect button")
        result = page.locator("form.connect .result")
        expect(result).to_have_attribute("data-state", "error")
        assert result.inner_text().startswith("bad-request: ")
    finally:
        for node in (alice, bob):
            assert call(node.stop) == 0
