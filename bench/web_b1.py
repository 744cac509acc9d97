"""Keystrokes through the browser's editor: the single-client cases of dmonad's crdt-benchmarks.

Each case is N = 6,000 operations of one person on an empty document, as
crdt-benchmarks' B1 defines them (one op a keystroke, from an empty text):

  B1.1  append N characters, one by one
  B1.2  insert a string of N characters at once
  B1.3  prepend N characters, one by one
  B1.4  insert N characters at random positions
  B1.5  insert N words at random positions
  B1.6  insert a string of N characters, then delete it whole
  B1.7  insert or delete N characters at random positions, half and half

They run through the page's path: a real node with the web view, Debian's
Chromium on the document page, and a script in the page that applies each
op to the editor (`#text`; a textarea before issue 46) and fires its `input` event, yielding to the
page every 10 ops (so its 150 ms batching, requests and stream run as they
do while a person types, only faster). A case ends when the editor says
`saved` and the node's text is the page's. Printed per case: ms per
keystroke (the wall time over N), the messages and their bytes on the
node, and pycrdt (Yrs) applying the same ops in memory in the same run.

    .venv/bin/python bench/web_b1.py [--ops 6000] [--only B1.4 ...]
"""

from __future__ import annotations

import argparse
import platform
import random
import string
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tanglenode.node.localnet import Node, kill_leftovers
from tanglenode.node.web.token import read_token
from tanglenode.protocol.identity import message_text

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
WORDS = ["the ", "quick ", "brown ", "fox ", "jumps ", "over ", "lazy ", "dog "]

# Applies `ops` ([pos, deleted, inserted] each, code units = code points: ASCII only) to the
# editor as typing would, yielding every 10; resolves when the last input is fired.
DRIVE = """async (ops) => {
  const area = document.getElementById("editor") || document.getElementById("text");
  for (let i = 0; i < ops.length; i++) {
    const [pos, del, ins] = ops[i];
    area.setRangeText(ins, pos, pos + del, "end");
    area.dispatchEvent(new InputEvent("input", { bubbles: true }));
    if (i % 10 === 9) await new Promise((resolve) => setTimeout(resolve, 0));
  }
}"""


def cases(n: int, seed: int = 1) -> dict[str, list[tuple[int, int, str]]]:
    """Each case's ops: (position, characters deleted, text inserted), on an empty text."""
    rng = random.Random(seed)

    def letter() -> str:  # random letters: a diff cannot mistake where each one went
        return rng.choice(string.ascii_lowercase)

    made: dict[str, list[tuple[int, int, str]]] = {}
    made["B1.1"] = [(i, 0, letter()) for i in range(n)]
    made["B1.2"] = [(0, 0, "".join(letter() for _ in range(n)))]
    made["B1.3"] = [(0, 0, letter()) for _ in range(n)]
    made["B1.4"] = [(rng.randint(0, length), 0, letter()) for length in range(n)]
    length, ops = 0, []
    for _ in range(n):
        word = rng.choice(WORDS)
        ops.append((rng.randint(0, length), 0, word))
        length += len(word)
    made["B1.5"] = ops
    made["B1.6"] = [(0, 0, "".join(letter() for _ in range(n))), (0, n, "")]
    length, ops = 0, []
    for _ in range(n):
        if length and rng.random() < 0.5:
            ops.append((rng.randrange(length), 1, ""))
            length -= 1
        else:
            ops.append((rng.randint(0, length), 0, letter()))
            length += 1
    made["B1.7"] = ops
    return made


def apply_text(ops: list[tuple[int, int, str]]) -> str:
    text = ""
    for pos, deleted, inserted in ops:
        text = text[:pos] + inserted + text[pos + deleted :]
    return text


def time_pycrdt(ops: list[tuple[int, int, str]]) -> float:
    from pycrdt import Doc, Text

    started = time.perf_counter()
    text = Doc().get("text", type=Text)
    for pos, deleted, inserted in ops:
        if deleted:
            del text[pos : pos + deleted]
        if inserted:
            text.insert(pos, inserted)
    return time.perf_counter() - started


def run(function, *args, **kwargs):
    import functools

    return trio.run(functools.partial(function, *args, **kwargs))


def doc_bytes(store_path: Path, docs: dict[str, bytes]) -> dict[str, tuple[int, int]]:
    """Each case's (messages, their signed bytes) in the stopped node's store, the doc/init
    left out."""
    from tanglenode.protocol.message import decode_message
    from tanglenode.storage.store import FeedStore

    found = {name: (0, 0) for name in docs}
    case_of = {doc: name for name, doc in docs.items()}
    with FeedStore(store_path, map_size=2**31) as store:
        for raw in store.feeds.iter_raw():
            link = decode_message(bytes(raw)).tangles.get("doc")
            name = None if link is None or link.root is None else case_of.get(link.root)
            if name is not None:
                count, size = found[name]
                found[name] = (count + 1, size + len(raw))
    return found


def one_case(browser, node: Node, name: str, ops, web: str, token: str) -> dict:
    doc = node.call("doc-create", title=name)["doc"]
    page = browser.new_page()
    page.goto(f"{web}doc/{message_text(doc)[1:]}?{urlencode({'token': token})}")
    page.wait_for_selector("#editor-state[data-state=saved]")
    expected = apply_text(ops)
    started = time.perf_counter()
    page.evaluate(DRIVE, [list(op) for op in ops])
    page.wait_for_selector("#editor-state[data-state=saved]", timeout=600_000)
    seconds = time.perf_counter() - started
    text = node.call("doc-show", doc=doc)["text"]
    page.close()
    if text != expected:
        raise SystemExit(f"{name}: the node's text is not what was typed")
    return {"seconds": seconds, "doc": doc}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=6000)
    parser.add_argument("--only", action="append")
    options = parser.parse_args()
    from playwright.sync_api import sync_playwright

    chosen = {k: v for k, v in cases(options.ops).items() if not options.only or k in options.only}
    print(f"machine: {platform.machine()}, Python {platform.python_version()}, one node")
    with tempfile.TemporaryDirectory() as scratch, sync_playwright() as playwright:
        node = Node(Path(scratch), "writer")
        run(node.start, [], {"TANGLED_WEB__LISTEN": "127.0.0.1:0"})
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            web = node.call("status")["web"]
            token = read_token(node.data_dir / "web-token") or ""
            runs = {
                name: one_case(browser, node, name, ops, web, token) for name, ops in chosen.items()
            }
        finally:
            browser.close()
            run(node.stop)
            kill_leftovers()
        sizes = doc_bytes(node.data_dir / "store", {name: r["doc"] for name, r in runs.items()})
    print("| case | ops | ms per keystroke | pycrdt us per op | messages | bytes | bytes per op |")
    print("|---|---|---|---|---|---|---|")
    for name, ops in chosen.items():
        crdt = time_pycrdt(ops)
        messages, size = sizes[name]
        print(
            f"| {name} | {len(ops):,} | {runs[name]['seconds'] * 1000 / len(ops):.2f}"
            f" | {crdt * 1e6 / len(ops):.1f} | {messages:,} | {size:,} | {size / len(ops):.1f} |"
        )


if __name__ == "__main__":
    main()
