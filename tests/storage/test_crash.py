"""SIGKILL a process that is ingesting batches: every batch is wholly present or wholly absent.

The kill comes at a random moment within a batch's time after a commit was
announced (the only way to land inside a write transaction without hooks in
the store); each round reopens the same store, so recovery is exercised too.
"""

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tanglenode.protocol.identity import message_id
from tanglenode.storage.store import FeedStore
from tests.factories import batches_for_crash_test

BATCHES, FEEDS, PER_FEED = 40, 16, 16
ROOT = Path(__file__).resolve().parents[2]


def run_until_killed(store: Path, after_commit: int, rng: random.Random) -> int:
    """Start a writer, kill it during the batch after `after_commit`; return commits seen."""
    command = [sys.executable, "-m", "tests.storage.crash_writer", str(store)]
    command += [str(BATCHES), str(FEEDS), str(PER_FEED)]
    with subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True) as child:
        try:
            assert child.stdout.readline().strip() == "ready"
            committed, started = -1, time.monotonic()
            while committed < after_commit:
                line = child.stdout.readline()
                assert line.startswith("committed "), f"writer ended early: {line!r}"
                committed = int(line.split()[1])
            per_batch = (time.monotonic() - started) / (committed + 1)
            time.sleep(rng.uniform(0, per_batch))  # a random instant inside the next batch
            child.send_signal(signal.SIGKILL)
        finally:
            child.kill()
            child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    return committed


@pytest.mark.parametrize(
    "seed, kill_points",
    [
        (20261122, (2, 9, 17, 30)),
        pytest.param(7, tuple(range(0, BATCHES - 1, 2)), marks=pytest.mark.slow),
    ],
    ids=["4 kills", "20 kills"],
)
def test_killed_writer_leaves_every_batch_whole(tmp_path, seed, kill_points):
    rng = random.Random(seed)
    batches = batches_for_crash_test(BATCHES, FEEDS, PER_FEED)
    store_path = tmp_path / "store"
    announced = -1
    for after_commit in kill_points:
        announced = max(announced, run_until_killed(store_path, after_commit, rng))
        with FeedStore(store_path, create=False) as store:
            present = [
                sum(store.feeds.get(message_id(raw)) is not None for raw in batch)
                for batch in batches
            ]
            assert all(count in (0, FEEDS * PER_FEED) for count in present), present
            complete = sum(1 for count in present if count)
            assert present[:complete] == [FEEDS * PER_FEED] * complete  # a prefix of batches
            assert complete >= announced + 1  # nothing acknowledged was lost
            report = store.feeds.check()
            assert report.ok, report.problems
