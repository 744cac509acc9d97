"""`tangled doc export` and `doc import`, run as real processes on a real data directory."""

import json

import pytest

from tanglenode.protocol.weave_file import MAX_FILE_BYTES, parse_file
from tests.node.test_cli import Node


@pytest.mark.slow  # ten processes: about 5 s
def test_export_then_import_and_hostile_files_exit_3_at_their_offset(tmp_path):
    node = Node(tmp_path)
    node.ok("init")
    doc = node.ok("doc", "create", "greeting").strip()
    node.ok("doc", "insert", doc, "0", "hello world")
    node.ok("doc", "delete", doc, "0", "1")
    node.ok("doc", "insert", doc, "0", "H")
    assert node.ok("doc", "export", doc, "--format", "text1") == node.ok("doc", "show", doc)
    out = tmp_path / "doc.weave"
    node.ok("doc", "export", doc, "--out", str(out))
    loaded = parse_file(out.read_bytes())
    assert loaded.form == "weave5c" and len(loaded.body) == 5 * 15  # root, 12 text, ⌫, end
    checked = json.loads(node.ok("doc", "import", str(out), "--check", "--json"))
    assert checked["characters"] == 11 and checked["doc"] is None
    made = json.loads(node.ok("doc", "import", str(out), "--json"))["doc"]
    assert node.ok("doc", "show", made) == "Hello world"

    bad = tmp_path / "bad.weave"
    data = out.read_bytes()
    bad.write_bytes(data[:-3])  # the end atom cut short
    done = node.run("doc", "import", str(bad))
    assert done.returncode == 3 and "offset 70: truncated" in done.stderr
    header, _sep, body = data.partition(b"\n\n")
    text = body.decode()
    bad.write_bytes(header + b"\n\n" + (text[:10] + text[5:10] + text[15:]).encode())
    done = node.run("doc", "import", str(bad))  # the atom at 10 repeated: an id met before
    assert done.returncode == 3 and "offset 13: duplicate-id" in done.stderr

    huge = tmp_path / "huge.weave"
    with open(huge, "wb") as file:
        file.truncate(MAX_FILE_BYTES + 1)  # sparse
    done = node.run("doc", "import", str(huge))
    assert done.returncode == 3 and "too-large" in done.stderr
