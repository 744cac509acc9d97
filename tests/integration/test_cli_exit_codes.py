"""Exit codes through the real CLI against real nodes: not found is 4, a refused group op 3."""

from tanglenode.node.cli.exits import ExitCode
from tanglenode.node.localnet import Node
from tanglenode.protocol.identity import parse_message_id
from tests.integration.test_cli_live import cli


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
