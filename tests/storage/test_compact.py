"""`compact`: the store without its free pages holds exactly what it held, in a smaller file."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tanglenode.storage.errors import StorageError, StoreDamaged
from tanglenode.storage.registry import view_names
from tanglenode.storage.reindex import contents, reindex
from tanglenode.storage.store import FeedStore
from tanglenode.storage.tools import compact as compact_module
from tanglenode.storage.tools.compact import SCRATCH, StoreInUse, compact, entry_counts
from tests.factories import ALL_VIEWS, Feed

MAP_SIZE = 2**28


def churned(path) -> None:
    """A store whose file holds many free pages: messages in many small batches, then every
    derived view thrown away and rebuilt (their old pages freed)."""
    feeds = [Feed(f"compact-{n}") for n in range(4)]
    with FeedStore(path, map_size=MAP_SIZE, views=ALL_VIEWS) as store:
        for round_no in range(150):
            batch = [
                feed.append({"type": "post", "text": f"{round_no} " + "x" * 200}).raw
                for feed in feeds
            ]
            store.writes.ingest(batch)
        reindex(store.ctx, store.views, view_names())


def held(path) -> tuple[dict, dict, list]:
    with FeedStore(path, create=False, map_size=MAP_SIZE, views=ALL_VIEWS) as store:
        raws = list(store.feeds.iter_raw())
        return contents(store.ctx, store.views), entry_counts(store.ctx.env), raws


def test_compacting_shrinks_the_file_and_keeps_every_row(tmp_path):
    path = tmp_path / "store"
    churned(path)
    before = held(path)
    done = compact(path, MAP_SIZE)
    assert done.after < done.before and done.freed == done.before - done.after
    assert (path / "data.mdb").stat().st_size == done.after
    assert held(path) == before
    with FeedStore(path, create=False, map_size=MAP_SIZE, views=ALL_VIEWS) as store:
        assert store.feeds.check().ok
        store.writes.ingest([Feed("after").append({"type": "post", "text": "still writes"}).raw])
        assert len(list(store.feeds.iter_raw())) == len(before[2]) + 1
    assert not (path / SCRATCH).exists()


def test_a_run_cut_short_leaves_a_scratch_directory_the_next_run_removes(tmp_path):
    path = tmp_path / "store"
    churned(path)
    (path / SCRATCH).mkdir()
    (path / SCRATCH / "data.mdb").write_bytes(b"half a copy")
    before = held(path)
    compact(path, MAP_SIZE)
    assert held(path) == before
    assert not (path / SCRATCH).exists()


def test_a_copy_that_differs_leaves_the_store_as_it_was(tmp_path, monkeypatch):
    path = tmp_path / "store"
    churned(path)
    size = (path / "data.mdb").stat().st_size
    counts = iter([None, {b"": 0}])  # the original's counts, then a copy that lost everything

    def miscounted(env):
        found = next(counts)
        return entry_counts(env) if found is None else found

    monkeypatch.setattr(compact_module, "entry_counts", miscounted)
    with pytest.raises(
        StoreDamaged, match=r"the compacted copy differs in .*the store is unchanged"
    ):
        compact(path, MAP_SIZE)
    assert (path / "data.mdb").stat().st_size == size
    assert not (path / SCRATCH).exists()


HOLDER = """
import sys
from tanglenode.storage.store import FeedStore
with FeedStore(sys.argv[1], create=False, map_size=int(sys.argv[2])) as store:
    print(len(list(store.feeds.iter_raw())), flush=True)
    sys.stdin.read()  # holds the store open until the test closes our stdin
"""


def test_compacting_while_another_process_has_the_store_open_is_refused(tmp_path):
    """The other process shares `lock.mdb`; a new file beside it would be read with a stale
    transaction number (the copy's empty meta page): refused, the store left as it was."""
    path = tmp_path / "store"
    churned(path)
    before = held(path)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path), str(MAP_SIZE)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert int(holder.stdout.readline()) == len(before[2])  # it has the store open
        with pytest.raises(StoreInUse, match="another process has the store open"):
            compact(path, MAP_SIZE)
    finally:
        holder.communicate("", timeout=60)
    assert held(path) == before
    assert not (path / SCRATCH).exists()
    compact(path, MAP_SIZE)  # alone now
    assert held(path) == before


def test_whatever_stands_at_the_scratch_name_is_cleared_and_a_failed_copy_is_one_error(
    tmp_path, monkeypatch
):
    path = tmp_path / "store"
    churned(path)
    (path / SCRATCH).write_text("a file where the scratch directory goes")
    before = held(path)
    compact(path, MAP_SIZE)
    assert held(path) == before

    def no_space(path):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(compact_module, "_fsync", no_space)  # the copy's last step
    with pytest.raises(StorageError, match=r"cannot write the compacted copy.*unchanged"):
        compact(path, MAP_SIZE)
    assert not (path / SCRATCH).exists()
    monkeypatch.undo()
    assert held(path) == before
