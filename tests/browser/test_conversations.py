"""Conversations as conversations (docs/WEB.md, "Home and threads"), on two real nodes: bob's
home page lists the thread alice (whom he follows) started, by its first post's text, with
its authors' names and its reply count; the thread page shows each post's text and author
in timeline order, takes a reply, and another node's page shows it without a reload being
asked for; what people type is shown as text, never as HTML."""

from __future__ import annotations

import re

from tanglenode.protocol.identity import message_text
from tests.browser import WebNode, call, tangled

FIRST = "Picnic on Sunday?\nBring <b>bread</b> & cheese"
REPLY = "Yes! I'll bring lemonade."


def thread_path(root: bytes) -> str:
    return f"/thread/chat/{message_text(root)[1:]}"


def test_home_lists_a_followed_persons_thread_and_its_page_reads_as_a_conversation(pages, tmp_path):
    from playwright.sync_api import expect

    alice, bob = WebNode(tmp_path, "alice"), WebNode(tmp_path, "bob")
    call(alice.start)
    call(bob.start, [alice])
    try:
        tangled(alice, "about", "alice")
        tangled(bob, "about", "bob")
        root = call(alice.publish, {"type": "post", "text": FIRST}, {"chat": None})["id"]
        call(bob.wait_for_size, 1, tangle="chat", root=root)
        home = pages()
        home.goto(bob.url("/"))  # bob neither follows alice nor wrote in it: not his
        expect(home.locator("#no-threads")).to_be_visible()
        tangled(bob, "follow", alice.feed_id)
        call(bob.publish, {"type": "post", "text": REPLY}, {"chat": root})
        call(alice.wait_for_size, 2, tangle="chat", root=root)
        call(bob.wait_for_size, 3, spacetime=True)  # alice's name on bob's node
        call(alice.wait_for_size, 3, spacetime=True)

        home.goto(bob.url("/"))
        assert home.title() == "home · tanglenode"
        thread = home.locator(f"article.thread[data-root='{message_text(root)[1:]}']")
        expect(thread.locator(".first")).to_have_text(FIRST)  # its lines, as text
        assert thread.locator("b").count() == 0
        expect(thread.locator(".authors")).to_have_text("~alice, ~bob")
        expect(thread.locator(".replies")).to_have_text("1 reply")
        with home.expect_navigation():
            thread.locator("a.open").click()
        assert f"/thread/chat/{message_text(root)[1:]}" in home.url

        posts = home.locator("#posts li.post")
        expect(posts).to_have_count(2)
        expect(posts.locator(".who")).to_have_text(["~alice", "~bob"])
        expect(posts.locator(".text")).to_have_text([FIRST, REPLY])
        assert home.locator("#posts li.post.first").get_attribute("data-id") == message_text(root)
        assert home.locator("#posts b").count() == 0
        expect(posts.first.locator("time")).to_have_text(
            re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")
        )
        with home.expect_navigation():  # the operators' table, one click away, and back
            home.get_by_role("link", name="as a table (operators)").click()
        assert f"/t/chat/{message_text(root)[1:]}" in home.url
        expect(home.locator("#timeline tbody tr")).to_have_count(2)
        with home.expect_navigation():
            home.get_by_role("link", name="read as a conversation").click()

        reader = pages()  # alice's page of the thread, open while bob answers in his
        reader.goto(alice.url(thread_path(root)))
        expect(reader.locator("#posts li.post")).to_have_count(2)
        home.fill("form.compose textarea", "See you at noon.")
        home.click("form.compose button")
        expect(home.locator("#posts li.post")).to_have_count(3)  # bob's own page, redrawn
        expect(reader.locator("#posts li.post .text").last).to_have_text("See you at noon.")
        expect(reader.locator("#posts li.post .who").last).to_have_text("~bob")
        assert call(alice.wait_for_size, 3, tangle="chat", root=root) == 3  # posted once

        erasable = reader.locator("#posts li.post:has(button[data-erase])")  # alice's own only
        expect(erasable).to_have_count(1)
        assert erasable.get_attribute("data-id") == message_text(root)
        ours = home.locator("#posts li.post").last
        assert home.locator("#posts button[data-erase]").count() == 2  # bob's two
        home.once("dialog", lambda dialog: dialog.accept())
        ours.locator("button[data-erase]").click()
        expect(ours.locator(".text")).to_have_text("(erased)")
        home.reload()
        expect(home.locator("#posts li.post .text").last).to_have_text("(erased)")  # the node's
    finally:
        for node in (alice, bob):
            assert call(node.stop) == 0


def test_a_conversation_started_from_home_opens_its_thread(page, web_node):
    from playwright.sync_api import expect

    page.goto(web_node.url("/"))
    expect(page.locator("#no-threads")).to_be_visible()
    page.fill("form.new-thread textarea", "Who's up for a walk?")
    page.click("form.new-thread button")
    page.wait_for_url("**/thread/chat/**")
    expect(page.locator("#posts li.post.first .text")).to_have_text("Who's up for a walk?")
    page.goto(web_node.url("/"))
    expect(page.locator("article.thread .first")).to_have_text(["Who's up for a walk?"])
    expect(page.locator("article.thread .replies")).to_have_text(["0 replies"])
