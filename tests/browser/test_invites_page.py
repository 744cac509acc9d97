"""Invites from the peers page in headless Chromium (docs/WEB.md, "Pages": `/peers`): one
node's page makes a code (shown with its QR code), the other's page uses it, and the two
nodes, both with the default scope, then carry each other."""

from __future__ import annotations

from tanglenode.protocol.identity import feed_text
from tests.browser import WebNode, call

DEFAULT_SCOPE = {"TANGLED_REPLICATION__HOPS": "2"}


def test_a_code_made_in_one_page_joins_the_other_node(pages, tmp_path):
    from playwright.sync_api import expect

    alice, bob = WebNode(tmp_path, "alice"), WebNode(tmp_path, "bob")
    call(alice.start, (), DEFAULT_SCOPE)
    call(bob.start, (), DEFAULT_SCOPE)
    try:
        call(alice.publish, {"type": "post", "text": "welcome, bob"})
        alice_feed = feed_text(call(alice.status)["feed"])

        page = pages()
        page.goto(alice.url("/peers"))
        page.select_option("form.invite-create select[name=expires]", str(86_400))
        page.click("form.invite-create button")
        expect(page.locator("form.invite-create .result")).to_contain_text("made")
        code = page.locator(".invite-code").input_value()
        assert code.startswith("inv1.")
        assert page.locator(".invite-qr").get_attribute("src").startswith("data:image/svg+xml")
        assert code not in page.url  # the code never travels in a URL

        other = pages()
        other.goto(bob.url("/peers"))
        other.fill("form.invite-use textarea[name=code]", code)
        other.click("form.invite-use button")
        result = other.locator("form.invite-use .result")
        expect(result).to_contain_text(f"joined {alice_feed}")
        expect(result).to_contain_text("they follow you back")
        # bob carries alice's post, alice bob's follow of her: nothing else typed
        assert call(bob.wait_for_size, 3, spacetime=True) >= 3
        assert call(alice.wait_for_size, 3, spacetime=True) >= 3

        listed = call(alice.request, "invite-list")["invites"]
        assert [(row["left"], row["redeemed_by"]) for row in listed] == [
            (0, [call(bob.status)["feed"]])
        ]

        other.fill("form.invite-use textarea[name=code]", "inv1.not-a-code")
        other.click("form.invite-use button")
        expect(result).to_have_attribute("data-state", "error")
        expect(result).to_contain_text("not an invite code")
    finally:
        for node in (alice, bob):
            assert call(node.stop) == 0
