"""IPC publish throughput and publish-to-subscriber latency against a real node.

One `tangled run` process; in this process, over its Unix socket:

  publishers  `--clients` connections (a row each: 1 and 8 by default),
              together publishing `--messages` messages into one tangle,
              each one request at a time (each waits for its reply: the
              message is signed, validated, stored with its timelines and
              processed, and committed durably; concurrent requests share
              one transaction, node/service/group_commit.py)
  subscriber  a timeline subscription to that tangle on its own connection

Throughput is the messages over the publishers' wall time; latency is, per
message, from just before its publish request is sent to the moment its
`ins` command reaches the subscriber (median and p99). Each row prints
the median of `--rounds` rounds, with the goal of issue 14 beside it.

With `--baseline CHECKOUT` (another checkout of this repository, e.g. `git
archive main | tar -x -C /tmp/base`), a second node runs that code, and
the rounds alternate between the two nodes, so the ratio is of one run on
one (shared) machine: the figures of ours, the baseline's, and ours over it.

    .venv/bin/python bench/ipc.py [--messages 2000] [--rounds 3] [--clients 1 8]
                                  [--baseline /tmp/base] [--dir /dev/shm]

`--store-cpu` measures instead the store's own share, in process, with no
node, socket or thread: the CPU time per message of `store.writes.publish_batch`
in batches of 1 and of 32 (a store under `--dir`, four other feeds held),
ours and, with `--baseline`, the baseline's (in a child process), rounds
alternating. CPU time, not wall time, so it depends less on the machine's
other load and not at all on the disk.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import aclosing
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tanglenode.node.localnet import Node

ROOT = Path(__file__).resolve().parents[1]

# clients -> (publishes/s goal, at least); every row: p99 latency goal in ms
GOALS = {1: (1_000, 600), 8: (3_000, 1_500)}
P99_GOAL_MS = 5.0


async def one_round(node: Node, clients: int, count: int) -> tuple[float, list[float]]:
    """`count` publishes from `clients` connections at once; (seconds, latencies)."""
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

    async def publish(first: int, stop: int) -> None:
        async with await node.client() as client:
            for n in range(first, stop):
                before = time.perf_counter()
                reply = await client.publish({"n": n, "text": "hello"}, {"bench": root})
                sent[reply["id"]] = before

    async with trio.open_nursery() as nursery:
        await nursery.start(subscribe)
        began = time.perf_counter()
        async with trio.open_nursery() as publishers:
            for client in range(clients):
                publishers.start_soon(
                    publish, count * client // clients, count * (client + 1) // clients
                )
        elapsed = time.perf_counter() - began
        await done.wait()
    latencies = [arrived[msg_id] - at for msg_id, at in sent.items()]
    return elapsed, latencies


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(len(ordered) * 0.99) - 1)]


def baseline_env(checkout: Path, tmp: Path) -> dict[str, str]:
    """The environment that makes `tangled` import the package from `checkout`: a
    `tanglenode/__init__.py` first on PYTHONPATH that maps the subpackages there."""
    package = tmp / "baseline-path" / "tanglenode"
    package.mkdir(parents=True)
    installed = Path(sys.modules["tanglenode"].__file__).read_text()
    package.joinpath("__init__.py").write_text(installed.replace(str(ROOT), str(checkout)))
    return {"PYTHONPATH": str(package.parent)}


async def measure(node: Node, clients: int, count: int) -> tuple[float, float, float]:
    """One round: (publishes/s, latency median ms, latency p99 ms)."""
    elapsed, latencies = await one_round(node, clients, count)
    return count / elapsed, statistics.median(latencies) * 1000, p99(latencies) * 1000


def medians(figures: list[tuple[float, float, float]]) -> tuple[float, float, float]:
    rate, median, tail = (statistics.median(column) for column in zip(*figures, strict=True))
    return rate, median, tail


async def run(args) -> None:
    where = args.dir or tempfile.gettempdir()
    print(
        f"# {platform.node()} {platform.machine()} python {platform.python_version()}, "
        f"{os.cpu_count()} cores, store under {where}"
    )
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-ipc-", dir=args.dir) as tmp:
        nodes = {"ours": Node(Path(tmp), "ours")}
        await nodes["ours"].start()
        if args.baseline:
            nodes["baseline"] = Node(Path(tmp), "baseline")
            await nodes["baseline"].start(extra_env=baseline_env(args.baseline, Path(tmp)))
        for node in nodes.values():
            await one_round(node, 1, 50)  # warm up: imports, first pages of the store
        for clients in args.clients:
            figures: dict[str, list[tuple[float, float, float]]] = {name: [] for name in nodes}
            for round_no in range(args.rounds):
                for name, node in nodes.items():
                    figures[name].append(await measure(node, clients, args.messages))
                    rate, median, tail = figures[name][-1]
                    print(
                        f"  {name}, {clients} client(s), round {round_no}: {rate:,.0f} "
                        f"publishes/s, latency median {median:.2f} ms, p99 {tail:.2f} ms",
                        flush=True,
                    )
            rows.append((clients, {name: medians(found) for name, found in figures.items()}))
        for node in nodes.values():
            await node.stop()
    print(f"\nmedians of {args.rounds} rounds, {args.messages} messages a round:")
    for clients, found in rows:
        goal, least = GOALS.get(clients, (None, None))
        aim = f"goal >= {goal:,}/s (at least {least:,})" if goal else "no goal"
        rate, median, tail = found["ours"]
        print(
            f"IPC publish, {clients} client(s): {rate:,.0f} publishes/s [{aim}], latency "
            f"median {median:.2f} ms, p99 {tail:.2f} ms [goal p99 <= {P99_GOAL_MS:g} ms]"
        )
        if "baseline" in found:
            base_rate, base_median, base_tail = found["baseline"]
            print(
                f"  baseline: {base_rate:,.0f} publishes/s, latency median {base_median:.2f} "
                f"ms, p99 {base_tail:.2f} ms; ours/baseline {rate / base_rate:.2f}x"
            )


def store_cpu(messages: int, where: str | None) -> dict[int, float]:
    """CPU microseconds per message of `publish_batch`, for batches of 1 and of 32."""
    from tanglenode.protocol.identity import Keypair
    from tanglenode.protocol.message import sign_message
    from tanglenode.storage.store import FeedStore

    def others(index: int, seq: int, prev: bytes | None):
        keypair = Keypair(bytes([index + 1]) * 32)
        return sign_message(
            keypair, seq=seq, prev=prev, timestamp=seq, timeframe={}, tangles={}, content=seq
        )

    figures = {}
    for size in (1, 32):
        with tempfile.TemporaryDirectory(prefix="bench-ipc-", dir=where) as tmp:
            store = FeedStore(Path(tmp) / "store", keypair=Keypair(b"\x05" * 32))
            for index in range(4):
                first = others(index, 1, None)
                store.writes.ingest([first.raw, others(index, 2, first.id).raw])
            root = store.writes.publish({"type": "bench"}, {"bench": None})
            began = time.process_time()
            for _start in range(0, messages, size):
                store.writes.publish_batch(
                    [({"n": n, "text": "hello"}, {"bench": root.id}) for n in range(size)]
                )
            figures[size] = (time.process_time() - began) / messages * 1e6
            store.close()
    return figures


def run_store_cpu(args) -> None:
    print(f"# {platform.node()}, {os.cpu_count()} cores, store under {args.dir or 'TMPDIR'}")
    found: dict[str, list[dict[int, float]]] = {"ours": [], "baseline": []}
    with tempfile.TemporaryDirectory(prefix="bench-ipc-") as tmp:
        for round_no in range(args.rounds):
            found["ours"].append(store_cpu(args.messages, args.dir))
            if args.baseline:
                child = [sys.executable, __file__, "--store-cpu", "--json", "--rounds", "1"]
                child += ["--messages", str(args.messages)] + (
                    ["--dir", args.dir] if args.dir else []
                )
                env = {**os.environ, **baseline_env(args.baseline, Path(tmp) / str(round_no))}
                output = subprocess.run(child, env=env, check=True, capture_output=True, text=True)
                found["baseline"].append({int(k): v for k, v in json.loads(output.stdout).items()})
            shown = [
                f"{name} " + ", ".join(f"batch {size} {us:.0f} us" for size, us in f[-1].items())
                for name, f in found.items()
                if f
            ]
            print(f"  round {round_no}: " + "; ".join(shown), flush=True)
    print(f"\nstore CPU per published message, median of {args.rounds} rounds:")
    for size in (1, 32):
        ours = statistics.median(figures[size] for figures in found["ours"])
        line = f"publish_batch, batches of {size}: {ours:.0f} us"
        if found["baseline"]:
            base = statistics.median(figures[size] for figures in found["baseline"])
            line += f"; baseline {base:.0f} us; baseline/ours {base / ours:.2f}x"
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000, help="per round, all clients")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--dir", help="where the node's data directory goes (default: TMPDIR)")
    parser.add_argument("--baseline", type=Path, help="a checkout to alternate rounds with")
    parser.add_argument("--store-cpu", action="store_true", help="the store's CPU, in process")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # a child's output
    args = parser.parse_args()
    if args.store_cpu and args.json:
        print(json.dumps(store_cpu(args.messages, args.dir)))
    elif args.store_cpu:
        run_store_cpu(args)
    else:
        trio.run(run, args)


if __name__ == "__main__":
    main()
