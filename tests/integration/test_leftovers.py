"""A node a test forgot to stop is killed when the test ends (tests/conftest.py)."""

import trio

from tanglenode.node.localnet import RUNNING, Node, kill_leftovers


def test_a_node_left_running_is_killed_and_reaped_and_a_stopped_one_is_not_tracked(tmp_path):
    stopped, forgotten = Node(tmp_path, "stopped"), Node(tmp_path, "forgotten")

    async def start_both_stop_one():
        await stopped.start()
        await forgotten.start()
        assert {stopped, forgotten} <= RUNNING
        assert await stopped.stop() == 0

    trio.run(start_both_stop_one)
    assert stopped not in RUNNING and forgotten in RUNNING
    process = forgotten.process
    assert kill_leftovers() == ["forgotten"] and forgotten not in RUNNING
    assert process.returncode is not None and process.returncode < 0  # killed, and reaped
