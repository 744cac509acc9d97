"""The status page and `/metrics` of a real node, in headless Chromium: the token is
required, the page shows the node, the metrics parse and count what the node holds."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from tests.browser import call, tangled


def test_without_the_token_the_browser_gets_a_401_and_nothing_of_the_node(page, web_node):
    call(web_node.publish, "something to count")
    wrong = web_node.token[:-1] + ("A" if web_node.token[-1] != "A" else "B")
    for path in ("", "status", "metrics", "t/chat/nowhere"):
        for url in (web_node.base + path, f"{web_node.base}{path}?token={wrong}"):
            response = page.goto(url)
            assert response.status == 401, url
            assert response.headers["www-authenticate"] == "Bearer"
            shown = page.content()
            assert "a token is required" in page.inner_text("body")
            assert web_node.feed_id not in shown and "tanglenode_" not in shown
            assert "1 messages" not in shown and "<nav" not in shown


def test_with_the_token_the_status_page_shows_the_node(page, web_node):
    tangled(web_node, "about", "webby")
    call(web_node.publish, "hello")
    response = page.goto(web_node.url("/status"))
    assert response.status == 200
    assert page.title() == "status · tanglenode"
    assert page.locator("h1").inner_text() == "~webby"  # the name it gave itself
    feed = page.locator("code", has_text=web_node.feed_id)
    assert feed.count() == 1 and feed.is_visible()
    assert "1 feeds, 2 messages, 0 forks, 0 stalled" in page.inner_text("body")
    with page.expect_navigation() as navigation:  # the links carry the token
        page.get_by_role("link", name="status").click()
    assert navigation.value.status == 200
    assert page.url == web_node.url("/status")
    assert page.locator("code", has_text=web_node.feed_id).is_visible()


def test_metrics_fetched_by_the_browser_parse_and_count_the_messages(page, web_node):
    for text in ("one", "two", "three"):
        call(web_node.publish, text)
    counts = []
    for _ in range(2):
        response = page.goto(web_node.url("/metrics"))
        assert response.status == 200
        assert response.headers["content-type"].startswith("text/plain; version=")
        samples = {
            sample.name: sample.value
            for family in text_string_to_metric_families(response.text())
            for sample in family.samples
        }
        assert samples["tanglenode_messages"] == call(web_node.status)["messages"]
        counts.append(samples["tanglenode_messages"])
        call(web_node.publish, "one more")  # counted on the next load
    assert counts == [3, 4]
