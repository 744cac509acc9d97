"""Child process of the crash test: ingest batches forever-ish, announcing each commit.

Usage: python -m tests.storage.crash_writer STORE BATCHES FEEDS PER_FEED
It prints "committed K" after batch K is committed, then starts the next.
"""

import sys

from tanglenode.storage.store import FeedStore
from tests.factories import batches_for_crash_test


def main() -> None:
    path, batches, feeds, per_feed = sys.argv[1], *map(int, sys.argv[2:5])
    all_batches = batches_for_crash_test(batches, feeds, per_feed)
    print("ready", flush=True)
    with FeedStore(path, map_size=2**30) as store:
        for index, batch in enumerate(all_batches):
            store.writes.ingest(batch)
            print(f"committed {index}", flush=True)


if __name__ == "__main__":
    main()
