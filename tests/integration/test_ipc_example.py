"""docs/IPC.md's plain-socket client (docs/ipc_client.py), run as written against a real node."""

import sys
from pathlib import Path

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
