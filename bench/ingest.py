"""Ingest throughput against the physical limit: bare Ed25519 verification.

Builds N pre-signed messages from F feeds (random interleaving; every
message's timeframe is the frontier of the other feeds, as a node writes
it; each message sits in one of T tangles with `previous` = that tangle's
tips), then, in the same run and alternating, times:

  verify  nacl.bindings.crypto_sign_open over the same messages
          (signature + payload extracted beforehand, outside the timer)
  ingest  FeedStore.ingest in batches into a fresh LMDB store on disk
          (decode, canonical check, signature, chain, indexes, commit)

and prints msgs/s for each (medians over the rounds) and the ingest/verify
ratio of each round, whose median is the headline: the machine's speed
drifts, and within a round both are timed back to back.

    .venv/bin/python bench/ingest.py [--messages 100000] [--feeds 64] ...
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import msgpack
from nacl.bindings import crypto_sign_open

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tanglenode.protocol.identity import Keypair
from tanglenode.protocol.message import ROOT_LINK, TangleLink, decode_message, sign_message
from tanglenode.storage.store import FeedStore


def build_messages(
    count: int, feeds: int, tangles: int, seed: int, timeframe_feeds: int | None = None
) -> list[bytes]:
    """`timeframe_feeds` caps each timeframe at that many other feeds (None: all of them)."""
    rng = random.Random(seed)
    keys = [Keypair(rng.randbytes(32)) for _ in range(feeds)]
    heads: dict[bytes, tuple[int, bytes]] = {}
    tips: dict[int, tuple[bytes, set[bytes]]] = {}  # tangle -> (root id, tips)
    raws = []
    for _ in range(count):
        author = rng.choice(keys)
        seq, prev = heads.get(author.public, (0, None))
        tangle = rng.randrange(tangles)
        if tangle in tips:
            root, current = tips[tangle]
            link = TangleLink(root, tuple(sorted(current)[:16]))
        else:
            link = ROOT_LINK
        timeframe = {feed: s for feed, (s, _) in heads.items() if feed != author.public}
        if timeframe_feeds is not None and len(timeframe) > timeframe_feeds:
            kept = rng.sample(sorted(timeframe), timeframe_feeds)
            timeframe = {feed: timeframe[feed] for feed in kept}
        message = sign_message(
            author,
            seq=seq + 1,
            prev=prev,
            timestamp=1_700_000_000_000 + len(raws),
            timeframe=timeframe,
            tangles={f"t{tangle}": link},
            content={"type": "post", "text": "x" * rng.randrange(20, 200)},
        )
        heads[author.public] = (seq + 1, message.id)
        if link.is_root:
            tips[tangle] = (message.id, {message.id})
        else:
            tips[tangle] = (link.root, (tips[tangle][1] - set(link.previous)) | {message.id})
        raws.append(message.raw)
    return raws


def time_bare_verify(raws: list[bytes]) -> float:
    jobs = []  # (signature + payload, author), prepared outside the timer
    for raw in raws:
        fields = msgpack.unpackb(raw)
        jobs.append((fields[8] + msgpack.packb(fields[:8]), fields[1]))
    started = time.perf_counter()
    for signed, author in jobs:
        crypto_sign_open(signed, author)
    return time.perf_counter() - started


def time_decode(raws: list[bytes]) -> float:
    """Full validation, signature included, with no store: ingest minus storage."""
    started = time.perf_counter()
    for raw in raws:
        decode_message(raw)
    return time.perf_counter() - started


def time_ingest(raws: list[bytes], batch: int) -> tuple[float, int]:
    with (
        tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp,
        FeedStore(Path(tmp) / "store") as store,
    ):
        started = time.perf_counter()
        accepted = 0
        for start in range(0, len(raws), batch):
            results = store.ingest(raws[start : start + batch])
            accepted += sum(r.outcome == "accepted" for r in results)
        elapsed = time.perf_counter() - started
        size = store.statistics()["bytes_on_disk"]
    if accepted != len(raws):
        raise SystemExit(f"only {accepted} of {len(raws)} messages were accepted")
    return elapsed, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--feeds", type=int, default=64)
    parser.add_argument("--tangles", type=int, default=256)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--timeframe-feeds",
        type=int,
        default=None,
        help="cap each timeframe at this many feeds (default: the full frontier, feeds - 1)",
    )
    args = parser.parse_args()

    started = time.perf_counter()
    raws = build_messages(args.messages, args.feeds, args.tangles, args.seed, args.timeframe_feeds)
    mean_size = sum(map(len, raws)) / len(raws)
    print(f"machine: {platform.machine()}, Python {platform.python_version()}, one process")
    built_in = time.perf_counter() - started
    print(
        f"built {len(raws)} messages from {args.feeds} feeds in {built_in:.1f}s"
        f" (mean {mean_size:.0f} bytes, timeframes of "
        f"{args.timeframe_feeds or args.feeds - 1} feeds at most); "
        f"batches of {args.batch}; {args.rounds} rounds"
    )
    verify_rates, decode_rates, ingest_rates = [], [], []
    for round_number in range(1, args.rounds + 1):
        verify_rates.append(len(raws) / time_bare_verify(raws))
        decode_rates.append(len(raws) / time_decode(raws))
        elapsed, size = time_ingest(raws, args.batch)
        ingest_rates.append(len(raws) / elapsed)
        print(
            f"round {round_number}: verify {verify_rates[-1]:,.0f} msgs/s, "
            f"decode {decode_rates[-1]:,.0f} msgs/s, "
            f"ingest {ingest_rates[-1]:,.0f} msgs/s, store {size / 2**20:.0f} MiB"
        )
    verify, decode, ingest = (
        statistics.median(rates) for rates in (verify_rates, decode_rates, ingest_rates)
    )
    print(f"bare PyNaCl verify   (median): {verify:,.0f} msgs/s  {1e6 / verify:5.1f} us/msg")
    print(f"decode_message       (median): {decode:,.0f} msgs/s  {1e6 / decode:5.1f} us/msg")
    print(f"FeedStore.ingest     (median): {ingest:,.0f} msgs/s  {1e6 / ingest:5.1f} us/msg")
    ratios = [i / v for i, v in zip(ingest_rates, verify_rates, strict=True)]
    print("per-round ratio ingest/verify: " + ", ".join(f"{r:.1%}" for r in ratios))
    print(f"ratio ingest/verify (median of rounds): {statistics.median(ratios):.1%} (goal >= 80%)")


if __name__ == "__main__":
    main()
