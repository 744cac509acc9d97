"""A document's page in headless Chromium, on a real node: the text in blame colours, edits
applied live without a reload (code points, not UTF-16 units; others' markup stays text),
and the slider showing each revision dyed against the one before or the text now."""

from __future__ import annotations

import re

from tests.browser import call, tangled

TEXT = "#text"


def expect(locator):
    from playwright.sync_api import expect as expect_  # here: without playwright, skipped

    return expect_(locator)


def open_document(page, node, title: str) -> str:
    """Create a document, type into it, open its page once it is live; its id."""
    doc = tangled(node, "doc", "create", title).strip()
    tangled(node, "doc", "insert", doc, "0", "hello world")
    page.goto(node.url(f"/doc/{doc[1:]}"))
    page.wait_for_selector("#live[data-state=live]")
    page.evaluate("window.notReloaded = true")  # gone if the page were loaded again
    return doc


def test_edits_arrive_live_in_the_authors_colour(page, web_node):
    tangled(web_node, "about", "alice")
    doc = open_document(page, web_node, "notes")
    expect(page.locator(TEXT)).to_have_text("hello world")
    first = page.locator(f"{TEXT} span").first
    assert first.get_attribute("data-author") == web_node.feed_id
    assert page.locator("#legend span").all_inner_texts() == ["~alice"]

    tangled(web_node, "doc", "insert", doc, "0", "\U0001f600")  # one code point, two UTF-16 units
    expect(page.locator(TEXT)).to_have_text("\U0001f600hello world")
    tangled(web_node, "doc", "insert", doc, "1", "<img src=x onerror=alert(1)>, ")
    expect(page.locator(TEXT)).to_have_text("\U0001f600<img src=x onerror=alert(1)>, hello world")
    assert page.locator(f"{TEXT} img").count() == 0  # text, never markup
    assert page.locator(f"{TEXT} span.splice").inner_text() == "<img src=x onerror=alert(1)>, "
    tangled(web_node, "doc", "delete", doc, "0", "1")
    expect(page.locator(TEXT)).to_have_text("<img src=x onerror=alert(1)>, hello world")
    expect(page.locator(TEXT)).to_have_attribute("data-version", "4")
    assert page.locator("#version").get_attribute("max") == "4"
    assert page.evaluate("window.notReloaded") is True


def test_the_slider_shows_each_revision_dyed(page, web_node):
    doc = open_document(page, web_node, "history")
    tangled(web_node, "doc", "edit", doc, "-", "--force", stdin="hello there world")
    expect(page.locator(TEXT)).to_have_text("hello there world")
    revision = page.locator("#revision")
    expect(revision).to_have_attribute("data-version", "2")  # it follows the newest version
    expect(revision.locator("ins")).to_have_text(["there "])

    page.locator("#version").fill("1")
    expect(revision).to_have_attribute("data-version", "1")
    expect(revision).to_have_text("hello world")
    expect(revision.locator("ins")).to_have_text(["hello world"])
    expect(page.locator("#revision-info")).to_contain_text("v1 by")
    shared = page.locator("#revision-info code")  # the version's name on every node
    expect(shared).to_have_attribute("title", re.compile(r"^%[A-Za-z0-9_-]{43}$"))
    assert shared.get_attribute("title")[:9] + "…" == shared.text_content()

    page.locator("#against").select_option("current")
    expect(revision.locator("ins")).to_have_text(["there "])  # what came after v1
    expect(revision).to_have_text("hello there world")
    assert revision.locator("del").count() == 0
    assert page.evaluate("window.notReloaded") is True


def test_after_the_node_restarts_the_text_resumes_where_it_was(page, web_node):

    doc = open_document(page, web_node, "restart")
    tangled(web_node, "doc", "insert", doc, "11", "!")
    expect(page.locator(TEXT)).to_have_text("hello world!")
    port = web_node.base.rstrip("/").rsplit(":", 1)[1]
    assert call(web_node.stop) == 0
    page.wait_for_selector("#live[data-state=reconnecting]")
    call(web_node.start, extra_env={"TANGLED_WEB__LISTEN": f"127.0.0.1:{port}"})
    page.wait_for_selector("#live[data-state=live]")  # the browser reconnected by itself
    tangled(web_node, "doc", "insert", doc, "0", ">")
    expect(page.locator(TEXT)).to_have_text(">hello world!")  # nothing twice, nothing lost
    expect(page.locator(TEXT)).to_have_attribute("data-version", "3")
    assert page.evaluate("window.notReloaded") is True


def test_a_link_opens_the_document_with_its_range_highlighted_and_following_edits(page, web_node):
    doc = tangled(web_node, "doc", "create", "notes").strip()
    tangled(web_node, "doc", "insert", doc, "0", "The quick brown fox.")
    link = tangled(web_node, "doc", "link", doc, "--match", "quick brown").split()[-1]
    page.goto(web_node.url(f"/doc/{doc[1:]}", link=link))
    page.wait_for_selector("#live[data-state=live]")
    marked = page.locator(f"{TEXT} .linked")
    expect(marked).to_have_text(["quick brown"])
    tangled(web_node, "doc", "insert", doc, "9", " very")  # inside: "quick very brown"
    tangled(web_node, "doc", "insert", doc, "4", "so ")  # at its start: outside
    expect(page.locator(TEXT)).to_have_text("The so quick very brown fox.")
    assert "".join(marked.all_inner_texts()) == "quick very brown"
    assert page.locator("#linked").inner_text().startswith("The link points at characters 4 to 15")
    assert page.goto(web_node.url(f"/doc/{doc[1:]}", link="tangled:link/nope")).status == 400
