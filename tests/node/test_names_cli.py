"""`tangled name` and `tangled about`, and names and content in the views, run as real
processes against a real data directory (the node stopped: these work without it)."""

import json
import os

import pytest

from tanglenode.node.present.summary import MAX_SUMMARY
from tanglenode.protocol.identity import feed_text, message_text
from tanglenode.storage.store import FeedStore
from tests.factories import Feed
from tests.node.test_cli import Node
from tests.terminal import run_on_terminal


@pytest.fixture
def ready(tmp_path):
    node = Node(tmp_path)
    node.feed_id = node.ok("init").strip()
    return node


def ingest(node: Node, *messages) -> None:
    with FeedStore(node.data_dir / "store") as store:
        results = store.writes.ingest([m.raw for m in messages])
    assert all(result.stored for result in results)


def about(feed: Feed, name: str) -> dict:
    return {"type": "about", "about": feed_text(feed.public), "name": name}


def test_a_petname_beats_a_self_chosen_name_which_shows_with_a_tilde(ready):
    bob = Feed("names-bob")
    ingest(ready, bob.append(about(bob, "bobby")), bob.append({"type": "post", "text": "hi"}))
    bob_id = feed_text(bob.public)
    assert ready.ok("name", bob_id).split() == [bob_id, "~bobby"]
    assert "~bobby" in ready.ok("log", bob_id)

    assert ready.ok("name", bob_id, "Bob").split() == [bob_id, "Bob", "~bobby"]
    rows = ready.ok("log", bob_id).splitlines()
    assert rows[0].split()[:3] == ["SEQ", "ID", "TANGLES"] and "* its root" in rows[0]
    assert rows[2].split()[2:] == ["Bob", "2023-11-14", "22:13:20Z", "hi"]  # render.py's time
    assert json.loads(ready.ok("name", "--json")) == {
        "feed": bob_id,
        "petname": "Bob",
        "about": "bobby",
    }
    saved = json.loads((ready.data_dir / "petnames.json").read_text())
    assert saved == {"version": 1, "names": {bob_id: "Bob"}}

    assert ready.ok("name", bob_id, "--clear").split() == [bob_id, "~bobby"]
    assert "Bob" not in ready.ok("log", bob_id)


def test_our_about_is_published_and_names_our_feed(ready):
    published = ready.ok("about", "Alice W").strip()
    (message,) = [json.loads(line) for line in ready.ok("log", "--json").splitlines()]
    assert message["id"] == published
    assert message["content"] == {"type": "about", "about": ready.feed_id, "name": "Alice W"}
    feeds = ready.ok("feeds").splitlines()
    assert feeds[0].split() == ["FEED", "NAME", "SEQ"]
    assert feeds[1].split() == ["*", ready.feed_id, "~Alice", "W", "1", "(our", "feed)"]
    assert json.loads(ready.ok("feeds", "--json"))["ours"] is True
    assert "names itself “Alice W”" in ready.ok("log")


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (("name", "@no+pe", "x"), 3, "feed id"),  # @nope is a feed id cut short
        (("name", "{feed}", "two\nlines"), 3, "printable characters"),
        (("name", "{feed}", " padded"), 3, "printable characters"),
        (("name", "{feed}", "x" * 41), 3, "1 to 40"),
        (("name", "{feed}", ""), 3, "1 to 40"),
        (("name", "{feed}", "~fake"), 3, "may not start with"),
        (("name", "{feed}", "@fake"), 3, "may not start with"),
        (("name", "{feed}", "x", "--clear"), 2, "not both"),
        (("name", "--clear"), 2, "need a @FEED"),
        (("about", "bell\x07"), 3, "printable characters"),
    ],
)
def test_names_are_refused_with_a_reason(ready, args, code, says):
    done = ready.run(*(arg.replace("{feed}", ready.feed_id) for arg in args))
    assert done.returncode == code and says in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert not (ready.data_dir / "petnames.json").exists()


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        '{"version": 2, "names": {}}',
        '{"version": true, "names": {}}',  # true == 1, but is no version
        '{"version": 1, "names": {"@x": "y"}}',
    ],
)
def test_a_damaged_petnames_file_stops_only_tangled_name(ready, text):
    bob = Feed("names-bob")
    ingest(ready, bob.append(about(bob, "bobby")), bob.append({"type": "post", "text": "hi"}))
    bob_id = feed_text(bob.public)
    (ready.data_dir / "petnames.json").write_text(text)
    for args in (("name",), ("name", ready.feed_id, "me")):
        done = ready.run(*args)
        assert done.returncode == 3 and "not a petnames file" in done.stderr
        assert "move it aside" in done.stderr  # how to repair it
    # JSON never shows names, so never reads the file
    for args in (
        ("feeds", "--json"),
        ("log", bob_id, "--json"),
        ("timeline", "--spacetime", "--json"),
    ):
        done = ready.run(*args)
        assert (done.returncode, done.stderr) == (0, ""), done.stderr
        assert json.loads(done.stdout.splitlines()[-1])
    # a view warns once and shows feeds without petnames (self-chosen names still)
    for args in (("feeds",), ("log", bob_id), ("timeline", "--spacetime")):
        done = ready.run(*args)
        assert done.returncode == 0, done.stderr
        (warning,) = done.stderr.splitlines()
        assert warning.startswith("tangled: warning: ") and "without petnames" in warning
        assert "~bobby" in done.stdout
    assert (ready.data_dir / "petnames.json").read_text() == text  # never overwritten


def test_a_fifo_or_a_directory_for_the_petnames_file_neither_hangs_nor_stops_a_view(ready):
    bob = Feed("names-bob")
    ingest(ready, bob.append({"type": "post", "text": "hi"}))
    path = ready.data_dir / "petnames.json"
    os.mkfifo(path)  # no writer will ever come: reading it would block for good
    for args in (("feeds",), ("log", feed_text(bob.public)), ("timeline", "--spacetime")):
        done = ready.run(*args)  # timeout=60: a hang fails the test
        assert done.returncode == 0 and "not a regular file" in done.stderr
    refused = ready.run("name")
    assert refused.returncode == 3 and "not a regular file" in refused.stderr
    path.unlink()
    path.mkdir()
    assert "not a regular file" in ready.run("feeds").stderr


def test_the_petnames_file_is_bounded(ready):
    (ready.data_dir / "petnames.json").write_text(" " * (2 * 2**20 + 1))
    done = ready.run("name")
    assert done.returncode == 3 and "over 2097152 bytes" in done.stderr


def test_summaries_of_posts_abouts_documents_and_other_content(ready):
    alice, bob = Feed("names-alice"), Feed("names-bob")
    ingest(
        ready,
        alice.append({"type": "post", "text": "line one\nline two\x1b[2J"}),
        alice.append({"type": "about", "about": feed_text(bob.public), "name": "bobby"}),
        alice.append({"type": "doc/init", "title": "Plan"}),
        alice.append(
            {"type": "doc/edit", "ops": [["ins", 1, 0, "Hello"], ["del", 1, 0, 2]], "refs": []}
        ),
        alice.append({"votes": [1, 2, {"x": True}]}),
        alice.append(None),
    )
    ready.ok("name", feed_text(bob.public), "Bob")
    lines = ready.ok("log", feed_text(alice.public)).splitlines()[1:]
    says = [line.split("  ")[-1] for line in lines]
    assert says == [
        "line one …",  # its first line
        "calls Bob “bobby”",
        "new document “Plan”",
        "+5 -2 in a document",  # in no document's tangle
        '{"votes":[1,2,{"x":true}]}',
        "null",
    ]
    summaries = [
        json.loads(line)["summary"]
        for line in ready.ok("timeline", "--spacetime", "--json").splitlines()
    ]
    assert f"calls {feed_text(bob.public)} “bobby”" in summaries  # ids on --json, never names


def test_the_views_fit_the_terminal_and_keep_every_row_whole_when_piped(ready):
    alice = Feed("names-alice")
    root = alice.root("chat", {"type": "post", "text": "long " * 100})
    ingest(ready, root)
    spec = f"chat/{message_text(root.id)}"
    for args in (["timeline", spec], ["log", feed_text(alice.public)]):
        shown = run_on_terminal(args, data_dir=ready.data_dir, columns=100)
        assert shown.returncode == 0
        lines = shown.output.splitlines()
        assert len(lines) == 2 and all(len(line) <= 100 for line in lines)
        assert lines[1].endswith("…") and "AUTHOR" in lines[0]
        piped = ready.ok(*args).splitlines()  # not cut to a terminal; the summary is bounded
        assert len(piped[1]) > 200 and piped[1].endswith("long…")
        assert len(piped[1].split("  ")[-1]) == MAX_SUMMARY


def test_a_petnames_path_that_cannot_be_read_or_written_is_a_one_line_error(ready):
    (ready.data_dir / "petnames.json").mkdir()
    listed = ready.run("name")
    assert listed.returncode == 3 and "not a regular file" in listed.stderr
    (ready.data_dir / "petnames.json").rmdir()
    (ready.data_dir / "petnames.json").write_text("{}")
    (ready.data_dir / "petnames.json").chmod(0)
    if not os.access(ready.data_dir / "petnames.json", os.R_OK):  # root reads it anyway
        listed = ready.run("name")
        assert listed.returncode == 3 and "cannot read the petnames" in listed.stderr
    (ready.data_dir / "petnames.json").unlink()
    (ready.data_dir / "petnames.json.lock").mkdir()  # the lock cannot be taken, even by root
    done = ready.run("name", ready.feed_id, "me")
    assert done.returncode == 1 and "cannot write the petnames" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
