"""A group exclusion and its new epoch commit together: a node killed between the two
keeps neither, and one that is refused the epoch stores no exclusion either.

The kill lands exactly between them: a `sitecustomize` on the node's path
(made for this test only) wraps `sign_message` to SIGKILL its own process
when asked to sign a new epoch's `group/init` (its `epoch` link has a
root), that is after the exclusion was signed. Published in two
transactions, the exclusion would be stored then (a member excluded, the
group not re-keyed); in one, the kill comes before the commit.
"""

import os
import signal

import pytest
import trio

from tanglenode.node.ipc.oneshot import NodeError
from tanglenode.node.localnet import REQUEST_SECONDS, Node
from tanglenode.protocol.ipc_fields import ErrorKind
from tests.factories import keypair

KILL_ON_NEW_EPOCH = """
import os, signal
from tanglenode.protocol import message

_sign = message.sign_message


def sign_message(*args, **kwargs):
    epoch = (kwargs.get("tangles") or {}).get("epoch")
    if epoch is not None and epoch.root is not None:  # a new epoch, not a group's root
        os.kill(os.getpid(), signal.SIGKILL)
    return _sign(*args, **kwargs)


message.sign_message = sign_message
"""

BOB = keypair("exclusion-crash-bob").public


async def call(node: Node, op: str, **arguments):
    with trio.fail_after(REQUEST_SECONDS):
        async with await node.client() as client:
            return await client.request(op, **arguments)


async def group_size(node: Node, group: bytes) -> int:
    return len((await call(node, "group-timeline", group=group))["entries"])


async def test_a_node_killed_between_the_exclusion_and_the_epoch_keeps_neither(tmp_path):
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(KILL_ON_NEW_EPOCH)
    path = os.pathsep.join(p for p in (str(hook), os.environ.get("PYTHONPATH")) if p)
    alice = Node(tmp_path, "alice")
    await alice.start(extra_env={"PYTHONPATH": path})
    group = (await call(alice, "group-create", name="club"))["group"]  # a root: signed
    await call(alice, "group-add", group=group, members=[BOB])
    with pytest.raises((NodeError, trio.BrokenResourceError)):
        await call(alice, "group-exclude", group=group, members=[BOB])
    with trio.fail_after(REQUEST_SECONDS):
        assert await alice.process.wait() == -signal.SIGKILL  # killed by the hook, mid-way
    await alice.kill()  # reaped already: only forgets it

    await alice.start()  # without the hook
    state = await call(alice, "group-show", group=group)
    assert set(state["members"]) == {alice.key, BOB}  # not excluded...
    assert state["current_epoch"] == group and len(state["epochs"]) == 1  # ...nor re-keyed
    assert await group_size(alice, group) == 2  # the init and the add: no exclusion stored

    # Refused the epoch (we would not be in it): the exclusion is not stored either.
    with pytest.raises(NodeError) as refused:
        await call(alice, "group-exclude", group=group, members=[alice.key])
    assert refused.value.kind is ErrorKind.GROUP
    assert await group_size(alice, group) == 2

    done = await call(alice, "group-exclude", group=group, members=[BOB])
    state = await call(alice, "group-show", group=group)
    assert state["members"] == [alice.key] and state["current_epoch"] == done["epoch"]
    assert await group_size(alice, group) == 4
    assert await alice.stop() == 0
