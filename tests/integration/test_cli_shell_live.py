"""The CLI's shell against real nodes: exit codes (not found 4, a refused group op 3), and
one-shot commands answering without Trio, pydantic, structlog or the store."""

import json

import trio

from tanglenode.node.cli.exits import ExitCode
from tanglenode.node.localnet import Node
from tanglenode.protocol.identity import parse_message_id
from tests.integration.test_cli_live import cli
from tests.node.test_cli_shell import HEAVY, modules_loaded


def one_line(done) -> str:
    """The error on stderr, checked to be one line, no traceback, nothing on stdout."""
    text = done.stderr.decode()
    assert text.count("\n") == 1 and text.startswith("tangled: "), text
    assert done.stdout == b""
    return text


async def test_group_commands_exit_with_what_went_wrong(tmp_path):
    alice, bob = Node(tmp_path, "alice"), Node(tmp_path, "bob")
    await alice.start()
    await bob.start([alice])
    plain = (await cli(alice, "publish", '"not a group"')).stdout.decode().strip()
    for command in ("timeline", "members", "epochs"):
        done = await cli(alice, "group", command, plain)
        assert done.returncode == ExitCode.NOT_FOUND, (command, done.stderr)
        assert "no such group" in one_line(done)

    group = (await cli(alice, "group", "create", "club")).stdout.decode().strip()
    assert (await cli(alice, "group", "add", group, bob.feed_id)).returncode == 0
    excluded = await cli(alice, "group", "exclude", group, bob.feed_id)
    assert excluded.returncode == 0, excluded.stderr
    # create, add, exclude, the new epoch: bob holds all four before he tries to post
    await bob.wait_for_size(4, tangle="group", root=parse_message_id(group))
    refused = await cli(bob, "group", "post", group, '{"text": "still here?"}')
    assert refused.returncode == ExitCode.BAD_INPUT, refused.stderr
    assert "not a member" in one_line(refused)
    for node in (alice, bob):
        assert await node.stop() == 0


async def test_status_and_publish_answer_without_the_heavy_imports(tmp_path):
    """Against a running node, the one-shot client (node/ipc/oneshot.py) does the asking."""
    node = Node(tmp_path, "solo")
    await node.start()
    data = ["--data-dir", str(node.data_dir)]
    for args in (["status", "--json"], ["publish", '{"text": "hi"}'], ["status"]):
        code, loaded = await trio.to_thread.run_sync(modules_loaded, tmp_path, *data, *args)
        assert code == 0, args
        assert [name for name in HEAVY if name in loaded] == [], args
    status = await cli(node, "status", "--json")
    assert json.loads(status.stdout)["messages"] == 1
    assert await node.stop() == 0
