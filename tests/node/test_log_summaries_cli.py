"""`tangled log`: one bounded, terminal-safe line per message, saying what it says
(node/present/summary.py); `--json` keeps every field. The real CLI on a stopped node's
store."""

from __future__ import annotations

import json

import pytest

from tanglenode.node.present.summary import MAX_SUMMARY
from tanglenode.protocol.identity import feed_text
from tests.factories import Feed
from tests.node.test_cli import Node
from tests.node.test_names_cli import about, ingest

POST = "Garden day\x1b]52;c;cm0gLXJm\x07 \x1b[2J\u202e\nbring gloves\nand seeds"


@pytest.fixture
def ready(tmp_path) -> Node:
    node = Node(tmp_path)
    node.feed_id = node.ok("init").strip()
    return node


def says(node: Node, *args: str) -> list[str]:
    """The content column of `log`'s rows (piped: not cut to a terminal)."""
    lines = node.ok("log", *args).splitlines()
    assert lines[0].split()[:3] == ["SEQ", "ID", "TANGLES"]
    return [line.split("  ")[-1] for line in lines[1:]]


def test_each_message_is_one_line_saying_what_it_does(ready, tmp_path):
    carol, dan = Feed("log-carol"), Feed("log-dan")
    ingest(ready, carol.append(about(carol, "carol")))  # named; dan never named himself
    ready.ok("about", "me")
    doc = ready.ok("doc", "create", "Garden notes").strip()
    ready.ok("doc", "insert", doc, "0", "dig " * 2000)  # 8,000 characters typed
    file = tmp_path / "notes.txt"
    ready.ok("doc", "show", doc, "--out", str(file))
    file.write_text("dig " * 1999 + "plant ", encoding="utf-8")
    ready.ok("doc", "edit", doc, str(file))
    ready.ok("follow", feed_text(carol.public))
    ready.ok("follow", feed_text(dan.public))
    ready.ok("block", feed_text(dan.public))
    ready.ok("publish", json.dumps({"type": "post", "text": POST}))
    ready.ok("publish", json.dumps({"type": "vote", "vote": {"value": 1, "link": "x" * 5000}}))

    rows = says(ready)
    dan_short = feed_text(dan.public)[:9] + "…"
    assert rows == [
        "names itself “me”",
        "new document “Garden notes”",
        "+8000 -0 in “Garden notes”",
        "+5 -3 in “Garden notes”",  # a whole word: "dig" out, "plant" in
        "follows ~carol",
        f"follows {dan_short}",
        f"blocks {dan_short}",
        "Garden day?]52;c;cm0gLXJm? ?[2J? …",  # the first line, every control seen as ?
        rows[-1],
    ]
    assert rows[-1].startswith('vote {"vote":{"link":"xxx') and rows[-1].endswith("…")
    assert len(rows[-1]) == MAX_SUMMARY
    whole = ready.ok("log").splitlines()
    assert max(len(line.encode()) for line in whole) < 400  # no line of kilobytes
    assert not any(char < " " or "\x7f" <= char < "\xa0" for char in "".join(whole))

    ready.ok("name", feed_text(carol.public), "Carol C")  # our petname comes first
    assert "follows Carol C" in says(ready)


def test_json_keeps_every_field_of_every_message(ready):
    text = "first\nsecond \x1b[2J" + "x" * 3000
    ready.ok("publish", json.dumps({"type": "post", "text": text}))
    ready.ok("follow", feed_text(Feed("log-erin").public))
    rows = [json.loads(line) for line in ready.ok("log", "--json").splitlines()]
    assert rows[0]["content"] == {"type": "post", "text": text}
    assert rows[1]["content"] == {
        "type": "contact",
        "contact": feed_text(Feed("log-erin").public),
        "following": True,
        "blocking": False,
    }
    assert {"id", "author", "seq", "timestamp", "content"} <= rows[0].keys()
    assert "summary" not in rows[0]
