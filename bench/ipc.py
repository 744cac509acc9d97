"""IPC publish throughput and publish-to-subscriber latency against a real node.

One `tangled run` process; in this process, over its Unix socket:

  publisher   publishes N messages into one tangle, one request at a time
              (each waits for its reply: the message is signed, validated,
              stored with its timelines and processed, and committed)
  subscriber  a timeline subscription to that tangle on its own connection

Throughput is N over the publisher's wall time; latency is, per message,
from just before its publish request is sent to the moment its `ins` command
reaches the subscriber (median and p99).

    .venv/bin/python bench/ipc.py [--messages 2000] [--rounds 3]
"""

from __future__ import annotations

import argparse
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


async def one_round(node: Node, count: int) -> tuple[float, list[float]]:
    sent: dict[bytes, float] = {}
    arrived: dict[bytes, float] = {}
    async with await node.client() as client:
        root = (await client.publish({"type": "bench"}, {"bench": None}))["id"]
    done = trio.Event()

    async def subscribe(task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with (
            await node.client() as client,
            aclosing(client.subscribe(since=None, tangle="bench", root=root)) as events,
        ):
            async for event in events:
                if "started" in event:
                    task_status.started()
                for command in event.get("commands", ()):
                    if "ins" in command:
                        arrived[command["message"]["id"]] = time.perf_counter()
                if len(arrived) >= count:
                    done.set()
                    return

    async with trio.open_nursery() as nursery:
        await nursery.start(subscribe)
        async with await node.client() as client:
            began = time.perf_counter()
            for n in range(count):
                before = time.perf_counter()
                reply = await client.publish({"n": n, "text": "hello"}, {"bench": root})
                sent[reply["id"]] = before
            elapsed = time.perf_counter() - began
        await done.wait()
    latencies = [arrived[msg_id] - at for msg_id, at in sent.items()]
    return elapsed, latencies


async def run(args) -> None:
    print(f"# {platform.node()} {platform.machine()} python {platform.python_version()}")
    with tempfile.TemporaryDirectory(prefix="bench-ipc-") as tmp:
        node = Node(Path(tmp), "node")
        await node.start()
        rates, medians, p99s = [], [], []
        for round_no in range(args.rounds):
            elapsed, latencies = await one_round(node, args.messages)
            latencies.sort()
            rates.append(args.messages / elapsed)
            medians.append(statistics.median(latencies) * 1000)
            p99s.append(latencies[int(len(latencies) * 0.99) - 1] * 1000)
            print(
                f"round {round_no}: {rates[-1]:,.0f} publishes/s, latency median "
                f"{medians[-1]:.2f} ms, p99 {p99s[-1]:.2f} ms",
                flush=True,
            )
        await node.stop()
    print(
        f"median of rounds: {statistics.median(rates):,.0f} publishes/s, latency median "
        f"{statistics.median(medians):.2f} ms, p99 {statistics.median(p99s):.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    trio.run(run, parser.parse_args())


if __name__ == "__main__":
    main()
