"""Child process of the publish crash test: publish batches forever-ish, announcing each.

Usage: python -m tests.storage.crash_publisher STORE BATCHES PER_BATCH
Each batch is PER_BATCH good requests `[batch, i]` and one refused one (an
unknown tangle); "acked K SEQ" is printed once `publish_batch` returned batch K,
whose last message has SEQ. Batches continue from what the store holds.
"""

import sys

from tanglenode.storage.store import FeedStore
from tests.factories import keypair

ME = keypair("crash-publisher")


def main() -> None:
    path, batches, per_batch = sys.argv[1], *map(int, sys.argv[2:4])
    with FeedStore(path, keypair=ME, map_size=2**30) as store:
        done = store.feeds.frontier().get(ME.public, 0) // per_batch
        print("ready", flush=True)
        for batch in range(done, batches):
            requests = [([batch, i], None) for i in range(per_batch)]
            requests.insert(per_batch // 2, ("refused", {"chat": bytes(32)}))
            results = store.writes.publish_batch(requests)
            print(f"acked {batch} {results[-1].seq}", flush=True)


if __name__ == "__main__":
    main()
