"""Tests in a real browser: Debian's headless Chromium, driven by playwright, on real nodes.

How a browser test runs
-----------------------
A browser test is a plain function (`def`, not `async def`): playwright's sync
API runs its own event loop and must not be called from inside Trio's, and
pytest-trio leaves plain functions alone. The nodes are real `tangled run`
processes (`WebNode`, node/localnet's `Node` with the web view on a free port);
the test drives them with `call(node.publish, ...)`, which is one short
`trio.run` per call, or with the real CLI, `tangled(node, "about", "alice")`:
the processes live on between calls, and the suite's clean-up kills any the
test leaves running.

Chromium is Debian's (/usr/bin/chromium, installed by `make browser`, a part of
`make test`), started by playwright through `executable_path` with the flags of
`CHROMIUM_FLAGS`, headless and off the network; playwright gives each launch a
new empty `--user-data-dir` and deletes it at the end. Playwright's own browser
download is never used. `why_no_browser()` says why the tests cannot run here,
for the skip. The fixtures (tests/browser/conftest.py): `browser` (one Chromium
for the session), `page` (a fresh context and page per test, 1200x800) and
`web_node` (a started `WebNode`, stopped after the test). `make screenshots`
(tests/browser/screenshots.py) uses the same helpers.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import subprocess
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlencode

import trio

from tanglenode.node.localnet import REQUEST_SECONDS, TANGLED, Node
from tanglenode.node.web.token import read_token

if TYPE_CHECKING:
    from playwright.sync_api import Browser

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",  # with the next four: no reaching out to the (closed) network
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
VIEWPORT = {"width": 1200, "height": 800}
WAIT_MS = REQUEST_SECONDS * 1000  # playwright's deadline for one navigation or wait

T = TypeVar("T")


def why_no_browser() -> str | None:
    """Why the browser tests cannot run here (the skip's reason), or None when they can."""
    if not CHROMIUM.exists():
        return (
            f"no Chromium at {CHROMIUM}: `make test` installs Debian's package "
            "(`apt-get install chromium`); the browser tests need it"
        )
    if importlib.util.find_spec("playwright") is None:
        return "no playwright: `make install` installs it (the dev extra of pyproject.toml)"
    return None


@contextmanager
def chromium() -> Iterator[Browser]:
    """Debian's Chromium, headless and off the network, through playwright's sync API."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=list(CHROMIUM_FLAGS), headless=True
        )
        try:
            yield browser
        finally:
            browser.close()


def losing_the_first_answer(bodies: list[str]) -> Callable[[Any], None]:
    """A playwright route handler: the first request reaches the node, which carries it
    out, but its answer never reaches the page (the connection resets); the others go
    through. Each request's body is noted in `bodies`, to compare a retry's with it."""

    def handle(route: Any) -> None:
        bodies.append(route.request.post_data or "")
        if len(bodies) == 1:
            route.fetch()  # the node does it ...
            route.abort("connectionreset")  # ... and the page never hears
        else:
            route.continue_()

    return handle


def call(function: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
    """Run one coroutine function of a node to its end, from a plain function: `trio.run`."""
    return trio.run(functools.partial(function, *args, **kwargs))


def tangled(node: Node, *args: str, stdin: str = "") -> str:
    """Run a real `tangled` command on `node`'s data directory; its output (it must succeed)."""
    done = subprocess.run(
        [str(TANGLED), "--data-dir", str(node.data_dir), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=REQUEST_SECONDS,
        check=False,
        env={**os.environ, "TANGLED_LOG_LEVEL": "warning"},
    )
    assert done.returncode == 0, f"tangled {' '.join(args)}: {done.stderr}"
    return done.stdout


class WebNode(Node):
    """A real node whose `start` also serves the web view on a free port of 127.0.0.1;
    `url(path)` is the address of one of its pages, token included."""

    base: str = ""  # http://127.0.0.1:PORT/, known once started
    token: str = ""

    async def start(
        self, peers: list[Node] | None = (), extra_env: dict[str, str] | None = None
    ) -> None:
        await super().start(peers, {"TANGLED_WEB__LISTEN": "127.0.0.1:0", **(extra_env or {})})
        with trio.fail_after(REQUEST_SECONDS):
            async with await self.client() as client:
                self.base = (await client.status())["web"]
        self.token = read_token(self.data_dir / "web-token") or ""
        assert self.base and self.token, "the node started without its web view"

    def url(self, path: str = "/", **query: str) -> str:
        """`path` (`/`, `/metrics`, `/t/chat/ROOT`) of this node's view, with the token."""
        return f"{self.base}{path.lstrip('/')}?{urlencode({'token': self.token, **query})}"

    async def status(self) -> dict[str, Any]:
        """The node's status, as `tangled status --json` reads it (over IPC)."""
        with trio.fail_after(REQUEST_SECONDS):
            async with await self.client() as client:
                return await client.status()
