"""What listing tangles costs on a store holding many (`tangled tangles`, IPC `tangles`).

Fills a fresh store with N tangles (each rooted by one message, from 10
feeds; every 100th is a `group` tangle), then times, best of 5:

  page 100, page 1000   the first page of `store.tangles.tangle_page`
  name filter           a `name="group"` page: 20,000 names looked at, 1% kept
  walk                  every page of 1000, start to end (one figure)

A page reads a few rows per tangle and never counts the rest, so the first
three figures should not grow with N; the walk grows with it.

    .venv/bin/python bench/tangles.py --tangles 100000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tanglenode.protocol.identity import Keypair
from tanglenode.protocol.message import ROOT_LINK, sign_message
from tanglenode.storage.store import FeedStore

FEEDS = 10
BATCH = 2000


def fill(store: FeedStore, tangles: int) -> None:
    keys = [Keypair(bytes([index + 1]) * 32) for index in range(FEEDS)]
    heads: list[tuple[int, bytes | None]] = [(0, None)] * FEEDS
    batch: list[bytes] = []
    for index in range(tangles):
        which = index % FEEDS
        seq, prev = heads[which]
        name = "group" if index % 100 == 0 else "chat"
        message = sign_message(
            keys[which],
            seq=seq + 1,
            prev=prev,
            timestamp=1_700_000_000_000 + index,
            timeframe={},
            tangles={name: ROOT_LINK},
            content=index,
        )
        heads[which] = (seq + 1, message.id)
        batch.append(message.raw)
        if len(batch) == BATCH:
            store.writes.ingest(batch)
            batch = []
    store.writes.ingest(batch)


def best_ms(read, rounds: int = 5) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        read()
        best = min(best, time.perf_counter() - start)
    return best * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tangles", type=int, default=100_000)
    tangles = parser.parse_args().tangles
    with (
        tempfile.TemporaryDirectory() as directory,
        FeedStore(Path(directory) / "store", map_size=2**34) as store,
    ):
        fill(store, tangles)

        def walk() -> None:
            after = None
            while True:
                _page, after = store.tangles.tangle_page(after, 1000)
                if after is None:
                    return

        rows = [
            ("page 100", best_ms(lambda: store.tangles.tangle_page(None, 100))),
            ("page 1000", best_ms(lambda: store.tangles.tangle_page(None, 1000))),
            ("name filter", best_ms(lambda: store.tangles.tangle_page(None, 1000, name="group"))),
            ("walk", best_ms(walk, 1)),
        ]
    print(f"{tangles} tangles")
    for label, ms in rows:
        print(f"  {label:<12} {ms:9.2f} ms")


if __name__ == "__main__":
    main()
