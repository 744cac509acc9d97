"""A node a test forgot to stop is killed when the test ends (tests/conftest.py)."""

import trio

from tanglenode.node.localnet import RUNNING, Node, kill_leftovers


async def test_a_node_left_running_is_killed_and_a_stopped_one_is_not_tracked(tmp_path):
    stopped, forgotten = Node(tmp_path, "stopped"), Node(tmp_path, "forgotten")
    await stopped.start()
    await forgotten.start()
    assert {stopped, forgotten} <= RUNNING
    assert await stopped.stop() == 0 and stopped not in RUNNING
    process = forgotten.process
    assert kill_leftovers() == ["forgotten"] and forgotten not in RUNNING
    with trio.fail_after(20):
        assert await process.wait() != 0  # killed, not exited by itself
