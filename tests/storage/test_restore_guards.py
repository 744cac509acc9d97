"""The own-feed head file and the data-dir lock, with real stores and real processes."""

import json
import shutil
import signal
import subprocess
import sys

import pytest

from tanglenode.storage.errors import DataDirInUse, OwnFeedBehind, StorageError
from tanglenode.storage.feeds.datalock import DataDirLock, lock_holder
from tanglenode.storage.feeds.ownhead import head_path, read_own_head
from tanglenode.storage.store import FeedStore
from tests.factories import keypair

ME = keypair("me")


def open_store(path):
    return FeedStore(path, keypair=ME, map_size=64 * 2**20)


def test_each_publish_records_our_head_beside_the_store(tmp_path):
    with open_store(tmp_path / "store") as store:
        assert read_own_head(store.own_head_path) is None
        for number in range(3):
            message = store.writes.publish({"n": number})
            head = read_own_head(store.own_head_path)
            assert (head.feed, head.seq, head.id) == (ME.public, message.seq, message.id)
    assert head_path(tmp_path / "store") == tmp_path / "store.own-head"  # outside the store dir
    assert not list(tmp_path.glob("*.tmp"))


def test_a_store_restored_from_an_old_copy_refuses_to_publish_until_caught_up(tmp_path):
    live, old = tmp_path / "store", tmp_path / "old"
    with open_store(live) as store:
        store.writes.publish("one")
        shutil.copytree(live, old)
        later = [store.writes.publish("two").raw, store.writes.publish("three").raw]
    shutil.rmtree(live)
    shutil.copytree(old, live)
    with open_store(live) as store:
        with pytest.raises(OwnFeedBehind, match="up to seq 1, but we published up to seq 3"):
            store.writes.publish("a fork of seq 2")
        assert store.feeds.frontier()[ME.public] == 1  # nothing was written
        store.writes.ingest(later[:1])  # fetched back in part: still behind
        with pytest.raises(OwnFeedBehind):
            store.writes.publish("a fork of seq 3")
        store.writes.ingest(later[1:])
        assert store.writes.publish("four").seq == 4
        assert store.feeds.check().ok


def test_a_wiped_store_refuses_too(tmp_path):
    with open_store(tmp_path / "store") as store:
        store.writes.publish("one")
    shutil.rmtree(tmp_path / "store")
    with open_store(tmp_path / "store") as store, pytest.raises(OwnFeedBehind):
        store.writes.publish("would be seq 1 again")


def test_another_feeds_head_file_does_not_block(tmp_path):
    with open_store(tmp_path / "store") as store:
        store.writes.publish("one")
    with FeedStore(tmp_path / "store", keypair=keypair("other")) as store:
        assert store.writes.publish("mine").seq == 1


@pytest.mark.parametrize("text", ["{not json", '{"feed": "@x", "seq": 1, "id": "%y"}', "[]"])
def test_a_damaged_head_file_stops_publishing_with_a_clear_error(tmp_path, text):
    with open_store(tmp_path / "store") as store:
        store.writes.publish("one")
        store.own_head_path.write_text(text)
        with pytest.raises(StorageError, match=r"own-feed head file .* is unreadable"):
            store.writes.publish("two")


def test_a_second_lock_is_refused_naming_the_holder(tmp_path):
    with DataDirLock(tmp_path, "run") as held:
        assert held.held
        assert lock_holder(held.path)[1] == "run"
        with pytest.raises(DataDirInUse, match=r"in use by process \d+ \(tangled run\)") as refused:
            DataDirLock(tmp_path, "import").acquire()
        assert refused.value.purpose == "run"
    with DataDirLock(tmp_path, "import"):  # released: free again
        pass


LOCKER = """
import sys
from tanglenode.storage.feeds.datalock import DataDirLock
DataDirLock(sys.argv[1], "run").acquire()
print("locked", flush=True)
sys.stdin.read()
"""


@pytest.mark.parametrize("how", ["kill -9", "exit"])
def test_a_lock_dies_with_its_process(tmp_path, how):
    with subprocess.Popen(
        [sys.executable, "-c", LOCKER, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as child:
        assert child.stdout.readline() == "locked\n"
        with pytest.raises(DataDirInUse) as refused:
            DataDirLock(tmp_path, "import").acquire()
        assert refused.value.pid == child.pid
        if how == "kill -9":
            child.send_signal(signal.SIGKILL)
        else:
            child.stdin.close()
        child.wait(timeout=30)
    assert lock_holder(tmp_path / "tangled.lock")[0] in (child.pid, None)  # file stays
    with DataDirLock(tmp_path, "run") as lock:  # but not the lock
        assert lock_holder(lock.path)[0] != child.pid


def test_head_file_json_names_feed_seq_and_id(tmp_path):
    with open_store(tmp_path / "store") as store:
        message = store.writes.publish("one")
    record = json.loads((tmp_path / "store.own-head").read_text())
    assert record["seq"] == 1 and record["id"].startswith("%") and record["feed"] == ME.feed_id
    assert message.seq == 1
