"""SIGKILL a process that is publishing batches: nothing acknowledged is lost, every batch
is whole or absent, and the own-head file never leads the store (so it publishes on).

The kill comes at a random moment within a batch's time after an acknowledgement
(the only way to land inside a write transaction without hooks in the store).
"""

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from tanglenode.storage.feeds.ownhead import read_own_head
from tanglenode.storage.store import FeedStore
from tests.factories import keypair

BATCHES, PER_BATCH = 60, 8
ROOT = Path(__file__).resolve().parents[2]
ME = keypair("crash-publisher")


def publish_until_killed(store: Path, acks: int, rng: random.Random) -> int:
    """Run the publisher until it acknowledged `acks` more batches, kill it inside the
    next one; the highest seq it acknowledged."""
    command = [sys.executable, "-m", "tests.storage.crash_publisher", str(store)]
    command += [str(BATCHES), str(PER_BATCH)]
    acked = 0
    with subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True) as child:
        try:
            assert child.stdout.readline().strip() == "ready"
            started = time.monotonic()
            for _ in range(acks):
                line = child.stdout.readline()
                assert line.startswith("acked "), f"publisher ended early: {line!r}"
                acked = int(line.split()[2])
            time.sleep(rng.uniform(0, (time.monotonic() - started) / acks))
            child.send_signal(signal.SIGKILL)
        finally:
            child.kill()
            child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    return acked


def test_a_killed_publisher_loses_nothing_it_acknowledged(tmp_path):
    rng = random.Random(20261124)
    store_path = tmp_path / "store"
    for acks in (3, 5, 4):
        acknowledged = publish_until_killed(store_path, acks, rng)
        with FeedStore(store_path, keypair=ME, create=False) as store:
            feed = store.feeds.read_feed(ME.public, limit=BATCHES * PER_BATCH)
            assert len(feed) >= acknowledged  # nothing acknowledged was lost
            assert len(feed) % PER_BATCH == 0  # whole batches only, the refusals left nothing
            assert [m.content for m in feed] == [
                [batch, i] for batch in range(len(feed) // PER_BATCH) for i in range(PER_BATCH)
            ]
            head = read_own_head(store.own_head_path)
            assert head.seq <= len(feed)  # never ahead of the store...
            assert head.seq >= len(feed) - PER_BATCH  # ...and behind by one batch at most
            assert store.feeds.check().ok
    with FeedStore(store_path, keypair=ME, create=False) as store:
        assert store.writes.publish("after the crashes").seq == len(feed) + 1  # not refused
