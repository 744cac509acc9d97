"""Our import and catch-up beside the peers': ssb-db2, ssb-ebt, Hypercore 11 and corestore.

Theory of operation
-------------------
One workload for every system: N messages (--messages, 30,000 by default) from 64
feeds, each message by a feed drawn at random, its content a post of 20 to 199
characters of text. Ours are bench/ingest.py's `build_messages` (256 tangles,
timeframes of at most 4 other feeds: the goal workload of bench/replication.py);
the peers' are drawn the same way by bench/peers/common.js, as JSON contents
(`{"type": "post", "text": ...}`), signed by each system in its own format.

Per run, one after another (the systems alternate within a run, so a machine
whose speed drifts slows each of them alike):

  ours, import     `tangled import`'s path on a bundle file of the signed
                   messages: bench/ingest.py's `time_import` (two cores)
  ours, catch-up   a fresh `tangled run` node dials a source node holding all N
                   and is timed until its status counts them:
                   bench/replication.py's `catch_up` (the sink checks signatures
                   in its worker process, the default); its data directory on
                   disk once it stopped is our store size
  ssb-db2 add      already-signed classic messages validated (every signature)
                   and appended, until the db is closed (bench/peers/ssb-add.js)
  ssb-db2 create   each message signed and appended, one after another (publish),
                   until closed (ssb-create.js)
  ssb-ebt          two secret-stack + ssb-db2 + ssb-ebt nodes in two processes
                   over TCP (secret handshake, box-stream); the sink asks for the
                   64 feeds and is timed from the connect until it holds all N
                   and is closed (ssb-ebt.js)
  hypercore append 64 cores in a corestore, each message a block appended one
                   after another, until the corestore is closed
                   (hypercore-append.js)
  hypercore replicate
                   two corestores in two processes over a TCP socket with
                   Noise; timed from the connect until the sink holds every
                   block and its corestore is closed (hypercore-replicate.js)

"Closed" is where each peer's data is flushed: ssb-db2's log written out,
hypercore's storage (RocksDB) closed; ours commits each batch durably (fsync).
Each JS measurement is a node script printing one JSON line (messages, seconds,
msgs/s, store bytes on disk, signed bytes); this driver prints one table of
medians over --runs: msgs/s, the median of each run's ratio to our import and
to our catch-up, and the store's bytes on disk over the signed bytes (ours:
each message's wire bytes; ssb: each value as the JSON its signature covers;
hypercore: the blocks, which its tree's signed roots cover).

The peers come from the npm registry at the exact versions of
bench/peers/package.json and package-lock.json, installed into
bench/peers/node_modules on first use by

    (cd bench/peers && npm install --no-audit --no-fund)

Without node or npm, or when that install fails (no network), this says so in
one line and prints our figures alone.

    .venv/bin/python bench/peers/run.py [--messages 30000] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ingest import build_messages, time_import, write_bundle_file
from replication import catch_up, fill

from tanglenode.node.localnet import Node
from tanglenode.storage.engine.command_log import DEFAULT_KEEP_COMMANDS, LogRetention

PEERS = Path(__file__).resolve().parent
INSTALL = ["npm", "install", "--no-audit", "--no-fund"]
TIMEFRAME_FEEDS = 4
SCRIPT_TIMEOUT = 1800  # seconds a JS measurement may take
# (row label, script) in the order each run takes them
SCRIPTS = [
    ("ssb-db2 add (validate signed)", "ssb-add.js"),
    ("ssb-db2 create (publish)", "ssb-create.js"),
    ("ssb-ebt, two nodes", "ssb-ebt.js"),
    ("hypercore 11 append", "hypercore-append.js"),
    ("hypercore 11 replicate, Noise/TCP", "hypercore-replicate.js"),
]
VERSIONED = ["ssb-db2", "ssb-ebt", "secret-stack", "hypercore", "corestore"]


def peers_ready() -> str | None:
    """None once node and the pinned packages are there (installing them on first use),
    else the one line that says why the peers are left out."""
    if not shutil.which("node") or not shutil.which("npm"):
        return "peers skipped: node or npm is not installed; our figures alone"
    if (PEERS / "node_modules" / ".package-lock.json").exists():
        return None
    print(f"installing the peers: (cd bench/peers && {' '.join(INSTALL)})", flush=True)
    done = subprocess.run(INSTALL, cwd=PEERS, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        said = done.stderr.strip().splitlines() or ["no output"]
        why = next((line for line in said if line.startswith("npm error code")), said[-1])
        return f"peers skipped: npm install failed ({why}); our figures alone"
    return None


def versions() -> str:
    found = []
    for name in VERSIONED:
        manifest = PEERS / "node_modules" / name / "package.json"
        found.append(f"{name} {json.loads(manifest.read_text())['version']}")
    node = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False)
    return f"node {node.stdout.strip()}, " + ", ".join(found)


async def run_script(script: str, messages: int, seed: int, work: Path) -> dict:
    """One JS measurement in a fresh directory: its JSON line."""
    with trio.fail_after(SCRIPT_TIMEOUT):
        done = await trio.run_process(
            ["node", str(PEERS / script), "--messages", str(messages), "--seed", str(seed),
             "--dir", str(work)],
            cwd=PEERS, capture_stdout=True, check=True,
        )  # fmt: skip
    lines = done.stdout.decode().strip().splitlines()
    if not lines:
        raise SystemExit(f"{script} printed nothing")
    line = json.loads(lines[-1])
    if line["messages"] != messages:
        raise SystemExit(f"{script}: {line['messages']} of {messages} messages")
    return line


class Row:
    def __init__(self, label: str) -> None:
        self.label = label
        self.rates: list[float] = []
        self.store: list[int] = []
        self.signed = 0
        self.of_import: list[float] = []
        self.of_catch_up: list[float] = []


def print_table(rows: list[Row], messages: int, runs: int) -> None:
    print(f"\n{messages:,} messages, 64 feeds; medians of {runs} run{'s' * (runs > 1)}")
    head = (
        f"{'system':<36}{'msgs/s':>9}{'÷ import':>10}{'÷ catch-up':>12}"
        f"{'store MiB':>11}{'signed MiB':>12}{'store/signed':>14}{'signed B/msg':>14}"
    )
    print(head)
    for row in rows:
        store = statistics.median(row.store) if row.store else None
        print(
            f"{row.label:<36}{statistics.median(row.rates):>9,.0f}"
            f"{statistics.median(row.of_import):>10.2f}{statistics.median(row.of_catch_up):>12.2f}"
            + (f"{store / 2**20:>11.1f}" if store is not None else f"{'—':>11}")
            + f"{row.signed / 2**20:>12.1f}"
            + (f"{store / row.signed:>14.2f}" if store is not None else f"{'—':>14}")
            + f"{row.signed / messages:>14.0f}"
        )


async def run(args: argparse.Namespace) -> None:
    print(
        f"# {platform.machine()}, {os.cpu_count()} cores (shared with whatever else runs), "
        f"Python {platform.python_version()}"
    )
    skipped = peers_ready()
    print(skipped or f"# peers: {versions()}", flush=True)
    started = time.perf_counter()
    raws = build_messages(args.messages, 64, 256, args.seed, TIMEFRAME_FEEDS)
    signed = sum(map(len, raws))
    print(
        f"built {len(raws):,} messages of ours in {time.perf_counter() - started:.1f}s "
        f"(mean {signed / len(raws):.0f} bytes)",
        flush=True,
    )
    retention = LogRetention.keeping(DEFAULT_KEEP_COMMANDS)
    ours_import, ours_catch_up = Row("ours: tangled import"), Row("ours: catch-up, two nodes")
    ours_import.signed = ours_catch_up.signed = signed
    peers = [] if skipped else [(Row(label), script) for label, script in SCRIPTS]
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as tmp:
        root = Path(tmp)
        bundle = root / "bundle"
        write_bundle_file(raws, bundle)
        source = Node(root, "source")
        fill(source, raws)
        await source.start()
        try:
            for run_no in range(args.runs):
                rate = len(raws) / time_import(bundle, len(raws), retention, [])
                ours_import.rates.append(rate)
                seconds, sink_bytes = await catch_up(
                    root, source, len(raws), f"sink-{run_no}", "process"
                )
                ours_catch_up.rates.append(len(raws) / seconds)
                ours_catch_up.store.append(sink_bytes)
                shutil.rmtree(root / f"sink-{run_no}")
                done = [ours_import, ours_catch_up]
                for row, script in peers:
                    work = root / f"{script}-{run_no}"
                    line = await run_script(script, args.messages, args.seed, work)
                    row.rates.append(line["msgs_per_s"])
                    row.store.append(line["store_bytes"])
                    row.signed = line["signed_bytes"]
                    shutil.rmtree(work)
                    done.append(row)
                for row in done:
                    row.of_import.append(row.rates[-1] / ours_import.rates[-1])
                    row.of_catch_up.append(row.rates[-1] / ours_catch_up.rates[-1])
                print(
                    f"run {run_no + 1}: "
                    + ", ".join(f"{row.label} {row.rates[-1]:,.0f}/s" for row in done),
                    flush=True,
                )
        finally:
            await source.stop()
    print_table([ours_import, ours_catch_up, *(row for row, _ in peers)], len(raws), args.runs)
    print(
        "ours: store = the catch-up sink's data directory; signed = the messages' wire bytes."
        + ("" if skipped else " ssb: the values as signed JSON; hypercore: the blocks.")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=30_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    trio.run(run, parser.parse_args())


if __name__ == "__main__":
    main()
