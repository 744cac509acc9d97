"""`whoami`, `tangles` and `group list` through the real CLI, the node running and stopped."""

import json
import subprocess
from functools import partial

import trio

from tanglenode.config.secret import read_secret
from tanglenode.node.cli.discover import shell_word
from tanglenode.node.localnet import TANGLED, Node
from tanglenode.protocol.identity import message_text, parse_message_id
from tanglenode.storage.groups import state as groups
from tanglenode.storage.store import FeedStore
from tests.factories import Feed
from tests.integration.test_cli_live import cli
from tests.terminal import run_on_terminal


def rows(done) -> list[dict]:
    assert done.returncode == 0, done.stderr.decode()
    return [json.loads(line) for line in done.stdout.decode().splitlines()]


async def on_terminal(node: Node, *args: str):
    return await trio.to_thread.run_sync(
        partial(run_on_terminal, list(args), data_dir=node.data_dir)
    )


async def test_whoami_answers_with_the_node_stopped_or_running(tmp_path):
    node = Node(tmp_path, "me")
    stopped = rows(await cli(node, "whoami", "--json"))[0]
    assert stopped == {
        "feed": node.feed_id,
        "data_dir": str(node.data_dir),
        "config": str(node.data_dir / "tangled.toml"),
        "secret": str(node.data_dir / "secret"),
        "socket": str(node.socket_path),
        "running": False,
    }
    relative = subprocess.run(  # a relative --data-dir: the paths come back absolute
        [str(TANGLED), "--data-dir", node.data_dir.name, "whoami", "--json"],
        cwd=node.data_dir.parent,
        capture_output=True,
        check=True,
    )
    assert rows(relative) == [stopped]
    await node.start()
    assert rows(await cli(node, "whoami", "--json"))[0]["running"] is True
    await cli(node, "about", "myself")
    shown = await on_terminal(node, "whoami")
    assert shown.returncode == 0
    assert f"feed      {node.feed_id}\n" in shown.output and "node      running (" in shown.output
    assert "name      ~myself\n" in shown.output
    assert await node.stop() == 0
    shown = await on_terminal(node, "whoami")
    assert "node      stopped\n" in shown.output and "data dir  " in shown.output

    # the public half only: a seed that no longer matches does not matter to whoami
    secret = node.data_dir / "secret"
    document = json.loads(secret.read_text())
    secret.write_text(json.dumps({**document, "seed": "AAAA"}))
    assert rows(await cli(node, "whoami", "--json"))[0]["feed"] == node.feed_id
    for bad in ("{", json.dumps({"public": "@nope"}), " " * (1 << 17)):
        secret.write_text(bad)
        refused = await cli(node, "whoami")
        assert refused.returncode == 3 and b"not a tangled secret key file" in refused.stderr
    secret.unlink()
    missing = await cli(node, "whoami")
    assert missing.returncode == 4 and b"run `tangled init` first" in missing.stderr


async def test_tangles_lists_each_tangle_the_same_running_or_stopped(tmp_path):
    node = Node(tmp_path, "lister")
    await node.start()
    chat = (await node.publish("root", {"chat": None}))["id"]
    for text in ("one", "two"):
        await node.publish(text, {"chat": chat})
    notes = [(await node.publish(n, {"notes": None}))["id"] for n in ("a", "b")]
    await node.publish("x", {"e\x1b[2Jvil": None})  # a name others chose: no escapes shown

    running = rows(await cli(node, "tangles", "--json"))
    assert len(running) == 4
    (listed,) = [row for row in running if row["tangle"] == "chat"]
    assert parse_message_id(listed["root"]) == chat and listed["author"] == node.feed_id
    assert (listed["messages"], listed["joined"], listed["pending"]) == (3, 3, 0)
    assert listed["last"] > 0 and listed["version"] == 3
    only = rows(await cli(node, "tangles", "--name", "notes", "--json"))
    assert sorted(parse_message_id(row["root"]) for row in only) == sorted(notes)
    assert "e\x1b[2Jvil" in {row["tangle"] for row in running}  # JSON keeps the text

    first = await cli(node, "tangles", "--limit", "1", "--json")  # then follow the hint
    hint = first.stderr.decode().strip().rpartition("--after ")[2]
    cursor = subprocess.run(  # the hint as a shell reads it: $'...' where it must
        ["bash", "-c", f"printf %s {hint}"], capture_output=True, check=True
    ).stdout.decode()
    rest = rows(await cli(node, "tangles", "--after", cursor, "--json"))
    assert rows(first) + rest == running

    shown = await on_terminal(node, "tangles")
    lines = shown.output.splitlines()
    assert lines[0].split() == [
        "TANGLE",
        "MESSAGES",
        "JOINED",
        "PENDING",
        "LAST",
        "ACTIVITY",
        "STARTED",
        "BY",
    ]
    (chat_line,) = [line for line in lines if line.startswith("chat/")]
    assert chat_line.split()[:4] == [f"chat/{listed['root']}", "3", "3", "0"]
    assert "\x1b" not in shown.output and any(line.startswith("e?[2Jvil/") for line in lines)

    assert await node.stop() == 0
    assert rows(await cli(node, "tangles", "--json")) == running  # the store, read directly
    bad_input = (
        (("--after", "nonsense"), 3),
        (("--after", "chat/%bad"), 3),
        (("--name", ""), 3),
        (("--name", "x" * 65), 3),
        (("--name", "a\udcff"), 3),  # argv bytes that are not UTF-8
        (("--limit", "0"), 2),
    )
    for bad, code in bad_input:
        refused = await cli(node, "tangles", *bad)
        assert refused.returncode == code, refused.stderr
        assert len(refused.stderr.decode().splitlines()) == 1


async def test_tangles_walks_as_many_pages_as_the_limit_needs(tmp_path):
    """Over one IPC page (1000 tangles) and back: the cursor each page hands on is used."""
    node = Node(tmp_path, "many")
    author = Feed("many-tangles")
    roots = [author.root("chat" if index % 2 else "notes") for index in range(1003)]
    with FeedStore(node.data_dir / "store") as store:
        store.writes.ingest([root.raw for root in roots])
    stopped = rows(await cli(node, "tangles", "--limit", "1002", "--json"))
    assert len(stopped) == 1002 and len({row["root"] for row in stopped}) == 1002
    notes = rows(await cli(node, "tangles", "--name", "notes", "--limit", "5000", "--json"))
    assert len(notes) == 502 and {row["tangle"] for row in notes} == {"notes"}
    await node.start()
    assert rows(await cli(node, "tangles", "--limit", "1002", "--json")) == stopped
    assert await node.stop() == 0


async def test_a_member_finds_the_group_it_was_added_to(tmp_path):
    host, friend = Node(tmp_path, "host"), Node(tmp_path, "friend")
    await host.start()

    async def ok(node: Node, *args: str) -> str:
        done = await cli(node, "group", *args)
        assert done.returncode == 0, done.stderr.decode()
        return done.stdout.decode().strip()

    group = await ok(host, "create", "book club")
    await ok(host, "add", group, friend.feed_id)
    await ok(host, "post", group, '{"text": "hello"}')
    await friend.start(peers=[host])
    await friend.wait_for_size(3, tangle="group", root=parse_message_id(group))

    (found,) = rows(await cli(friend, "group", "list", "--json"))
    assert found["group"] == group and found["name"] == "book club"
    assert (found["members"], found["member"], found["epochs"]) == (2, True, 1)
    assert found["author"] == host.feed_id and found["epoch"] == group
    shown = await on_terminal(friend, "group", "list")
    header, line = shown.output.splitlines()
    assert header.split()[:4] == ["GROUP", "MEMBERS", "EPOCHS", "US"]
    assert line.split()[:4] == [group, "2", "1", "member"] and line.endswith("book club")

    await ok(host, "exclude", group, friend.feed_id)
    await friend.wait_for_size(5, tangle="group", root=parse_message_id(group))
    (former,) = rows(await cli(friend, "group", "list", "--json"))
    assert (former["member"], former["members"], former["name"]) == (False, 1, "book club")
    # `group create` refuses such a name; another program may still publish one
    content, tangles = groups.create(read_secret(host.data_dir / "secret"), "bad\x07\nname")
    async with await host.client() as client:
        evil = message_text((await client.publish(content, tangles))["id"])
    listed = {row["group"]: row for row in rows(await cli(host, "group", "list", "--json"))}
    hosted, other = listed[group], listed[evil]
    assert (hosted["member"], hosted["members"], hosted["epochs"]) == (True, 1, 2)
    assert other["name"] == "bad\x07\nname" and other["member"]
    shown = (await on_terminal(host, "group", "list")).output
    assert len(shown.splitlines()) == 3 and shown.count("bad??name") == 1

    assert await friend.stop() == 0 and await host.stop() == 0
    assert rows(await cli(friend, "group", "list", "--json")) == [former]  # from the store
    from_store = rows(await cli(host, "group", "list", "--json"))
    assert {row["group"]: row for row in from_store} == listed


def test_the_more_hint_survives_a_shell_whatever_the_name_holds():
    # click strips escape sequences from what it echoes off a terminal; the hint must not
    # lose them, or `--after` names another tangle and the next page repeats one.
    for name in ("e\x1b[2Jvil/%r", "it's/%r", "back\\slash\x07/%r", "ü\u200e\U0001f600/%r", "a/%r"):
        word = shell_word(name)
        read = subprocess.run(["bash", "-c", f"printf %s {word}"], capture_output=True, check=True)
        assert read.stdout.decode() == name and "\x1b" not in word
