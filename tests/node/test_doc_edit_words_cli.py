"""`tangled doc edit FILE` publishes whole words (protocol/doc_diff.py): the real CLI on a
stopped node's store, read back through `doc log -p` and `doc blame`."""

from __future__ import annotations

import json

import pytest

from tests.node.test_cli import Node

BEFORE = "Saturday: compost worm bins (bob builds) by the shed\nbring gloves\n"
AFTER = "Saturday: compost (cancelled) by the shed\nbring gloves\n"


@pytest.fixture
def ready(tmp_path) -> Node:
    node = Node(tmp_path)
    node.ok("init")
    return node


def test_a_replaced_phrase_is_one_deletion_and_one_insertion_in_the_log(ready, tmp_path):
    doc = ready.ok("doc", "create", "garden").strip()
    ready.ok("doc", "insert", doc, "0", BEFORE)
    file = tmp_path / "garden.txt"
    ready.ok("doc", "show", doc, "--out", str(file))
    file.write_text(AFTER, encoding="utf-8")
    ready.ok("doc", "edit", doc, str(file))
    assert ready.ok("doc", "show", doc) == AFTER

    log = json.loads(ready.ok("doc", "log", doc, "-p", "--json"))
    change = log["versions"][-1]["change"]
    removed = [span["text"] for span in change if span["removed_by"]]
    inserted = [span["text"] for span in change if span["inserted_by"]]
    assert removed == ["worm bins (bob builds"] and inserted == ["(cancelled"]
    assert "".join(s["text"] for s in change if not s["removed_by"]) == AFTER

    plain = ready.ok("doc", "log", doc, "-p").splitlines()  # not a terminal: wdiff's marks
    last = max(n for n, line in enumerate(plain) if line.startswith("v"))  # the edit's row
    changed = [line.strip() for line in plain[last + 1 :]]
    assert len(changed) == 1
    assert "[-worm bins (bob builds-]" in changed[0] and "{+(cancelled+}" in changed[0]
    assert changed[0].count("[-") == 1 and changed[0].count("{+") == 1
