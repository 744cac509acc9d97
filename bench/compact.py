"""`tangled compact`: our copy row by row against LMDB's compacting copy, time and size.

Builds a store as bench/ingest.py does (N messages of F feeds in T tangles, sparse
timeframes of 4 feeds, batches of 500, the default views), optionally with one popular
message that P others name (`--popular`: `tl-succ` then holds P duplicates under one
key), and then, on the same store, times:

  lmdb copy   LMDB's compacting copy (`env.copy(compact=True)`, `mdb_env_copy2` with
              `MDB_CP_COMPACT`, what `compact` wrote before issue 41) into a scratch
              directory, and the fsync of its file. It runs in a child process: on a
              store with a popular message LMDB 0.9.36 kills it with SIGSEGV, which is
              printed instead of a time
  our copy    `copy_rows` (storage/tools/compact.py) into a scratch directory, synced
  compact     the whole of `compact`: the store opened, its databases counted, the copy,
              its check, the rename

and prints each one's seconds and the size of the file it left, with the store's size
before. Medians over the rounds; the store is built once.

    .venv/bin/python bench/compact.py --messages 100000
    .venv/bin/python bench/compact.py --messages 30000 --popular 2000
"""

from __future__ import annotations

import argparse
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ingest import build_messages

from tanglenode.protocol.identity import Keypair
from tanglenode.protocol.message import ROOT_LINK, TangleLink, sign_message
from tanglenode.storage.feeds.layout import MAX_NAMED_DATABASES
from tanglenode.storage.store import DEFAULT_MAP_SIZE, FeedStore
from tanglenode.storage.tools.compact import compact, copy_rows, free_share

BATCH = 500

LMDB_COPY = """
import os, sys, time, lmdb
env = lmdb.open(sys.argv[1], readonly=True, lock=False, max_dbs=int(sys.argv[3]),
                map_size=int(sys.argv[4]))
started = time.perf_counter()
env.copy(sys.argv[2], compact=True)
descriptor = os.open(os.path.join(sys.argv[2], "data.mdb"), os.O_RDONLY)
os.fsync(descriptor)
print(time.perf_counter() - started)
"""


def popular_replies(count: int) -> list[bytes]:
    """A root and `count` replies to it from 20 new feeds, each naming the root alone."""
    authors = [Keypair(bytes([n]) * 32) for n in range(1, 22)]
    root = _signed(authors[0], 1, None, ROOT_LINK, "popular")
    link = TangleLink(root.id, (root.id,))
    heads: dict[bytes, tuple[int, bytes]] = {}
    replies = [root.raw]
    for n in range(count):
        author = authors[1 + n % 20]
        seq, prev = heads.get(author.public, (0, None))
        reply = _signed(author, seq + 1, prev, link, f"reply {n}")
        heads[author.public] = (seq + 1, reply.id)
        replies.append(reply.raw)
    return replies


def _signed(author: Keypair, seq: int, prev: bytes | None, link: TangleLink, text: str):
    return sign_message(
        author,
        seq=seq,
        prev=prev,
        timestamp=1_700_000_000_000 + seq,
        timeframe={},
        tangles={"popular": link},
        content={"type": "post", "text": text},
    )


def build_store(path: Path, raws: list[bytes]) -> None:
    with FeedStore(path, map_size=DEFAULT_MAP_SIZE) as store:
        for start in range(0, len(raws), BATCH):
            store.writes.ingest(raws[start : start + BATCH])


def time_lmdb_copy(store: Path, scratch: Path) -> tuple[float | None, int | str]:
    """Seconds and the copy's size, or None and how the child died."""
    scratch.mkdir()
    limits = (str(MAX_NAMED_DATABASES), str(DEFAULT_MAP_SIZE))
    done = subprocess.run(
        [sys.executable, "-c", LMDB_COPY, str(store), str(scratch), *limits],
        capture_output=True,
        text=True,
    )
    try:
        if done.returncode < 0:
            return None, f"killed by {signal.Signals(-done.returncode).name}"
        if done.returncode:
            return None, f"failed: {done.stderr.strip().splitlines()[-1]}"
        return float(done.stdout), (scratch / "data.mdb").stat().st_size
    finally:
        shutil.rmtree(scratch)


def time_our_copy(store: Path, scratch: Path) -> tuple[float, int]:
    scratch.mkdir()
    try:
        with FeedStore(store, create=False, map_size=DEFAULT_MAP_SIZE) as opened:
            started = time.perf_counter()
            copy_rows(opened.ctx.env, scratch, DEFAULT_MAP_SIZE)
            elapsed = time.perf_counter() - started
        return elapsed, (scratch / "data.mdb").stat().st_size
    finally:
        shutil.rmtree(scratch)


def time_compact(template: Path, store: Path) -> tuple[float, int]:
    """`compact` on a fresh copy of the store (it rewrites what it compacts)."""
    shutil.copytree(template, store)
    try:
        started = time.perf_counter()
        done = compact(store, DEFAULT_MAP_SIZE)
        return time.perf_counter() - started, done.after
    finally:
        shutil.rmtree(store)


def mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--feeds", type=int, default=64)
    parser.add_argument("--tangles", type=int, default=256)
    parser.add_argument("--popular", type=int, default=0, help="replies to one message")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    started = time.perf_counter()
    raws = build_messages(args.messages, args.feeds, args.tangles, args.seed, 4)
    raws += popular_replies(args.popular) if args.popular else []
    with tempfile.TemporaryDirectory(prefix="bench-compact-") as tmp:
        template = Path(tmp) / "store"
        build_store(template, raws)
        size = (template / "data.mdb").stat().st_size
        with FeedStore(template, create=False, map_size=DEFAULT_MAP_SIZE) as store:
            free = free_share(store.ctx.env)
        print(
            f"built and ingested {len(raws)} messages in {time.perf_counter() - started:.0f}s; "
            f"the store: {mib(size)}, {free:.0%} of it free pages"
        )
        results: dict[str, list[tuple[float | None, int | str]]] = {
            "lmdb copy": [],
            "our copy": [],
            "compact": [],
        }
        for _ in range(args.rounds):
            results["lmdb copy"].append(time_lmdb_copy(template, Path(tmp) / "lmdb-copy"))
            results["our copy"].append(time_our_copy(template, Path(tmp) / "our-copy"))
            results["compact"].append(time_compact(template, Path(tmp) / "compacted"))
        for name, runs in results.items():
            seconds = [elapsed for elapsed, _ in runs if elapsed is not None]
            left = runs[-1][1]
            if not seconds:
                print(f"  {name:<10} {left}")
                continue
            print(
                f"  {name:<10} {statistics.median(seconds):6.2f} s  "
                f"(rounds: {', '.join(f'{s:.2f}' for s in seconds)})  -> {mib(left)}"
            )


if __name__ == "__main__":
    main()
