"""`tangled reindex` and `tangled compact`: the store maintained offline by a real process."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import struct
import subprocess

import pytest

from tanglenode.storage.feeds.datalock import DataDirLock
from tanglenode.storage.store import FeedStore
from tests.node.test_cli import Node


@pytest.fixture
def held(tmp_path):
    """A data directory whose store holds a tangle, a name and a document of ours."""
    node = Node(tmp_path)
    feed = node.ok("init").strip()
    node.ok("publish", json.dumps({"type": "about", "about": feed, "name": "me"}))
    node.ok("publish", json.dumps({"type": "post", "text": "one"}))
    return node


def about_rows(node: Node) -> int:
    with FeedStore(node.data_dir / "store", create=False) as store, store.ctx.read() as txn:
        return txn.stat(store.ctx.view_tables[b"about-names"])["entries"]


def test_reindex_rebuilds_every_view_with_progress_and_the_check_passes(held):
    done = held.run("reindex")
    assert done.returncode == 0, done.stderr
    assert (
        done.stdout == "rebuilt: timelines, joined, abouts, contacts, documents\n"
    )  # the views kept
    assert "reindex: 2 stored messages" in done.stderr
    assert "checked 2 messages" in held.ok("check")
    assert about_rows(held) == 1


def test_verify_finds_a_view_that_lost_a_row_and_reindex_mends_it(held):
    with FeedStore(held.data_dir / "store", create=False) as store, store.ctx.write() as txn:
        txn.drop(store.ctx.view_tables[b"about-names"], delete=False)
    assert about_rows(held) == 0
    done = held.run("reindex", "--verify")
    assert done.returncode == 5
    assert "problem: the abouts view differs from one rebuilt from the messages" in done.stdout
    assert about_rows(held) == 0, "--verify writes nothing"
    verdict = json.loads(held.run("reindex", "--verify", "--json").stdout)
    assert verdict["ok"] is False and len(verdict["differences"]) == 1
    assert held.ok("reindex", "abouts") == "rebuilt: abouts\n"
    assert about_rows(held) == 1
    assert held.ok("reindex", "--verify") == "every view agrees with its messages\n"


def test_a_view_turned_on_in_the_config_is_built_by_reindex_and_read_after(held):
    spacetime = ("timeline", "--spacetime", "--order", "causal-time", "--json")
    off = held.run(*spacetime)
    assert off.returncode == 1 and "causal_time = true" in off.stderr
    assert "causal-time  off" in held.ok("reindex", "--list")
    refused = held.run("reindex", "causal-time")
    assert refused.returncode == 3 and "does not keep the causal-time view" in refused.stderr
    config = held.data_dir / "tangled.toml"
    config.write_text(config.read_text().replace("causal_time = false", "causal_time = true"))
    unbuilt = held.run(*spacetime)  # a reader keeps the store as it is: not built yet
    assert unbuilt.returncode == 1 and "tangled reindex causal-time" in unbuilt.stderr
    listed = {row["view"]: row for row in json.loads(held.ok("reindex", "--list", "--json"))}
    assert listed["causal-time"]["status"] == "not built" and listed["causal-time"]["optional"]
    assert listed["timelines"]["status"] == "kept" and not listed["timelines"]["optional"]
    assert held.ok("reindex", "causal-time") == "rebuilt: timelines, causal-time, joined\n"
    assert "causal-time  kept" in held.ok("reindex", "--list")
    entries = [json.loads(line) for line in held.ok(*spacetime).splitlines()]
    assert len(entries) == 2 and all("time" in entry for entry in entries)
    assert held.ok("reindex", "--verify") == "every view agrees with its messages\n"
    config.write_text(config.read_text().replace("causal_time = true", "causal_time = false"))
    assert "causal-time  kept, to drop" in held.ok("reindex", "--list")  # a reader keeps it
    assert held.ok(*spacetime)
    held.ok("reindex", "abouts")  # a writer takes the config's views: dropped
    assert held.run(*spacetime).returncode == 1
    with FeedStore(held.data_dir / "store", create=False) as store, store.ctx.read() as txn:
        assert txn.stat(store.ctx.timeline_tables.causal_nodes)["entries"] == 0


def test_an_unknown_view_is_a_usage_error_naming_the_views(held):
    done = held.run("reindex", "nope")
    assert done.returncode == 2
    assert "'nope' is not one of 'timelines', 'causal-time', 'joined'" in done.stderr


def test_reindex_refuses_while_another_process_holds_the_data_directory(held):
    lock = DataDirLock(held.data_dir, "run").acquire()
    try:
        done = held.run("reindex")
    finally:
        lock.release()
    assert done.returncode != 0
    assert "run" in done.stderr and "Traceback" not in done.stderr


def test_names_read_the_same_after_a_reindex(held):
    before = held.ok("feeds")
    held.ok("reindex")
    assert held.ok("feeds") == before
    assert "~me" in before  # the name the about gave, read from the rebuilt index


def test_compact_reports_the_sizes_and_keeps_what_the_store_holds(held):
    held.ok("reindex")  # leaves the old views' pages free
    log_before, feeds_before = held.ok("log"), held.ok("feeds")
    report = json.loads(held.ok("compact", "--json"))
    assert report["after"] <= report["before"] and report["freed"] == (
        report["before"] - report["after"]
    )
    assert (held.data_dir / "store" / "data.mdb").stat().st_size == report["after"]
    assert held.ok("compact").startswith("compacted: ")
    assert (held.ok("log"), held.ok("feeds")) == (log_before, feeds_before)
    assert "checked 2 messages" in held.ok("check")


def test_compact_refuses_while_another_process_holds_the_data_directory(held):
    size = (held.data_dir / "store" / "data.mdb").stat().st_size
    lock = DataDirLock(held.data_dir, "run").acquire()
    try:
        done = held.run("compact")
    finally:
        lock.release()
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert (held.data_dir / "store" / "data.mdb").stat().st_size == size


def test_compact_without_a_data_directory_says_so(tmp_path):
    done = Node(tmp_path).run("compact")
    assert done.returncode == 4
    assert "no data directory here" in done.stderr


def busy_bundle(path, count: int = 4000) -> None:
    """A bundle of `count` replies in 16 tangles of 8 feeds whose timeframes name 3 others:
    enough write transactions for the import to leave free pages behind."""
    from tanglenode.protocol.message import TangleLink
    from tanglenode.storage.clients.bundle import MAGIC
    from tests.factories import Feed

    rng = random.Random(7)
    feeds = [Feed(f"bulk{i}") for i in range(8)]
    roots = [feeds[i % 8].root(f"t{i}") for i in range(16)]
    tips = {root.id: root.id for root in roots}
    messages = list(roots)
    for number in range(count):
        feed, root = rng.choice(feeds), rng.choice(roots)
        others = [g for g in rng.sample(feeds, 3) if g is not feed and g.messages]
        message = feed.append(
            {"type": "post", "text": "x" * 200, "n": number},
            tangles={"t": TangleLink(root.id, [tips[root.id]])},
            timeframe={g.public: g.messages[-1].seq for g in others},
        )
        tips[root.id] = message.id
        messages.append(message)
    with open(path, "wb") as out:
        out.write(MAGIC)
        for message in messages:
            out.write(struct.pack(">I", len(message.raw)) + message.raw)


def test_import_compacts_the_store_it_wrote_unless_told_not_to(tmp_path):
    from tanglenode.storage.tools.compact import free_share

    bundle = tmp_path / "bulk.bundle"
    busy_bundle(bundle)
    results = {}
    for name, flags in (("kept", ("--no-compact",)), ("compacted", ())):
        node = Node(tmp_path / name)
        node.ok("init")
        done = node.run("import", str(bundle), *flags, "--json")
        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout)
        with FeedStore(node.data_dir / "store", create=False) as store:
            free = free_share(store.ctx.env)
            with store.ctx.read() as txn:  # the import logged no command: nothing to resume
                names = txn.cursor(db=store.ctx.timeline_tables.names).iternext(values=False)
                names = [bytes(each) for each in names]
            timelines = store.timelines
            assert len(names) > 16 and all(
                timelines.timeline_floor(n) == timelines.timeline_version(n) > 0 for n in names
            )
        results[name] = summary, free, (node.data_dir / "store" / "data.mdb").stat().st_size
        assert "checked 4016 messages" in node.ok("check")
    (kept, _kept_free, kept_size), (compacted, free, size) = results["kept"], results["compacted"]
    assert kept["compacted"] is None and kept["accepted"] == compacted["accepted"] == 4016
    assert compacted["compacted"]["after"] == size < kept_size and free < 0.01


def test_an_import_compacts_when_it_wrote_most_of_the_store_not_when_it_added_little(tmp_path):
    """Pages filled by the import's random inserts are packed when they are most of the store
    (a first import, however little it leaves free); a few messages added to a large store
    leave it as it is, the copy costing the whole store for little."""
    from tanglenode.storage.clients.bundle import MAGIC
    from tests.factories import Feed

    late = Feed("late")
    small = tmp_path / "small.bundle"
    with open(small, "wb") as out:
        out.write(MAGIC)
        for number in range(30):
            raw = late.append({"type": "post", "text": f"late {number}"}).raw
            out.write(struct.pack(">I", len(raw)) + raw)
    busy = tmp_path / "busy.bundle"
    busy_bundle(busy)
    first, grown = Node(tmp_path / "first"), Node(tmp_path / "grown")
    first.ok("init")
    grown.ok("init")
    alone = json.loads(first.run("import", str(small), "--json").stdout)
    assert alone["accepted"] == 30 and alone["compacted"] is not None
    json.loads(grown.run("import", str(busy), "--json").stdout)
    added = json.loads(grown.run("import", str(small), "--json").stdout)
    assert added["accepted"] == 30 and added["compacted"] is None
    assert "checked 4046 messages" in grown.ok("check")


def popular_bundle(path, replies: int = 3000) -> None:
    """A bundle of a root and `replies` replies of 50 feeds, each naming the root: in `tl-succ`
    (DUPSORT+DUPFIXED) the root's key holds `replies` duplicates. Its import leaves about a
    third of the file free (3,000 replies; 2,000 leave just under the quarter that compacts)."""
    from tanglenode.protocol.message import TangleLink
    from tanglenode.storage.clients.bundle import MAGIC
    from tests.factories import Feed

    root = Feed("popular-root").root("chat", {"type": "post", "text": "a popular post"})
    feeds = [Feed(f"popular-{n}") for n in range(50)]
    link = TangleLink(root.id, (root.id,))
    messages = [root] + [
        feeds[n % 50].append({"type": "post", "text": f"reply {n}"}, tangles={"chat": link})
        for n in range(replies)
    ]
    with open(path, "wb") as out:
        out.write(MAGIC)
        for message in messages:
            out.write(struct.pack(">I", len(message.raw)) + message.raw)


def test_a_message_named_by_thousands_of_others_imports_compacted_and_compacts(tmp_path):
    """Issue 41: LMDB's compacting copy died of SIGSEGV on such a store, in `import`'s
    compaction and in `compact`; the CLI runs in a child process, so a crash is its exit code."""
    bundle = tmp_path / "popular.bundle"
    popular_bundle(bundle)
    node = Node(tmp_path)
    node.ok("init")
    done = node.run("import", str(bundle), "--json")
    assert done.returncode == 0, f"import exited {done.returncode}: {done.stderr}"
    summary = json.loads(done.stdout)
    assert summary["accepted"] == 3001
    assert summary["compacted"]["after"] < summary["compacted"]["before"]  # import compacted
    assert "checked 3001 messages" in node.ok("check")
    done = node.run("compact", "--json")
    assert done.returncode == 0, f"compact exited {done.returncode}: {done.stderr}"
    assert json.loads(done.stdout)["after"] <= summary["compacted"]["after"]
    assert "checked 3001 messages" in node.ok("check")


def test_an_import_stopped_by_ctrl_c_says_what_it_committed_and_a_second_run_finishes_it(
    tmp_path,
):
    """^C (SIGINT to the whole process group, as a terminal sends it) once a batch has
    committed: exit 130 and what stands; the same import again adds only the rest."""
    from tanglenode.node.cli.support import ExitCode
    from tests.node.test_cli import TANGLED

    bundle = tmp_path / "bulk.bundle"
    busy_bundle(bundle, count=20_000)
    node = Node(tmp_path)
    node.ok("init")
    command = [str(TANGLED), "--data-dir", str(node.data_dir), "import", str(bundle)]
    importing = subprocess.Popen(
        command,
        env=node.env | {"TANGLED_LOG_LEVEL": "debug", "TANGLED_LOG_FORMAT": "json"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # whoever ran pytest
    )
    try:
        for line in importing.stderr:  # the log says when a batch has committed
            if json.loads(line)["event"] == "import committed":
                os.killpg(importing.pid, signal.SIGINT)
                break
        out, err = importing.communicate(timeout=60)
    finally:
        if importing.poll() is None:
            importing.kill()
            importing.wait()
    assert importing.returncode == ExitCode.INTERRUPTED == 130, err
    (said,) = [line for line in err.splitlines() if line.startswith("tangled: ")]
    found = re.fullmatch(
        r"tangled: interrupted after (\d+) records of (.+): (\d+) new messages committed; "
        r"run the same import again to finish it \(what the store holds already counts as "
        r"duplicate\)",
        said,
    )
    assert found and found[2] == str(bundle), said
    records, committed = int(found[1]), int(found[3])
    assert 1000 <= records < 20_016  # each record was new: the store holds them all, and
    assert records <= committed <= records + 1000  # a batch the ^C met counting, too
    assert "Traceback" not in err and out == ""
    with FeedStore(node.data_dir / "store", create=False) as store:
        assert store.feeds.statistics()["messages"] == committed  # what it said stands

    done = node.run("import", str(bundle), "--json")
    assert done.returncode == 0, done.stderr
    again = json.loads(done.stdout)
    assert (again["duplicate"], again["accepted"]) == (committed, 20_016 - committed)
    assert "checked 20016 messages" in node.ok("check")
