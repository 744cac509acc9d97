"""A node no peer, client or file can starve, probed as an attacker would, against real
`tangled run` processes on loopback: a full store during catch-up is a state, shown in one
line, never a traceback."""

from __future__ import annotations

import json

import trio

from tanglenode.node.localnet import REQUEST_SECONDS, Node
from tests.integration.test_cli_live import cli
from tests.integration.test_metrics_live import WEB, scrape

FILLER = "x" * 12_000  # each message near the 16 KiB cap
FILLERS = 120  # about 1.5 MB: more than a 1 MiB map holds beside the empty store


async def _peer_error(node: Node) -> str:
    """The first peer's `last_error`, once it has one."""
    with trio.fail_after(30):
        while True:
            reply = await node.request("peers")
            errors = [peer["last_error"] for peer in reply["peers"] if peer["last_error"]]
            if errors:
                return errors[0]
            await trio.sleep(0.2)  # nothing to await: the peer's state is polled over IPC


async def test_a_full_store_during_catch_up_is_a_typed_state_in_one_line(tmp_path):
    source, small = Node(tmp_path, "source"), Node(tmp_path, "small")
    await source.start()
    with trio.fail_after(REQUEST_SECONDS * 4):
        async with await source.client() as client:
            for n in range(FILLERS):
                await client.publish({"n": n, "pad": FILLER})
    await small.start(peers=[source], extra_env={"TANGLED_STORAGE__MAP_SIZE": str(2**20), **WEB})

    error = await _peer_error(small)
    assert error.startswith("store-full: ") and "map_size" in error, error
    assert "ExceptionGroup" not in error and "internal error" not in error
    status = await small.request("status")
    assert status["store_full"] and "map_size" in status["store_full"]
    assert (await scrape(small))[("tanglenode_store_full", ())] == 1.0
    shown = await cli(small, "status")
    assert shown.returncode == 0 and b"store full: " in shown.stdout
    lines = small.log_lines()
    assert any(line.get("reason", "").startswith("store-full: ") for line in lines)
    assert not [line for line in lines if "exception" in line], "a traceback was logged"
    assert (await source.request("status"))["store_full"] is None
    assert json.loads((await cli(small, "status", "--json")).stdout)["store_full"]
