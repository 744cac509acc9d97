"""What a timeline digest costs after one appended message: the full pass against the resumed one.

Builds a store of N sparse messages (bench/ingest.py's workload: 64 feeds,
256 tangles, at most 4 timeframe feeds), asks for the spacetime's digest
once (the cache and its checkpoints filled), then, alternating per round:

  resumed  ingest the workload's next message, then time
           `store.digests.timeline_digest(SPACETIME)` with the cache as the
           last digest left it: the log since, the last chunk re-hashed
           (storage/views/digest.py)
  full     ingest the next message, empty the digest cache
           (`store.digests.forget()`), then time the same call: the full pass
           over the order tree, what every digest after a change cost before
           checkpoints

and the same two for `store.digests.timeline_digests(32)`, what `tangled
status` asks (the spacetime and 32 tangles; a message changes its tangle
too, of a few hundred entries: a full pass either way). Every resumed
digest is checked against a full pass of the same version, and every timed
call against the cache's count of passes (a "full" one resumed nothing, a
"resumed" one resumed). Prints the median and range of each over the rounds,
and their ratio.

    .venv/bin/python bench/digest.py --messages 100000 --rounds 15
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ingest import build_messages

from tanglenode.storage.store import FeedStore
from tanglenode.storage.views.timelines import SPACETIME


def timed(call) -> tuple[float, object]:
    started = time.perf_counter()
    found = call()
    return (time.perf_counter() - started) * 1000, found


def timed_pass(store: FeedStore, call, resumed: bool) -> tuple[float, object]:
    """`timed(call)`, checked to have resumed from the cache or not, as `resumed` says."""
    before = store.digests.cache.passes["resumed"]
    elapsed, found = timed(call)
    if (store.digests.cache.passes["resumed"] > before) != resumed:
        raise SystemExit(f"a pass meant to {'resume' if resumed else 'be full'} was not")
    return elapsed, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--seed", type=int, default=16)
    args = parser.parse_args()
    print(f"{platform.machine()}, Python {platform.python_version()}, {os.cpu_count()} cores")
    raws = build_messages(args.messages + 4 * args.rounds, 64, 256, args.seed, timeframe_feeds=4)
    later = iter(raws[args.messages :])
    times: dict[str, list[float]] = {
        "spacetime resumed": [],
        "spacetime full": [],
        "status resumed": [],
        "status full": [],
    }
    with (
        tempfile.TemporaryDirectory(prefix="bench-digest-") as tmp,
        FeedStore(Path(tmp) / "store") as store,
    ):
        for start in range(0, args.messages, 2000):
            store.writes.ingest(raws[start : min(start + 2000, args.messages)])
        print(f"{args.messages} messages stored; spacetime digest, first pass: ", end="")
        print(f"{timed(lambda: store.digests.timeline_digest(SPACETIME))[0]:.1f} ms")
        store.digests.timeline_digests(32)
        for _round in range(args.rounds):
            for what, call in (
                ("spacetime", lambda: store.digests.timeline_digest(SPACETIME)),
                ("status", lambda: store.digests.timeline_digests(32)),
            ):
                store.writes.ingest([next(later)])
                elapsed, found = timed_pass(store, call, resumed=True)
                times[f"{what} resumed"].append(elapsed)
                store.digests.forget()
                if what == "spacetime" and store.digests.timeline_digest(SPACETIME) != found:
                    raise SystemExit("the resumed digest differs from the full pass")
                store.writes.ingest([next(later)])
                store.digests.forget()
                times[f"{what} full"].append(timed_pass(store, call, resumed=False)[0])
                store.digests.timeline_digests(32)  # fill the cache again: the next one resumes
    for what in ("spacetime", "status"):
        resumed, full = times[f"{what} resumed"], times[f"{what} full"]
        for label, values in (("full", full), ("resumed", resumed)):
            print(
                f"{what:9} {label:8} median {statistics.median(values):7.2f} ms"
                f" ({min(values):.2f}-{max(values):.2f})"
            )
        print(
            f"{what:9} full / resumed: {statistics.median(full) / statistics.median(resumed):.1f}x"
        )


if __name__ == "__main__":
    main()
