"""What the web view costs: a tangle's page, and how soon a publish reaches a live page.

Against a real `tangled run` with the view on (a temporary data directory):

    page        GET /t/chat/ROOT of a tangle of `--messages` messages (names, times,
                content, states rendered), median of `--rounds`, beside the IPC
                `timeline` request of the same tangle (ids and ranks only), and
                their ratio: what rendering adds to reading the order;
    live        from a publish's IPC request to its `commands` event on an open
                `/t/chat/ROOT/events` stream (HTTP, server-sent events), median of
                `--rounds` publishes, beside the same publish reaching an IPC
                `subscribe` stream, and their ratio.

Both streams are open at once and each publish is timed on both, so load on
the machine falls on both alike.

    .venv/bin/python bench/web.py [--messages 1000] [--rounds 21] [--json]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from contextlib import aclosing
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tanglenode.node.localnet import Node
from tanglenode.protocol.identity import message_text
from tests.integration.test_web_live import get
from tests.sse import EventReader

WRITERS = 8  # clients publishing at once while the tangle is filled


async def _publish_many(node: Node, root: bytes, numbers: range) -> None:
    async with await node.client() as client:
        for number in numbers:
            await client.publish({"text": f"message {number}"}, {"chat": root})


async def fill(node: Node, messages: int) -> bytes:
    """A tangle of `messages` messages, published by `WRITERS` clients at once."""
    root = (await node.publish({"text": "root"}, {"chat": None}))["id"]
    async with trio.open_nursery() as nursery:
        for writer in range(WRITERS):
            nursery.start_soon(_publish_many, node, root, range(writer + 1, messages, WRITERS))
    return root


async def page_figures(node: Node, url: str, root: bytes, rounds: int) -> tuple[float, float]:
    pages, reads = [], []
    async with await node.client() as client:
        for _ in range(rounds):
            began = time.perf_counter()
            code, _, _ = await get(url)
            pages.append(time.perf_counter() - began)
            assert code == 200, code
            began = time.perf_counter()
            await client.timeline(tangle="chat", root=root, limit=100_000)
            reads.append(time.perf_counter() - began)
    return statistics.median(pages) * 1000, statistics.median(reads) * 1000


async def _by_ipc(stream, published: float, took: list[float]) -> None:
    while not (await stream.__anext__()).get("commands"):
        pass
    took.append(time.perf_counter() - published)


async def _by_web(reader: EventReader, published: float, took: list[float]) -> None:
    await reader.until("commands")
    took.append(time.perf_counter() - published)


async def live_figures(node: Node, events_url: str, root: bytes, rounds: int):
    sse: list[float] = []
    ipc: list[float] = []
    reader = await EventReader.open(events_url)
    await reader.until("unjoined")
    async with (
        await node.client() as client,
        await node.client() as publisher,
        aclosing(client.subscribe(tangle="chat", root=root)) as stream,
    ):
        await stream.__anext__()  # the subscription's start
        for n in range(rounds):
            published = time.perf_counter()
            await publisher.publish({"text": f"live {n}"}, {"chat": root})
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_by_ipc, stream, published, ipc)
                nursery.start_soon(_by_web, reader, published, sse)
    await reader.aclose()
    return statistics.median(sse) * 1000, statistics.median(ipc) * 1000


async def main(messages: int, rounds: int) -> dict:
    with tempfile.TemporaryDirectory() as directory:
        node = Node(Path(directory), "bench")
        await node.start(extra_env={"TANGLED_WEB__LISTEN": "127.0.0.1:0"})
        try:
            async with await node.client() as client:
                base = (await client.status())["web"]
            token = (node.data_dir / "web-token").read_text().strip()
            root = await fill(node, messages)
            page = f"{base}t/chat/{message_text(root)[1:]}?token={token}"
            events = f"{base}t/chat/{message_text(root)[1:]}/events?token={token}"
            await get(page)  # warm: first reads fill the page cache
            page_ms, read_ms = await page_figures(node, page, root, rounds)
            async with await node.client() as client:
                version = (await client.timeline(tangle="chat", root=root, limit=1))["version"]
            sse_ms, ipc_ms = await live_figures(node, f"{events}&since={version}", root, rounds)
        finally:
            await node.stop()
    return {
        "machine": f"{platform.machine()}, {platform.python_version()}",
        "messages": messages,
        "rounds": rounds,
        "page_ms": round(page_ms, 2),
        "ipc_timeline_ms": round(read_ms, 2),
        "page_ratio": round(page_ms / read_ms, 2),
        "live_sse_ms": round(sse_ms, 2),
        "live_ipc_ms": round(ipc_ms, 2),
        "live_ratio": round(sse_ms / ipc_ms, 2),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--json", action="store_true")
    arguments = parser.parse_args()
    found = trio.run(main, arguments.messages, arguments.rounds)
    if arguments.json:
        print(json.dumps(found))
    else:
        print(
            f"{found['messages']} messages, median of {found['rounds']} ({found['machine']})\n"
            f"page  GET /t/chat/ROOT {found['page_ms']:8.2f} ms   IPC timeline "
            f"{found['ipc_timeline_ms']:8.2f} ms   ratio {found['page_ratio']:.2f}\n"
            f"live  publish -> SSE   {found['live_sse_ms']:8.2f} ms   IPC subscribe "
            f"{found['live_ipc_ms']:8.2f} ms   ratio {found['live_ratio']:.2f}"
        )
