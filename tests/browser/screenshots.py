"""`make screenshots`: docs/img/home-view.png, thread-view.png, tangle-view.png,
document-view.png, document-editing.png, groups-view.png, peers-view.png and peers-phone.png
(390 px wide), of real nodes.

Two real nodes, alice and bob (`tangled run` with the web view on, in a
temporary directory; bob dials alice), name themselves (`tangled about`),
hold a short conversation in a tangle "chat" and write a document together,
each from their own node and each waiting to hold the other's last word
before answering, through the real CLI. Once both hold everything, headless
Chromium (the browser tests' setup, tests/browser/__init__.py) opens alice's
`/t/chat/ROOT` and `/doc/ROOT` at 1200x800 and saves each page as a PNG;
then types a line into the document's editor and saves the page scrolled to
it, and saves alice's `/peers` with bob connected. Alice follows bob, bob
starts a second conversation, and alice a group with bob in it, for her
home page (`/`), the thread page of "chat", and the group's page; the peers
page is saved again at a phone's width (390 px), which must not scroll
sideways.

It waits for the pages' contract before taking a picture: the tangle view
live (`#live[data-state=live]`) with one joined `tr[data-id]` of
`table#timeline` per message, in the node's timeline order; the document view
live with the final text in `#text`. A page that answers other than 200, or
does not keep that contract within the deadline, fails the run (exit 1) and
neither picture is saved. `--as-is` saves the pages whatever they
show, without those checks (to try this script on pages still being built);
`--out DIR` saves elsewhere.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from tanglenode.node.localnet import kill_leftovers
from tanglenode.protocol.identity import message_text, parse_message_id
from tests.browser import VIEWPORT, WAIT_MS, WebNode, call, chromium, tangled, why_no_browser

ROOT = Path(__file__).resolve().parents[2]
CONVERSATION = [  # (who, what): alice opens the tangle, then each answers the one before
    ("alice", "Shall we write the plan for Friday together?"),
    ("bob", "Yes! I'll start a list of what to bring."),
    ("alice", "I opened a document for it: edit away."),
    ("bob", "Added the cake. Is 7:30 too late?"),
    ("alice", "7:30 is perfect. See you there!"),
]
DOC_TITLE = "Friday dinner"
COMMENT, REPLY = "Is it open on Fridays?", "Yes: booked for 7:30."
DOC_EDITS = [  # (who, the whole text after their edit): `tangled doc edit` sends the difference
    ("alice", "Friday dinner\n\nWhere: the usual place\nWhen: 7 pm\n"),
    ("bob", "Friday dinner\n\nWhere: the usual place\nWhen: 7 pm\nBring: a cake\n"),
    ("alice", "Friday dinner\n\nWhere: Luigi's, on the corner\nWhen: 7 pm\nBring: a cake\n"),
    ("bob", "Friday dinner\n\nWhere: Luigi's, on the corner\nWhen: 7:30 pm\nBring: a cake\n"),
    (
        "alice",
        "Friday dinner\n\nWhere: Luigi's, on the corner\nWhen: 7:30 pm\n"
        "Bring: a cake, and the photos from May\n",
    ),
]


SECOND = [  # bob's own thread, for the home page: (who, what)
    ("bob", "Does anyone have a ladder I could borrow on Saturday?"),
    ("alice", "Mine is in the shed, come and take it."),
]
GROUP_NAME = "Garden club"
GROUP_POST = "Seeds arrive on Tuesday: who can take the tomatoes?"
PHONE = {"width": 390, "height": 844}


class ScreenshotError(Exception):
    """A page that is not there yet, or does not keep its contract: nothing is saved."""


def sync(source: WebNode, target: WebNode, **which: object) -> None:
    """Wait until `target` holds as many messages of a timeline as `source` does."""
    size = len(call(source.timeline, **which))
    call(target.wait_for_size, size, **which)


def converse(alice: WebNode, bob: WebNode, lines=CONVERSATION, *, named: bool = True) -> bytes:
    """A conversation in tangle "chat"; its root."""
    people = {"alice": alice, "bob": bob}
    if named:
        for name, node in people.items():
            tangled(node, "about", name)
    sync(alice, bob, spacetime=True)
    sync(bob, alice, spacetime=True)
    root: bytes | None = None
    for name, text in lines:
        author = people[name]
        content = json.dumps({"type": "post", "text": text})
        where = "chat" if root is None else f"chat={message_text(root)}"
        written = tangled(author, "publish", content, "--tangle", where).strip()
        root = root or parse_message_id(written)
        sync(author, bob if author is alice else alice, tangle="chat", root=root)  # then answered
    assert root is not None
    return root


def write_document(alice: WebNode, bob: WebNode) -> tuple[bytes, str]:
    """The document alice starts and both edit; its id and final text."""
    people = {"alice": alice, "bob": bob}
    doc = parse_message_id(tangled(alice, "doc", "create", DOC_TITLE).strip())
    for name, text in DOC_EDITS:
        author = people[name]
        other = bob if author is alice else alice
        tangled(author, "doc", "edit", message_text(doc), "-", "--force", stdin=text)
        sync(author, other, tangle="doc", root=doc)  # the next edit starts from all of it
    # A comment on a range, and its answer, for the margin (docs/DOCUMENTS.md, "Comments").
    comment = tangled(bob, "doc", "comment", message_text(doc), COMMENT, "--match", "Luigi's")
    sync(bob, alice, tangle="doc", root=doc)
    tangled(alice, "doc", "comment", "--reply", comment.strip(), REPLY)
    sync(alice, bob, tangle="doc", root=doc)
    shown = json.loads(tangled(alice, "doc", "show", message_text(doc), "--json"))
    assert shown["text"] == DOC_EDITS[-1][1], shown
    return doc, shown["text"]


def garden_club(alice: WebNode, bob: WebNode) -> bytes:
    """Alice's group with bob in it, and a post to it; its id."""
    group = parse_message_id(tangled(alice, "group", "create", GROUP_NAME).strip())
    tangled(alice, "group", "add", message_text(group), bob.feed_id)
    post = json.dumps({"type": "post", "text": GROUP_POST})
    tangled(alice, "group", "post", message_text(group), post)
    return group


def photograph(page, url: str, ready, as_is: bool) -> bytes:
    """Open `url`, wait for `ready(page)` (unless `as_is`); the viewport as PNG."""
    from playwright.sync_api import Error

    where = url.split("?")[0]  # no token in messages
    response = page.goto(url)
    status = response.status if response is not None else "nothing"
    print(f"{where}: {status}", flush=True)
    if not as_is:
        if status != 200:
            raise ScreenshotError(f"{where} answered {status}")
        try:
            if page.locator("#live").count():  # a live page: once its stream is open
                page.locator("#live[data-state=live]").wait_for(state="attached")
            ready(page)
        except (Error, AssertionError) as error:
            raise ScreenshotError(f"{where}: {str(error).splitlines()[0]}") from None
    return page.screenshot(animations="disabled")


def tangle_ready(expected: list[str]):
    """The tangle view is ready: one joined row per message, in the node's order."""

    def ready(page) -> None:
        from playwright.sync_api import expect

        rows = page.locator("table#timeline tbody tr[data-id]")
        joined = page.locator("table#timeline tbody tr[data-id][data-state=joined]")
        expect(joined).to_have_count(len(expected), timeout=WAIT_MS)
        shown = [rows.nth(i).get_attribute("data-id") for i in range(rows.count())]
        if shown != expected:
            raise ScreenshotError(f"the timeline shows {shown}, the node holds {expected}")

    return ready


def document_ready(text: str):
    """The document view is ready: `#text` holds the final text, the margin its comment, and
    bob's selection (his page open on his node) shows in it, marked with his name."""

    def ready(page) -> None:
        from playwright.sync_api import expect

        expect(page.locator("#text")).to_have_text(text, timeout=WAIT_MS)
        expect(page.locator("#comment-list .reply-text")).to_have_text(REPLY, timeout=WAIT_MS)
        expect(page.locator("#text mark[data-presence='~bob']")).to_be_attached(timeout=WAIT_MS)

    return ready


def bob_selects(page, bob: WebNode, doc: bytes, text: str, word: str) -> None:
    """Bob's page of the document, on his node, with `word` selected: his presence."""
    page.goto(bob.url(f"/doc/{message_text(doc)[1:]}"))
    page.locator("#live[data-state=live]").wait_for(state="attached")
    page.locator("#editor-state[data-state=saved]").wait_for(state="attached")
    start = text.index(word)
    end = start + len(word)
    page.locator("#text").evaluate(
        f"area => {{ area.focus(); area.setSelectionRange({start}, {end}); }}"
    )


TYPED = "\nRSVP by Thursday, please."  # typed into the editor for its picture


def editing_ready(text: str):
    """The editor holds the text, a line typed into it is saved, and the page is scrolled
    to it."""

    def ready(page) -> None:
        from playwright.sync_api import expect

        editor = page.locator("#text")  # the dyed text is the editor (node/web/editor.js)
        page.wait_for_function("t => document.querySelector('#text').value === t", arg=text)
        editor.click()
        page.keyboard.press("Control+End")
        page.keyboard.type(TYPED, delay=10)
        expect(page.locator("#editor-state")).to_have_text("saved", timeout=WAIT_MS)
        expect(page.locator("#text")).to_have_text(text + TYPED, timeout=WAIT_MS)
        editor.scroll_into_view_if_needed()
        page.evaluate("window.scrollBy(0, 200)")

    return ready


def peers_ready(bob_key: str, width: int | None = None):
    """The peers page shows bob, connected and followed; no wider than `width`, if given."""

    def ready(page) -> None:
        from playwright.sync_api import expect

        row = page.locator(f"#peers tbody tr[data-key='{bob_key}']")
        expect(row.locator("td").nth(2)).to_contain_text("connected", timeout=WAIT_MS)
        expect(row.locator(".follow")).to_have_text("following", timeout=WAIT_MS)
        wide = page.evaluate("document.documentElement.scrollWidth")
        if width is not None and wide > width:
            raise ScreenshotError(f"the page is {wide} px wide at {width}")

    return ready


def count_ready(selector: str, count: int):
    """The page shows `count` of `selector`."""

    def ready(page) -> None:
        from playwright.sync_api import expect

        expect(page.locator(selector)).to_have_count(count, timeout=WAIT_MS)

    return ready


def make(out: Path, as_is: bool, root_dir: Path) -> None:
    alice = WebNode(root_dir, "alice")
    bob = WebNode(root_dir, "bob")
    call(alice.start)
    call(bob.start, [alice])
    chat = converse(alice, bob)
    doc, text = write_document(alice, bob)
    tangled(alice, "follow", bob.feed_id)
    converse(alice, bob, SECOND, named=False)
    group = garden_club(alice, bob)
    sync(bob, alice, spacetime=True)  # alice holds everything bob wrote, names included
    expected = [message_text(i) for _rank, i in call(alice.timeline, tangle="chat", root=chat)]
    with chromium() as browser:
        context = browser.new_context(viewport=VIEWPORT)
        context.set_default_timeout(WAIT_MS)
        page = context.new_page()
        bob_selects(context.new_page(), bob, doc, text, "Luigi's")
        thread = f"/thread/chat/{message_text(chat)[1:]}"
        shots = {
            "home-view.png": photograph(
                page, alice.url("/"), count_ready("article.thread", 2), as_is
            ),
            "thread-view.png": photograph(
                page, alice.url(thread), count_ready("#posts li.post", len(CONVERSATION)), as_is
            ),
            "tangle-view.png": photograph(
                page, alice.url(f"/t/chat/{message_text(chat)[1:]}"), tangle_ready(expected), as_is
            ),
            "document-view.png": photograph(
                page, alice.url(f"/doc/{message_text(doc)[1:]}"), document_ready(text), as_is
            ),
            "document-editing.png": photograph(
                page, alice.url(f"/doc/{message_text(doc)[1:]}"), editing_ready(text), as_is
            ),
            "groups-view.png": photograph(
                page,
                alice.url(f"/groups/{message_text(group)[1:]}"),
                count_ready("#members li", 2),
                as_is,
            ),
            "peers-view.png": photograph(
                page, alice.url("/peers"), peers_ready(bob.feed_id), as_is
            ),
        }
        context.close()
        phone = browser.new_context(viewport=PHONE)
        phone.set_default_timeout(WAIT_MS)
        shots["peers-phone.png"] = photograph(
            phone.new_page(), alice.url("/peers"), peers_ready(bob.feed_id, PHONE["width"]), as_is
        )
        phone.close()
    out.mkdir(parents=True, exist_ok=True)
    for name, png in shots.items():  # both or neither
        (out / name).write_bytes(png)
        print(f"saved {out / name}")
    for node in (bob, alice):
        if call(node.stop) != 0:
            raise ScreenshotError(f"{node.name} did not stop cleanly (see {node.log_path})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make screenshots", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img", help="where to save")
    parser.add_argument("--as-is", action="store_true", help="save the pages without checks")
    options = parser.parse_args(argv)
    reason = why_no_browser()
    if reason is not None:
        print(f"screenshots: {reason}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="tangled-screenshots-") as root_dir:
        try:
            make(options.out, options.as_is, Path(root_dir))
        except (ScreenshotError, AssertionError) as error:
            print(f"screenshots: {error}; nothing saved", file=sys.stderr)
            return 1
        finally:
            kill_leftovers()
    return 0


if __name__ == "__main__":
    sys.exit(main())
