"""The browser tests' fixtures: one headless Chromium, a fresh page per test, a web node.

Every fixture here is a plain (sync) one and the tests that use them are plain
functions: see tests/browser/__init__.py for why, and for `call` and `WebNode`.
Without Chromium or playwright, each test that asks for `browser` or `page` is
skipped, saying what is missing and how `make test` gets it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.browser import VIEWPORT, WAIT_MS, WebNode, call, chromium, why_no_browser


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium, headless, shared by the session's browser tests."""
    reason = why_no_browser()
    if reason is not None:
        pytest.skip(reason)
    with chromium() as browser:
        yield browser


@pytest.fixture
def pages(browser):
    """`pages()`: another page of the browser, in a context of its own, closed when the test
    ends, so no page of a finished test (a live view of a stopped node) runs on beside the
    rest of the suite."""
    opened = []

    def open_page():
        page = browser.new_page()
        opened.append(page)
        return page

    yield open_page
    for page in opened:
        page.close()


@pytest.fixture
def page(browser):
    """A page in a context of its own (no cookies or storage from other tests), 1200x800;
    navigations and waits fail after `WAIT_MS`."""
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(WAIT_MS)
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture
def web_node(tmp_path) -> Iterator[WebNode]:
    """A started node ("web") with the web view on a free port; stopped after the test,
    which fails if the node does not stop cleanly."""
    node = WebNode(tmp_path, "web")
    call(node.start)
    yield node
    if node.process is not None:
        assert call(node.stop) == 0
