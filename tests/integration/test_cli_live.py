"""The CLI against a running node: publish, timeline, watch, status and peers go through IPC."""

import json
import subprocess

import trio

from tanglenode.node.localnet import REQUEST_SECONDS, TANGLED, Node
from tanglenode.protocol.identity import message_text, parse_message_id
from tanglenode.protocol.message import TangleLink
from tanglenode.storage.store import FeedStore
from tests.factories import ALL_VIEWS, Feed


async def cli(node: Node, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    with trio.fail_after(REQUEST_SECONDS):
        return await trio.run_process(
            [str(TANGLED), "--data-dir", str(node.data_dir), *args],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            stdin=stdin.encode() if stdin else b"",
        )


async def test_cli_commands_talk_to_the_running_node(tmp_path):
    node = Node(tmp_path, "solo")
    await node.start()
    root = (await cli(node, "publish", '"root"', "--tangle", "chat")).stdout.decode().strip()
    replies = []
    for text in ("one", "two"):
        done = await cli(node, "publish", json.dumps(text), "--tangle", f"chat={root}", "--json")
        assert done.returncode == 0, done.stderr
        replies.append(json.loads(done.stdout)["id"])
    offline = await cli(node, "publish", '"x"', "--offline")  # gone: one way to ask
    assert offline.returncode == 2 and b"No such option" in offline.stderr

    spec = f"chat/{root}"
    listed = await cli(node, "timeline", spec, "--json")
    ids = [json.loads(line)["id"] for line in listed.stdout.decode().splitlines()]
    expected = [
        message_text(i) for _r, i in await node.timeline(tangle="chat", root=parse_message_id(root))
    ]
    assert ids == expected and set(ids) == {root, *replies}
    at = json.loads((await cli(node, "timeline", spec, "--at", replies[0], "--json")).stdout)
    assert at["position"] == ids.index(replies[0])
    commands = (await cli(node, "timeline", spec, "--since", "0")).stdout.decode().splitlines()
    assert len(commands) == 3 and all(" ins " in line for line in commands)

    watched = await cli(node, "watch", spec, "--since", "0", "--count", "3")
    lines = watched.stdout.decode().splitlines()
    assert lines[0] == "# version 0" and [line.split()[1] for line in lines[1:]] == ["ins"] * 3

    status = json.loads((await cli(node, "status", "--json")).stdout)
    assert status["feed"] == node.feed_id and status["messages"] == 3 and status["stalls"] == []
    assert status["final"] >= 1
    assert json.loads((await cli(node, "peers", "--json")).stdout) == []
    exported = await cli(node, "export", "--out", str(tmp_path / "archive"))  # node still running
    assert json.loads(exported.stdout)["messages"] == 3
    assert await node.stop() == 0
    stopped = await cli(node, "timeline", spec, "--json")  # the store, read directly
    assert [json.loads(line)["id"] for line in stopped.stdout.decode().splitlines()] == ids


async def test_group_commands_through_the_cli(tmp_path):
    node = Node(tmp_path, "host")
    await node.start(extra_env={"TANGLED_VIEWS__CAUSAL_TIME": "true"})  # built: nothing held yet
    friend = Node(tmp_path, "friend")  # never started: only its feed id is needed

    async def ok(*args: str) -> str:
        done = await cli(node, "group", *args)
        assert done.returncode == 0, done.stderr.decode()
        return done.stdout.decode()

    group = (await ok("create", "club")).strip()
    await ok("add", group, friend.feed_id)
    await ok("post", group, '{"text": "hi"}')
    assert set((await ok("members", group)).split()) == {node.feed_id, friend.feed_id}
    named = await cli(node, "name", friend.feed_id, "pal")  # people see names, JSON ids
    assert named.returncode == 0, named.stderr
    members = (await ok("members", group)).splitlines()
    assert f"{friend.feed_id}  pal" in members and node.feed_id in members
    shown = (await ok("timeline", group)).splitlines()
    assert shown[1].endswith("group/add-member pal") and shown[2].endswith("  hi")
    assert set(json.loads(await ok("members", group, "--json"))) == {node.feed_id, friend.feed_id}
    await ok("exclude", group, friend.feed_id)
    epochs = json.loads(await ok("epochs", group, "--json"))
    assert [epoch["current"] for epoch in epochs] == [False, True]
    for tangle in ("group", "members", "epoch"):
        for order in ("rank", "causal-time"):
            rows = await ok("timeline", group, "--tangle", tangle, "--order", order, "--json")
            types = [json.loads(line)["type"] for line in rows.splitlines()]
            assert types and all(t and t.startswith("group/") for t in types)
    grouped = await ok("timeline", group, "--json")
    assert [json.loads(line)["type"] for line in grouped.splitlines()] == [
        "group/init",
        "group/add-member",
        "group/post",
        "group/exclude-member",
        "group/init",
    ]
    bad = await cli(node, "group", "post", group, "{not json")
    assert bad.returncode == 3
    assert await node.stop() == 0


async def test_watch_joined_follows_set_aside_messages_as_they_join(tmp_path):
    """Node `a` holds carol's replies set aside (they name bob's `a`, which it lacks); once
    node `b` gossips bob's message, the three join, and `watch --joined` prints them live."""
    alice, bob, carol = Feed("live-alice"), Feed("live-bob"), Feed("live-carol")
    root = alice.root("chat")
    first = bob.append(tangles={"chat": TangleLink(root.id, (root.id,))})
    second = carol.append(tangles={"chat": TangleLink(root.id, (first.id,))})
    third = carol.append(tangles={"chat": TangleLink(root.id, (second.id,))})
    here, there = Node(tmp_path, "here"), Node(tmp_path, "there")
    with FeedStore(here.data_dir / "store", views=ALL_VIEWS) as store:
        store.writes.ingest([root.raw, second.raw, third.raw])
    with FeedStore(there.data_dir / "store") as store:
        store.writes.ingest([root.raw, first.raw])
    await here.start(extra_env={"TANGLED_VIEWS__JOINED_ORDER": "true"})
    spec = f"chat/{message_text(root.id)}"
    listed = (await cli(here, "timeline", spec)).stdout.decode().splitlines()
    assert sorted(line.split()[3] for line in listed[1:]) == ["joined", "pending", "pending"]

    watch = await trio.lowlevel.open_process(
        [str(TANGLED), "--data-dir", str(here.data_dir), "watch", spec, "--joined", "--count", "3"],
        stdout=subprocess.PIPE,
    )
    try:
        with trio.fail_after(REQUEST_SECONDS):
            buffer = b""
            while len(buffer.split(b"\n")) < 4:  # "# version 1", a header, the snapshot's root
                buffer += await watch.stdout.receive_some(4096)
            await there.start([here])  # only now can bob's message reach `here`
            while chunk := await watch.stdout.receive_some(4096):
                buffer += chunk
            assert await watch.wait() == 0
    finally:
        if watch.returncode is None:
            watch.kill()
            for node in (here, there):  # a failed wait leaves no daemon behind
                if node.process is not None:
                    await node.kill()
    lines = buffer.decode().splitlines()
    assert lines[0] == "# version 1" and lines[1].split()[:3] == ["POS", "RANK", "ID"]
    assert lines[2].split()[:3] == ["0", "0", message_text(root.id)]
    assert [line.split()[1:4] for line in lines[3:]] == [
        ["ins", "1", message_text(first.id)],
        ["ins", "2", message_text(second.id)],
        ["ins", "3", message_text(third.id)],
    ]
    listed = (await cli(here, "timeline", spec, "--joined")).stdout.decode().splitlines()
    assert [line.split()[2] for line in listed[1:]] == [
        message_text(m.id) for m in (root, first, second, third)
    ]
    assert await there.stop() == 0 and await here.stop() == 0


async def test_watch_starts_from_a_snapshot_once_the_log_dropped_its_version(tmp_path):
    """`[timelines] keep_commands` reaches the running node's store: after 70 messages the
    tangle's log keeps its last few commands, so `timeline --since 1` is not-found (exit 4)
    and `watch --since 1` says so, prints the order, then follows it."""
    node = Node(tmp_path, "windowed")
    await node.start(extra_env={"TANGLED_TIMELINES__KEEP_COMMANDS": "4"})  # trims past 4 + 64
    with trio.fail_after(REQUEST_SECONDS):
        async with await node.client() as client:
            root = (await client.publish("root", {"chat": None}))["id"]
            for n in range(69):
                await client.publish(n, {"chat": root})
    spec = f"chat/{message_text(root)}"
    below = await cli(node, "timeline", spec, "--since", "1")
    assert below.returncode == 4 and b"read the timeline again" in below.stderr, below.stderr

    args = ["watch", spec, "--since", "1", "--count", "1"]
    watch = await trio.lowlevel.open_process(
        [str(TANGLED), "--data-dir", str(node.data_dir), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        with trio.fail_after(REQUEST_SECONDS):
            buffer = b""
            while buffer.count(b"\n") < 72:  # "# version 70", a header, 70 rows
                buffer += await watch.stdout.receive_some(4096)
            last = await node.publish("after", {"chat": root})
            while chunk := await watch.stdout.receive_some(4096):
                buffer += chunk
            errors = b""
            while chunk := await watch.stderr.receive_some(4096):
                errors += chunk
            assert await watch.wait() == 0
    finally:
        if watch.returncode is None:
            watch.kill()
    lines = buffer.decode().splitlines()
    assert "the node no longer has version 1; a new snapshot" in errors.decode()
    assert lines[0] == "# version 70" and len(lines) == 73
    order = [
        message_text(msg_id) for _rank, msg_id in await node.timeline(tangle="chat", root=root)
    ]
    assert [line.split()[2] for line in lines[2:72]] == order[:70]
    assert lines[72].split()[:4] == ["71", "ins", "70", message_text(last["id"])]
    assert await node.stop() == 0
