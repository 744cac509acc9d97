"""`tangled doc ...` as real processes: through a running node over IPC, then on its store
while it is stopped; every --json output parsed and checked."""

import json
import os
import subprocess

import pytest
import trio

from tanglenode.node.ipc.client import NodeError
from tanglenode.node.localnet import REQUEST_SECONDS, TANGLED, Node
from tanglenode.protocol.doc_ipc import MAX_SPLICE_CHARS, SHOW_CHARS
from tanglenode.protocol.framing import MAX_IPC_FRAME
from tanglenode.protocol.identity import message_text
from tanglenode.protocol.ipc import ErrorKind

EDITED = 'Hello, <b>brave</b> & "new" world 😀\nsecond line\n'


async def cli(node: Node, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    with trio.fail_after(REQUEST_SECONDS):
        return await trio.run_process(
            [str(TANGLED), "--data-dir", str(node.data_dir), *args],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            stdin=stdin,
        )


async def ok(node: Node, *args: str, stdin: bytes = b"") -> str:
    done = await cli(node, "doc", *args, stdin=stdin)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


async def as_json(node: Node, *args: str, stdin: bytes = b"") -> dict | list:
    return json.loads(await ok(node, *args, "--json", stdin=stdin))


def versions(published: dict) -> list[int]:
    return [row["version"] for row in published["messages"]]


@pytest.mark.slow  # 16 s of real processes; tests/node/test_doc_*_cli.py run in `make test`
async def test_doc_commands_through_the_running_node_and_on_the_stopped_store(tmp_path):
    node = Node(tmp_path, "writer")
    await node.start()
    created = await as_json(node, "create", "Shopping & <list>")
    doc = created["doc"]
    assert doc.startswith("%") and created["title"] == "Shopping & <list>"

    assert versions(await as_json(node, "insert", doc, "0", "hello world")) == [1]
    assert versions(await as_json(node, "delete", doc, "0", "1")) == [2]
    assert versions(await as_json(node, "insert", doc, "0", "H")) == [3]
    source = tmp_path / "new.txt"
    source.write_text(EDITED, encoding="utf-8")
    no_base = await cli(node, "doc", "edit", doc, str(source))
    assert no_base.returncode == 3 and b"no base" in no_base.stderr and b"--force" in no_base.stderr
    await ok(node, "show", doc, "--out", str(source))  # the text, and the revision beside it
    assert source.read_text(encoding="utf-8") == "Hello world"
    source.write_text(EDITED, encoding="utf-8")
    edited = await as_json(node, "edit", doc, str(source))
    assert versions(edited) == [4] and edited["doc"] == doc
    unchanged = await as_json(node, "edit", doc, str(source))  # the sidecar moved with it
    assert unchanged["messages"] == []
    forced = await as_json(node, "edit", doc, "-", "--force", stdin=EDITED.encode())
    assert forced["messages"] == []

    shown = await as_json(node, "show", doc)
    weft = shown.pop("weft")
    assert shown == {"doc": doc, "at": None, "version": 4, "text": EDITED}
    assert weft == {node.feed_id: 5}  # the writer's five messages, by its id as printed
    assert (await ok(node, "show", doc)) == EDITED  # exactly the text, nothing added
    assert (await as_json(node, "show", doc, "--at", "v1"))["text"] == "hello world"
    assert (await as_json(node, "show", doc, "--at", "2"))["text"] == "ello world"

    log = await as_json(node, "log", doc)
    rows = log["versions"]
    assert [row["version"] for row in rows] == [0, 1, 2, 3, 4]
    assert [(row["inserted"], row["deleted"]) for row in rows[:4]] == [
        (0, 0),
        (11, 0),
        (0, 1),
        (1, 0),
    ]
    assert rows[4]["msg"] == edited["messages"][0]["msg"]
    assert {row["author"] for row in rows} == {node.feed_id}
    assert (log["set_aside"], log["set_aside_total"]) == ([], 0)
    text_log = (await ok(node, "log", doc)).splitlines()
    assert text_log[1].startswith("v1") and "+11 -0" in text_log[1]
    at_message = await as_json(node, "show", doc, "--at", rows[3]["msg"])
    assert at_message["text"] == "Hello world"
    writer_seq = len(rows)  # our feed holds the init and the four edits
    at_weft = await as_json(node, "show", doc, "--at", f"{node.feed_id}={writer_seq - 1}")
    assert at_weft["text"] == "Hello world"

    diff = await as_json(node, "diff", doc, "v1", "v4")
    spans = diff["spans"]
    assert "".join(s["text"] for s in spans if s["removed_by"] is None) == EDITED
    assert "".join(s["text"] for s in spans if s["inserted_by"] is None) == "hello world"
    assert {s["inserted_by"] or s["removed_by"] for s in spans} - {None} == {node.feed_id}
    page = await ok(node, "diff", doc, "v1", "v4", "--html")
    assert page.startswith("<!DOCTYPE html>") and "</html>" in page
    assert (
        f'<ins title="{node.feed_id}">' in page and f'<del title="{node.feed_id}">h</del>' in page
    )
    assert "&lt;b&gt;brave&lt;/b&gt; &amp; &quot;new&quot;" in page and "<b>" not in page
    plain = await ok(node, "diff", doc, "v1", "v4")  # not a terminal: wdiff's marks
    assert f"[-h-]({node.feed_id[:9]}…)" in plain and "\x1b[" not in plain  # no name: its id

    blame = await as_json(node, "blame", doc)
    assert [line["text"] for line in blame["lines"]] == EDITED.splitlines()
    assert {line["author"] for line in blame["lines"]} == {node.feed_id}
    assert "".join(s["text"] for s in blame["spans"]) == EDITED
    assert {line["msg"] for line in blame["lines"]} == {rows[4]["msg"]}  # the edit typed them
    assert all(line["timestamp"] == rows[4]["timestamp"] for line in blame["lines"])
    who, _date, _time, edit, text = (await ok(node, "blame", doc)).splitlines()[1].split(None, 4)
    assert (who, edit, text) == (f"{node.feed_id[:9]}…", rows[4]["msg"][:9], "second line")
    named = await cli(node, "name", node.feed_id, "writer")  # a petname: every doc command
    assert named.returncode == 0, named.stderr  # says it
    assert (await ok(node, "blame", doc)).splitlines()[1].startswith("writer ")
    assert "(writer)" in await ok(node, "diff", doc, "v1", "v4")
    assert " writer " in (await ok(node, "log", doc)).splitlines()[1]
    patch = (await ok(node, "log", doc, "-p")).splitlines()
    assert patch[1].startswith("v1") and patch[2].strip() == "{+hello world+}(writer)"

    listed = await as_json(node, "list")
    assert listed == [
        {
            "doc": doc,
            "title": "Shopping & <list>",
            "author": node.feed_id,
            "created": listed[0]["created"],
            "length": len(EDITED),
            "versions": 4,
            "set_aside": 0,
            "group": None,
        }
    ]

    watched = await ok(node, "watch", doc, "--since", "0", "--count", "4", "--json")
    entries = [json.loads(line) for line in watched.splitlines()]
    assert [entry["version"] for entry in entries] == [1, 2, 3, 4]
    assert entries[0]["splices"] == [["ins", 0, "hello world"]]
    assert entries[1]["splices"] == [["del", 0, 1]]
    resumed = await ok(node, "watch", doc, "--count", "1", "--json", "--since", "3")
    assert json.loads(resumed)["version"] == 4  # resumed after v3: no snapshot

    # Refusals: typed, one line, the documented exit codes.
    missing = await cli(node, "doc", "show", "%" + "A" * 43, "--json")
    assert missing.returncode == 4 and b"no document" in missing.stderr
    past_end = await cli(node, "doc", "insert", doc, "999", "x")
    assert past_end.returncode == 3 and b"bad-request" in past_end.stderr
    (tmp_path / "binary").write_bytes(b"ok \xff\xfe not utf-8")
    binary = await cli(node, "doc", "edit", doc, str(tmp_path / "binary"))
    assert binary.returncode == 3 and b"not UTF-8" in binary.stderr
    (tmp_path / "huge").write_bytes(b"x" * (4 << 20) + b"y")
    huge = await cli(node, "doc", "edit", doc, str(tmp_path / "huge"))
    assert huge.returncode == 3 and b"MiB" in huge.stderr
    not_text = await cli(node, "doc", "insert", doc, "0", os.fsdecode(b"\xff"))
    assert not_text.returncode == 3 and b"not UTF-8" in not_text.stderr
    bad_title = await cli(node, "doc", "create", "a\x01b")
    assert bad_title.returncode == 3 and b"bad-title" in bad_title.stderr
    bad_at = await cli(node, "doc", "show", doc, "--at", "yesterday")
    assert bad_at.returncode == 3
    assert (await as_json(node, "show", doc))["version"] == 4  # none of them wrote

    # The node stopped: the same commands read and write its store directly.
    assert await node.stop() == 0
    assert (await as_json(node, "show", doc))["text"] == EDITED
    assert versions(await as_json(node, "insert", doc, "0", ">> ")) == [5]
    assert (await ok(node, "show", doc)) == ">> " + EDITED
    assert [row["version"] for row in (await as_json(node, "log", doc))["versions"]][-1] == 5
    assert (await as_json(node, "list"))[0]["versions"] == 5
    offline_missing = await cli(node, "doc", "log", "%" + "A" * 43)
    assert offline_missing.returncode == 4
    stopped_watch = await cli(node, "doc", "watch", doc)
    assert stopped_watch.returncode == 1 and b"not running" in stopped_watch.stderr

    await node.start()  # and the node sees the offline edit
    shown = await as_json(node, "show", doc)
    assert shown.pop("weft") == {node.feed_id: 6}
    assert shown == {"doc": doc, "at": None, "version": 5, "text": ">> " + EDITED}
    assert await node.stop() == 0


LINE = "a line of 😀 and 🎉, é, ü: wide and narrow\n"  # 4-, 2- and 1-byte code points


@pytest.mark.slow  # 12 s: a text over 4 MiB typed, woven and read by real processes
async def test_a_document_longer_than_a_reply_frame_is_shown_whole_running_and_stopped(tmp_path):
    node = Node(tmp_path, "big")
    await node.start()
    doc = (await node.request("doc-create", title="big"))["doc"]
    chunk = LINE * (MAX_SPLICE_CHARS // len(LINE))  # as much as one doc-edit carries
    text = ""
    while len(text.encode()) <= MAX_IPC_FRAME:
        await node.request("doc-edit", doc=doc, splices=[["ins", len(text), chunk]])
        text += chunk
    with pytest.raises(NodeError) as whole:  # one reply cannot carry it
        await node.request("doc-show", doc=doc)
    assert whole.value.kind == ErrorKind.REPLY_TOO_LARGE
    assert len(text) > 4 * SHOW_CHARS  # so the CLI reads it in five pages or more

    name = message_text(doc)
    out = tmp_path / "big.txt"
    await ok(node, "show", name, "--out", str(out))  # through the running node
    assert out.read_text(encoding="utf-8") == text
    assert (await cli(node, "doc", "show", name)).stdout == text.encode()
    shown = await as_json(node, "show", name)
    assert shown["text"] == text and shown["weft"] == {node.feed_id: shown["version"] + 1}

    assert await node.stop() == 0  # the store, read here: the same pages
    assert (await cli(node, "doc", "show", name)).stdout == text.encode()
    matched = await as_json(node, "link", name, "--match", "ü: wide and narrow\n" + LINE[:5])
    assert matched["start"] == len(LINE) - len("ü: wide and narrow\n")


async def test_doc_watch_prints_edits_as_they_arrive_and_stops_when_the_node_does(tmp_path):
    node = Node(tmp_path, "watched")
    await node.start()
    doc = (await as_json(node, "create", "live"))["doc"]
    await ok(node, "insert", doc, "0", "first")
    watcher = await trio.lowlevel.open_process(
        [str(TANGLED), "--data-dir", str(node.data_dir), "doc", "watch", doc],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    received = b""

    async def read_until(marker: bytes) -> None:
        nonlocal received
        with trio.fail_after(REQUEST_SECONDS):
            while marker not in received:
                chunk = await watcher.stdout.receive_some(4096)
                assert chunk, received
                received += chunk

    await read_until(b"first")
    await ok(node, "insert", doc, "5", " second")
    await read_until(b'v2 ins 5 " second"')
    assert received.decode().splitlines()[:2] == ["# version 1", "first"]
    assert await node.stop() == 0
    with trio.fail_after(REQUEST_SECONDS):
        assert await watcher.wait() == 0
    errors = await watcher.stderr.receive_some(4096)
    assert b"closed the connection" in errors and b"Traceback" not in errors


async def test_a_checked_out_file_keeps_its_revision_through_every_kind_of_edit(tmp_path):
    """On the stopped node's store: --exclusive and a long edit move the sidecar with what
    they publish, --force makes the document exactly the file whatever the sidecar says,
    and --out writes through a link and keeps the file's mode."""
    node = Node(tmp_path, "checkout")
    doc = (await as_json(node, "create", "kept"))["doc"]
    await ok(node, "insert", doc, "0", "hello\n")
    path = tmp_path / "real.txt"
    path.write_text("old")
    path.chmod(0o600)
    link = tmp_path / "link.txt"
    link.symlink_to(path)
    await ok(node, "show", doc, "--out", str(link))
    assert link.is_symlink() and path.read_text() == "hello\n"
    assert path.stat().st_mode & 0o777 == 0o600
    link.write_text("hello\nworld\n")
    await ok(node, "edit", doc, str(link), "--exclusive")
    link.write_text("hello\nworld\n!\n")
    await ok(node, "edit", doc, str(link))  # from the revision --exclusive left
    assert await ok(node, "show", doc) == "hello\nworld\n!\n"
    await ok(node, "insert", doc, "0", "XYZ ")  # another edit; the file knows nothing of it
    link.write_text("abc\n")
    await ok(node, "edit", doc, str(link), "--force")
    assert await ok(node, "show", doc) == "abc\n"
    to_stdout = await cli(node, "doc", "show", doc, "--out", "-")
    assert to_stdout.returncode == 3 and b"standard output" in to_stdout.stderr
