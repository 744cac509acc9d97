"""Views against a running node: `watch --json` across a node restart, `--count`, giving
up on a node that never returns, and group posts opened for their author."""

import json
import subprocess
from functools import partial

import trio

from tanglenode.node.localnet import REQUEST_SECONDS, START_SECONDS, TANGLED, Node
from tanglenode.protocol.identity import message_text
from tanglenode.storage.store import FeedStore
from tests.integration.test_cli_live import cli
from tests.terminal import run_on_terminal


class Lines:
    """A child's output stream read line by line, each wait bounded."""

    def __init__(self, stream) -> None:
        self.stream, self.buffer, self.lines = stream, b"", []

    async def until(self, predicate) -> list[str]:
        with trio.fail_after(START_SECONDS):
            while not predicate(self.lines):
                chunk = await self.stream.receive_some(65536)
                if not chunk:
                    break
                self.buffer += chunk
                *done, self.buffer = self.buffer.split(b"\n")
                self.lines.extend(line.decode() for line in done)
        return self.lines


async def end(watch, node: Node | None = None) -> None:
    """Kill and reap a `watch` still running (a test that failed), then the node if it runs."""
    if watch.returncode is None:
        watch.kill()
        with trio.fail_after(REQUEST_SECONDS):
            await watch.wait()
    if node is not None and node.process is not None:
        await node.kill()


async def test_watch_json_resumes_after_a_node_restart_and_counts_changes_only(tmp_path):
    node = Node(tmp_path, "solo")
    await node.start()
    root = (await node.publish({"type": "post", "text": "hello"}, {"chat": None}))["id"]
    await node.publish({"text": "second"}, {"chat": root})
    spec = f"chat/{message_text(root)}"
    argv = [str(TANGLED), "--data-dir", str(node.data_dir), "watch", spec, "--json"]
    watch = await trio.lowlevel.open_process(
        [*argv, "--count", "2", "--reconnect-wait", str(START_SECONDS)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = Lines(watch.stdout), Lines(watch.stderr)
    try:
        await out.until(lambda lines: len(lines) >= 3)  # the start and two snapshot rows
        await node.stop()
        await err.until(lambda lines: any("went away" in line for line in lines))
        await node.start()
        await node.publish({"text": "after the restart"}, {"chat": root})
        await node.publish({"text": "the last"}, {"chat": root})
        with trio.fail_after(REQUEST_SECONDS):
            assert await watch.wait() == 0  # two changes after the snapshot: done
        await out.until(lambda lines: False)
        await err.until(lambda lines: False)
    finally:
        await end(watch, node)
    records = [json.loads(line) for line in out.lines]
    assert records[0] == {"version": 2, "snapshot": True}
    assert [(r["position"], r["summary"], r["author"]) for r in records[1:3]] == [
        (0, "hello", node.feed_id),
        (1, "second", node.feed_id),
    ]
    assert records[3] == {"version": 2, "snapshot": False}  # resumed after the last printed
    assert [(r["version"], r["op"], r["pos"], r["summary"]) for r in records[4:]] == [
        (3, "ins", 2, "after the restart"),
        (4, "ins", 3, "the last"),
    ]
    assert all(isinstance(r["timestamp"], int) and r["id"].startswith("%") for r in records[4:])
    assert any("went away at version 2" in line for line in err.lines)
    assert any("resuming after version 2" in line for line in err.lines)


async def test_watch_gives_up_when_the_node_never_returns(tmp_path):
    node = Node(tmp_path, "solo")
    await node.start()
    await node.publish({"text": "hello"})
    named = await cli(node, "name", node.feed_id, "me")  # petnames need no node, nor mind one
    assert named.returncode == 0 and named.stdout.decode().split() == [node.feed_id, "me"]
    watch = await trio.lowlevel.open_process(
        [TANGLED, "--data-dir", node.data_dir, "watch", "--spacetime", "--reconnect-wait", "0.5"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = Lines(watch.stdout), Lines(watch.stderr)
    try:
        await out.until(lambda lines: len(lines) >= 3)  # version, header, one row
        await node.stop()
        with trio.fail_after(REQUEST_SECONDS):
            assert await watch.wait() == 1
        await err.until(lambda lines: False)
    finally:
        await end(watch)
    assert out.lines[0] == "# version 1" and out.lines[1].split()[:4] == [
        "POS",
        "RANK",
        "ID",
        "AUTHOR",
    ]
    assert out.lines[2].split()[3] == "me" and out.lines[2].endswith("hello")
    assert err.lines[-1] == (
        "tangled: the node did not come back within 0.5 s; resume with --since 1"
    )


async def test_group_posts_are_opened_for_their_author_and_sealed_for_others(tmp_path):
    host, outsider = Node(tmp_path, "host"), Node(tmp_path, "outsider")
    await host.start()

    async def ok(node: Node, *args: str) -> str:
        done = await cli(node, *args)
        assert done.returncode == 0, done.stderr.decode()
        return done.stdout.decode()

    group = (await ok(host, "group", "create", "club")).strip()
    await ok(host, "group", "post", group, '{"type": "post", "text": "meet at noon"}')
    await ok(host, "about", "Host")  # through the node
    log = (await ok(host, "log")).splitlines()
    assert log[1].endswith("[group club] new epoch; members ~Host")
    assert log[2].endswith("[group club] meet at noon")
    assert log[3].split()[2:] == ["~Host", *log[3].split()[3:5], "names", "itself", "“Host”"]
    last = json.loads((await ok(host, "log", "--json")).splitlines()[1])
    assert last["private"] == {
        "type": "group/post",
        "content": {"type": "post", "text": "meet at noon"},
    }
    assert "box" in last["content"]  # the fields as stored, kept
    shown = await ok(host, "show", last["id"])
    assert "says     [group club] meet at noon" in shown
    timeline = (await ok(host, "timeline", "--spacetime")).splitlines()
    assert timeline[-2].endswith("[group club] meet at noon")
    assert await host.stop() == 0

    with FeedStore(host.data_dir / "store") as store:
        raws = list(store.feeds.iter_raw())
    with FeedStore(outsider.data_dir / "store") as store:
        store.writes.ingest(raws)
    seen = (await ok(outsider, "log", host.feed_id)).splitlines()
    assert seen[2].endswith("[group] sealed") and "meet" not in "".join(seen)
    assert seen[1].split()[3] == "~Host"  # the outsider's store indexed the about on ingest
    assert "private" not in json.loads(await ok(outsider, "show", last["id"], "--json"))


async def test_watch_takes_a_new_snapshot_when_it_cannot_tell_the_last_one_was_whole(tmp_path):
    """An empty snapshot sends no page: after a restart, watch asks for a new snapshot
    rather than resume from a version whose rows it may have missed."""
    node = Node(tmp_path, "solo")
    await node.start()
    watch = await trio.lowlevel.open_process(
        [TANGLED, "--data-dir", node.data_dir, "watch", "--spacetime", "--json", "--count", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = Lines(watch.stdout), Lines(watch.stderr)
    try:
        await out.until(lambda lines: len(lines) >= 1)
        await node.stop()
        await node.start()
        await err.until(lambda lines: any("reconnected" in line for line in lines))
        # "reconnected" is said before the new subscription is asked for: publish only once
        # its snapshot is out, or the snapshot may already hold the message.
        await out.until(lambda lines: len(lines) >= 2)
        await node.publish({"text": "first"})
        with trio.fail_after(REQUEST_SECONDS):
            assert await watch.wait() == 0
        await out.until(lambda lines: False)
        await err.until(lambda lines: False)
    finally:
        await end(watch, node)
    records = [json.loads(line) for line in out.lines]
    assert records[:2] == [{"version": 0, "snapshot": True}] * 2
    assert [(r["version"], r["op"], r["summary"]) for r in records[2:]] == [(1, "ins", "first")]
    assert any("may have been cut short: a new one" in line for line in err.lines)


async def test_on_an_80_column_terminal_ids_are_short_and_a_short_post_is_shown_whole(tmp_path):
    node = Node(tmp_path, "narrow")
    await node.start()
    text = "noon"  # 80 columns leave a tangle's timeline 4 for content (with ids whole, 0)
    root = (await node.publish({"type": "post", "text": text}, {"chat": None}))["id"]
    whole, short = message_text(root), message_text(root)[:9] + "…"
    spec = f"chat/{whole}"

    async def on_terminal(*args: str, columns: int = 80) -> list[str]:
        shown = await trio.to_thread.run_sync(
            partial(run_on_terminal, list(args), data_dir=node.data_dir, columns=columns)
        )
        assert shown.returncode == 0, shown.output
        return shown.output.splitlines()

    for args in (
        ("timeline", spec),
        ("timeline", "--spacetime"),
        ("log",),
        ("watch", spec, "--since", "0", "--count", "1"),
    ):
        lines = await on_terminal(*args)
        (row,) = [line for line in lines if short in line]
        assert row.endswith(text) and whole not in row and len(row) <= 80, args
    wide = await on_terminal("timeline", spec, columns=200)  # room enough: whole ids
    assert any(whole in line and line.endswith(text) for line in wide)
    piped = await cli(node, "timeline", spec)  # piped: whole ids
    assert whole in piped.stdout.decode()
    placed = await on_terminal("timeline", spec, "--at", whole)
    assert placed == ["position 0  rank 0  joined"]
    assert json.loads((await cli(node, "log", "--json")).stdout)["id"] == whole
    assert await node.stop() == 0
