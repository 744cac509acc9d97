"""`tangled doc comment` and `tangled doc show --comments` on a stopped node's store: the real
CLI (docs/DOCUMENTS.md, "Comments")."""

from __future__ import annotations

import json

import pytest

from tests.node.test_cli import Node


@pytest.fixture
def ready(tmp_path) -> Node:
    node = Node(tmp_path)
    node.ok("init")
    return node


def test_a_comment_follows_its_range_and_stays_when_its_text_is_deleted(ready):
    doc = ready.ok("doc", "create", "notes").strip()
    ready.ok("doc", "insert", doc, "0", "Meet at the old mill at noon.")
    comment = ready.ok("doc", "comment", doc, "which mill?", "--match", "old mill").strip()
    assert comment.startswith("%")
    ready.ok("doc", "comment", "--reply", comment, "the one by the river")
    link = ready.ok("doc", "link", doc, "--match", "noon").split()[-1]
    ready.ok("doc", "comment", link, "or one?")
    ready.ok("doc", "insert", doc, "15", " red")  # inside: "old red mill"
    ready.ok("doc", "insert", doc, "0", "Tuesday: ")  # before it

    shown = json.loads(ready.ok("doc", "show", doc, "--comments", "--json"))
    text = shown["text"]
    first, second = shown["comments"]
    assert (first["text"], first["quote"]) == ("which mill?", "old red mill")
    assert not first["deleted"]
    assert text[first["start"] : first["start"] + len(first["quote"])] == "old red mill"
    assert [reply["text"] for reply in first["replies"]] == ["the one by the river"]
    assert (second["text"], second["quote"]) == ("or one?", "noon")  # in text order
    printed = ready.ok("doc", "show", doc, "--comments")
    assert printed.startswith(text) and "which mill?" in printed
    assert "the one by the river" in printed

    ready.ok("doc", "delete", doc, str(first["start"]), str(len("old red mill")))
    after = json.loads(ready.ok("doc", "show", doc, "--comments", "--json"))
    gone = next(c for c in after["comments"] if c["text"] == "which mill?")
    assert gone["deleted"] and gone["start"] is None and gone["quote"] == "old red mill"
    assert after["comments"][-1] == gone  # comments on deleted text come last, still listed


def test_comments_refuse_what_is_not_one(ready):
    doc = ready.ok("doc", "create", "notes").strip()
    ready.ok("doc", "insert", doc, "0", "abc")
    bad_input, not_found = 3, 4
    for args, code in (
        (("doc", "comment", doc, "no range"), bad_input),
        (("doc", "comment", doc, "two forms", "--range", "0:1", "--match", "a"), bad_input),
        (("doc", "comment", doc, "past the end", "--range", "0:9"), bad_input),
        (("doc", "comment", doc, "", "--range", "0:1"), bad_input),  # no text
        (("doc", "comment", doc, "x" * 9000, "--range", "0:1"), bad_input),  # too long
        (("doc", "comment", "--reply", doc, "the init is no comment"), not_found),
        (("doc", "comment", "tangled:link/nope", "not a link"), bad_input),
        (("doc", "comment", "tangled:link/nope", "no range with a link", "--range", "0:1"), 3),
        (("doc", "show", doc, "--comments", "--out", "f.txt"), bad_input),
    ):
        done = ready.run(*args)
        assert done.returncode == code, (args, done.stderr)
        assert "Traceback" not in done.stderr
    assert json.loads(ready.ok("doc", "show", doc, "--comments", "--json"))["comments"] == []


def test_an_inclusion_shows_in_place_with_doc_show_transclude(ready):
    report = ready.ok("doc", "create", "report").strip()
    ready.ok("doc", "insert", report, "0", "Budget: . End.")
    sheet = ready.ok("doc", "create", "sheet").strip()
    ready.ok("doc", "insert", sheet, "0", "total 1200 euros")
    link = ready.ok("doc", "link", sheet, "--match", "1200 euros").split()[-1]
    assert ready.ok("doc", "include", report, link, "--at", "8").startswith("%")
    assert ready.ok("doc", "show", report) == "Budget: . End."  # its own text, exactly
    assert ready.ok("doc", "show", report, "--transclude") == "Budget: ⟦1200 euros⟧. End."
    ready.ok("doc", "insert", sheet, "7", "9")  # inside the range: 19200
    rendered = json.loads(ready.ok("doc", "show", report, "--transclude", "--json"))["rendered"]
    assert [part["kind"] for part in rendered] == ["text", "included", "text"]
    assert rendered[1]["parts"] == [{"kind": "text", "text": "19200 euros"}]
    assert rendered[1]["doc"] == sheet
    for args in (
        ("doc", "include", report, link, "--at", "99"),
        ("doc", "include", report, "tangled:link/nope", "--at", "0"),
        ("doc", "show", report, "--transclude", "--at", "v1"),
    ):
        done = ready.run(*args)
        assert done.returncode == 3, (args, done.stderr)
