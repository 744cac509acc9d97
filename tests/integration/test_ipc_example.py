"""docs/IPC.md's plain-socket client (docs/ipc_client.py), run as written against a real node."""

import sys
from pathlib import Path

import pytest
import trio

from tanglenode.node.localnet import REQUEST_SECONDS, Node

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "ipc_client.py"


def test_the_doc_shows_the_example_whole():
    doc = (ROOT / "docs" / "IPC.md").read_text()
    assert f"```python\n{EXAMPLE.read_text()}```\n" in doc


async def test_the_example_publishes_and_reads_the_tangle_back(tmp_path):
    node = Node(tmp_path, "solo")
    await node.start()
    try:
        with trio.fail_after(REQUEST_SECONDS):
            done = await trio.run_process(
                [sys.executable, str(EXAMPLE), str(node.socket_path)],
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
        assert done.returncode == 0, done.stderr.decode()
        lines = done.stdout.decode().splitlines()
        root, reply = lines[1].split()[2], lines[2].split()[2]
        chat = await node.timeline(tangle="chat", root=bytes.fromhex(root))
        assert chat == [(0, bytes.fromhex(root)), (1, bytes.fromhex(reply))]
        assert lines == [
            "timeline at version 2",
            f"  0 0 {root} joined",
            f"  1 1 {reply} joined",
            f"  1 ins 0 {root}",
            f"  2 ins 1 {reply}",
            "reply at position 1 rank 1",
            "unknown message: not-found",
        ]
        assert await node.stop() == 0
    finally:
        if node.process is not None:
            await node.kill()  # the assertions above failed: leave no daemon behind


def doc_block(containing: str) -> str:
    """The python block of docs/IPC.md that holds `containing`."""
    blocks = (ROOT / "docs" / "IPC.md").read_text().split("```python\n")[1:]
    (block,) = [block.split("```")[0] for block in blocks if containing in block]
    return block


def test_the_client_converts_ids_both_ways():
    from tanglenode.client import (
        BadIdentifier,
        feed_text,
        message_text,
        parse_feed,
        parse_message_id,
    )

    raw = bytes(range(32))
    assert parse_message_id(message_text(raw)) == raw and message_text(raw).startswith("%")
    assert parse_feed(feed_text(raw)) == raw and feed_text(raw).startswith("@")
    for wrong in (feed_text(raw), "%short", message_text(raw) + "A"):
        with pytest.raises(BadIdentifier):
            parse_message_id(wrong)


async def test_the_subscribe_example_follows_a_tangle_named_as_the_cli_shows_it(tmp_path):
    from tanglenode.client import NodeClient, message_text

    assert "since" in NodeClient.subscribe.__doc__ and "tangle=NAME" in NodeClient.subscribe.__doc__
    node = Node(tmp_path, "solo")
    await node.start()
    root = (await node.publish("root", {"chat": None}))["id"]
    printed: list[str] = []
    scope = {"print": lambda *words: printed.append(" ".join(map(str, words)))}
    exec(doc_block("async def follow(socket_path: str, tangle: str)"), scope)

    async def until(count: int) -> None:
        while len(printed) < count:
            await trio.sleep(0.02)

    with trio.fail_after(REQUEST_SECONDS):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(scope["follow"], node.socket_path, f"chat/{message_text(root)}")
            await until(1)
            reply = (await node.publish("reply", {"chat": root}))["id"]
            await until(2)
            nursery.cancel_scope.cancel()
    assert printed == [f"held 0 {message_text(root)}", f"2 ins 1 {message_text(reply)}"]
    assert await node.stop() == 0
