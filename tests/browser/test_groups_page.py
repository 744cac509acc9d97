"""Private groups made and run from the browser (docs/WEB.md, "The group pages"), on two real
nodes: a group created in alice's page opens its own page; bob, added there, is listed as a
member and finds the group, and what alice wrote to it there, on his own node; excluded, he
is no longer a member and a new epoch is open, once, though the page lost the first answer and
was clicked again."""

from __future__ import annotations

from tanglenode.protocol.identity import parse_message_id
from tanglenode.storage.groups.state import GROUP
from tests.browser import WebNode, call, losing_the_first_answer, tangled

NAME = "Allotment <crew> & co"


def test_a_group_made_in_the_browser_takes_a_member_and_excludes_him(pages, tmp_path):
    from playwright.sync_api import expect

    alice, bob = WebNode(tmp_path, "alice"), WebNode(tmp_path, "bob")
    call(alice.start)
    call(bob.start, [alice])
    try:
        tangled(bob, "about", "bob")
        tangled(alice, "about", "alice")
        tangled(alice, "follow", bob.feed_id)
        call(alice.wait_for_size, 3, spacetime=True)  # bob's name, ours, and our follow
        page = pages()
        page.goto(alice.url("/groups"))
        page.fill("form.group-create input[name=name]", "a \u202e turn")  # no group's name
        page.click("form.group-create button")
        result = page.locator("form.group-create .result")
        expect(result).to_have_attribute("data-state", "error")
        expect(result).to_contain_text("bad-request: a group name is printable text")
        page.fill("form.group-create input[name=name]", NAME)
        page.click("form.group-create button")
        page.wait_for_url("**/groups/**")
        expect(page.locator("h1")).to_have_text(NAME)  # as text, never as HTML
        assert page.locator("crew").count() == 0
        expect(page.locator("#members li")).to_have_count(1)
        group = parse_message_id("%" + page.url.split("/groups/")[1].split("?")[0])

        # bob is offered by name among the people alice follows
        offered = page.locator("datalist#people option")
        expect(offered).to_have_count(1)
        assert offered.get_attribute("value") == bob.feed_id
        page.fill("form.group-add input[name=member]", bob.feed_id)
        page.click("form.group-add button")
        expect(page.locator("#members li")).to_have_count(2)
        expect(page.locator(f"#members [data-feed='{bob.feed_id}']")).to_have_text("~bob")

        page.fill("form.compose textarea", "Seeds arrive <i>Tuesday</i>")
        page.click("form.compose button")
        posts = page.locator("#group-posts li.post")
        expect(posts.locator(".text")).to_have_text(["Seeds arrive <i>Tuesday</i>"])  # live

        call(bob.wait_for_size, 3, tangle=GROUP, root=group)  # the init, the add, the post
        call(bob.wait_for_size, 6, spacetime=True)  # and alice's name
        theirs = pages()
        theirs.goto(bob.url("/groups"))
        expect(theirs.locator("#groups tbody tr a")).to_have_text([NAME])
        with theirs.expect_navigation():
            theirs.locator("#groups tbody tr a").click()
        expect(theirs.locator("#group-posts li.post header")).to_contain_text(["~alice"])
        expect(theirs.locator("#group-posts li.post .text")).to_have_text(
            ["Seeds arrive <i>Tuesday</i>"]
        )
        assert theirs.locator("#group-posts i").count() == 0

        # the exclusion's first answer is lost (and a draft in the box keeps the live page
        # from drawing itself again): clicked again, the same request (its key) goes, and
        # the node excludes once (one new epoch, not two)
        bodies: list[str] = []
        page.route("**/api/group-exclude", losing_the_first_answer(bodies))
        page.on("dialog", lambda dialog: dialog.accept())
        exclude = page.locator(f"#members button[data-exclude='{bob.feed_id}']")
        page.fill("form.compose textarea", "a draft")  # the page is not drawn again meanwhile
        exclude.click()
        expect(page.locator("#members-result")).to_have_attribute("data-state", "error")
        expect(exclude).to_be_enabled()
        exclude.click()
        expect(page.locator("#members li")).to_have_count(1)
        assert len(bodies) == 2 and bodies[1] == bodies[0]  # the same request, key and all
        expect(page.locator("#epochs tbody tr")).to_have_count(2)
        assert page.locator(f"#members [data-feed='{bob.feed_id}']").count() == 0
    finally:
        for node in (alice, bob):
            assert call(node.stop) == 0
