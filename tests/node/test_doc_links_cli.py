"""`tangled doc link` and `tangled doc resolve` on a stopped node's store: the real CLI."""

from __future__ import annotations

import json

import pytest

from tests.node.test_cli import Node


@pytest.fixture
def ready(tmp_path) -> Node:
    node = Node(tmp_path)
    node.ok("init")
    return node


def test_a_link_taken_on_the_command_line_resolves_after_edits_and_deletion(ready):
    doc = ready.ok("doc", "create", "notes").strip()
    ready.ok("doc", "insert", doc, "0", "Meet at the old mill at noon.")
    link = ready.ok("doc", "link", doc, "--match", "old mill").split()[-1]
    assert link.startswith("tangled:link/")
    assert ready.ok("doc", "resolve", link) == "old mill\n"
    ready.ok("doc", "insert", doc, "15", " red")  # inside: "old red mill"
    ready.ok("doc", "insert", doc, "0", "Tuesday: ")  # before it
    assert ready.ok("doc", "resolve", link) == "old red mill\n"
    shown = json.loads(ready.ok("doc", "resolve", link, "--json"))
    text = ready.ok("doc", "show", doc)
    assert text[shown["start"] : shown["start"] + len(shown["text"])] == "old red mill"
    ready.ok("doc", "delete", doc, str(shown["start"]), str(len(shown["text"])))
    done = ready.run("doc", "resolve", link)
    assert done.returncode == 0
    assert done.stdout == "old mill\n" and "deleted" in done.stderr  # as it read


def test_links_refuse_what_is_not_one(ready):
    doc = ready.ok("doc", "create", "notes").strip()
    ready.ok("doc", "insert", doc, "0", "abc")
    for args in (
        ("doc", "link", doc),
        ("doc", "link", doc, "--range", "2:1"),
        ("doc", "link", doc, "--range", "0:9"),
        ("doc", "link", doc, "--match", "zzz"),
        ("doc", "resolve", "tangled:link/nope"),
    ):
        done = ready.run(*args)
        assert done.returncode == 3, (args, done.stderr)
        assert "Traceback" not in done.stderr
