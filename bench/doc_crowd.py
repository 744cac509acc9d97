"""A crowd typing at one place: N feeds each insert one character right after a document's
root, none aware of the others (N concurrent siblings), against N plain posts.

Each round builds the messages (signed outside the timing), then times `store.writes.ingest`
of all of them into a fresh on-disk store, in batches of 500, for the crowd and for as many
plain posts of as many feeds; prints both with their ratio (the same round: the machine's
speed drifts) and the goal: the crowd within 3x the posts (placing a sibling among N costs
O(log N), docs/DOCUMENTS.md "Engine").

    .venv/bin/python bench/doc_crowd.py [--siblings 16000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tanglenode.protocol.document import TANGLE, AtomRef, Insert, edit_content, init_content
from tanglenode.protocol.identity import Keypair
from tanglenode.protocol.message import ROOT_LINK, TangleLink, sign_message
from tanglenode.storage.store import FeedStore

GOAL = 3.0
SLICE_GOAL = 2.0  # another message waits for a document's work one slice, never a backlog
BATCH = 500


def crowd(count: int) -> tuple[list[bytes], list[bytes]]:
    """The doc/init and `count` edits of `count` feeds, each 'x' after the root; and as many
    plain posts of as many feeds, for the comparison."""

    def sign(keypair, content, tangles, timeframe):
        return sign_message(
            keypair,
            seq=1,
            prev=None,
            timestamp=1_700_000_000_000,
            timeframe=timeframe,
            tangles=tangles,
            content=content,
        )

    creator = Keypair.generate()
    init = sign(creator, init_content("crowd"), {TANGLE: ROOT_LINK}, {})
    link = {TANGLE: TangleLink(init.id, (init.id,))}
    edits, posts = [init.raw], []
    for number in range(count):
        author = Keypair.generate()
        content = edit_content([Insert(AtomRef(init.id, 0), "x")])
        timeframe = {creator.public: (1, init.id[:16])}
        edits.append(sign(author, content, link, timeframe).raw)
        posts.append(sign(author, {"type": "post", "n": number}, {}, {}).raw)
    return edits, posts


def timed_ingest(raws: list[bytes]) -> tuple[float, float, float]:
    """The time to ingest `raws` as the node does (each batch, then the documents' backlog
    a slice a transaction), the longest batch's transaction and the longest slice of
    weaving: how long another message waits for the writer at most."""
    with (
        tempfile.TemporaryDirectory() as directory,
        FeedStore(Path(directory) / "store", map_size=2**32) as store,
    ):
        longest = weaving = 0.0
        began = time.perf_counter()
        for start in range(0, len(raws), BATCH):
            batch = store.writes.prepare(raws[start : start + BATCH])
            one = time.perf_counter()
            store.writes.ingest_prepared(batch, weave=False)
            longest = max(longest, time.perf_counter() - one)
            while True:
                one = time.perf_counter()
                remaining = store.writes.weave_backlog()
                weaving = max(weaving, time.perf_counter() - one)
                if not remaining:
                    break
        return time.perf_counter() - began, longest, weaving


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--siblings", type=int, default=16_000)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    print(f"machine: {platform.machine()}, Python {platform.python_version()}")
    edits, posts = crowd(options.siblings)
    ratios, crowd_times, post_times, longest = [], [], [], []
    for number in range(options.rounds):
        (crowd_time, crowd_longest, weaving), (post_time, post_longest, _) = (
            timed_ingest(edits),
            timed_ingest(posts),
        )
        crowd_times.append(crowd_time)
        post_times.append(post_time)
        ratios.append(crowd_time / post_time)
        longest.append(weaving / post_longest)
        print(
            f"round {number + 1}: crowd {crowd_time:.2f} s, posts {post_time:.2f} s; the longest"
            f" batch transaction: crowd {crowd_longest * 1000:.0f} ms, posts"
            f" {post_longest * 1000:.0f} ms; the longest slice of weaving {weaving * 1000:.0f} ms"
        )
    ratio = statistics.median(ratios)
    verdict = "met" if ratio <= GOAL else "MISSED"
    print(
        f"{options.siblings} siblings: {statistics.median(crowd_times):.2f} s, "
        f"{options.siblings} posts: {statistics.median(post_times):.2f} s "
        f"(medians of {options.rounds}); crowd / posts {ratio:.2f}x, goal <= {GOAL}x: {verdict}"
    )
    slice_ratio = statistics.median(longest)
    print(
        f"the longest slice of weaving / the longest {BATCH}-post batch: {slice_ratio:.2f}x, "
        f"goal <= {SLICE_GOAL}x: " + ("met" if slice_ratio <= SLICE_GOAL else "MISSED")
    )


if __name__ == "__main__":
    main()
