"""Subscribers that never read: what they cost a real node, and what it gives back.

    .venv/bin/python bench/subscribers.py [--streams 8] [--megabytes 24] [--runs 3]

A node holding `--megabytes` of messages (imported, every command kept) gets
`--streams` IPC subscriptions from version 0 whose clients never read. The node's
resident anonymous memory (RssAnon: the heap, not the store's mapped pages) is
sampled until every stream has ended (each is closed when its socket stays
unwritable for 10 s); the figures are the growth at the peak and what is left 2 s
after the last stream ended, against the goal: the peak within
`subscribers.queue_bytes` (32 MiB) plus one page being read per stream, and the
memory returned afterwards.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tanglenode.node.localnet import TANGLED, Node
from tanglenode.protocol.framing import LENGTH_PREFIX, encode_frame
from tanglenode.storage.clients.bundle import MAGIC
from tests.factories import Feed
from tests.integration.test_metrics_live import scrape

WEB = {"TANGLED_WEB__LISTEN": "127.0.0.1:0"}
KEEP_ALL = {"TANGLED_TIMELINES__KEEP_COMMANDS": "0", **WEB}
PAD = "x" * 14_000
MIB = 1 << 20


def rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no RssAnon")


def filled_node(root: Path, megabytes: int) -> Node:
    """A node whose store holds about `megabytes` of messages, imported."""
    node = Node(root, "subscribed")
    feed = Feed("subscribers-bench")
    count = megabytes * MIB // len(PAD)
    bundle = root / "fill.bundle"
    with bundle.open("wb") as out:
        out.write(MAGIC)
        for n in range(count):
            raw = feed.append({"type": "post", "n": n, "pad": PAD}).raw
            out.write(LENGTH_PREFIX.pack(len(raw)) + raw)
    subprocess.run(
        [str(TANGLED), "--data-dir", str(node.data_dir), "import", str(bundle)],
        check=True,
        capture_output=True,
    )
    return node


async def stalled_subscribers(node: Node, streams: int) -> dict[str, float]:
    """Start `node`, open `streams` subscriptions that never read; RSS growth in MiB."""
    await node.start(extra_env=KEEP_ALL)
    assert node.process is not None
    pid = node.process.pid
    base = rss(pid)
    peak = base
    clients = []
    for _ in range(streams):
        sock = trio.socket.socket(trio.socket.AF_UNIX)
        await sock.connect(str(node.socket_path))
        await sock.send(encode_frame({"op": "subscribe", "id": 1, "spacetime": True, "since": 0}))
        clients.append(sock)
    with trio.fail_after(60):
        while True:  # until the node has dropped every stream (10 s unwritable each)
            peak = max(peak, rss(pid))
            if await _subscribers(node) == 0:
                break
            await trio.sleep(0.1)
    await trio.sleep(2)
    after = rss(pid)
    for sock in clients:
        sock.close()
    await node.stop()
    return {
        "base_mib": base / MIB,
        "peak_growth_mib": (peak - base) / MIB,
        "after_growth_mib": (after - base) / MIB,
    }


async def _subscribers(node: Node) -> int:
    return int((await scrape(node))[("tanglenode_ipc_subscribers", ())])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--streams", type=int, default=8)
    parser.add_argument("--megabytes", type=int, default=24)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    peaks, afters = [], []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as root:
            node = filled_node(Path(root), args.megabytes)
            figures = trio.run(stalled_subscribers, node, args.streams)
        peaks.append(figures["peak_growth_mib"])
        afters.append(figures["after_growth_mib"])
    print(
        f"{args.streams} subscribers that never read, {args.megabytes} MB of log each: "
        f"RSS growth at the peak {statistics.median(peaks):.0f} MiB (median of {args.runs}; "
        f"goal <= 32 MiB budget + a page per stream), "
        f"2 s after the last ended {statistics.median(afters):.0f} MiB (goal: returned)"
    )
    print(f"cpu: {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
