"""`compact`: the store without its free pages holds exactly what it held, in a smaller file,
and passes `check`; every database keeps its flags, and a message named by 2,000 others (a
key of 2,000 duplicates in the DUPSORT+DUPFIXED `tl-succ`) compacts like any other."""

from __future__ import annotations

import signal
import subprocess
import sys

import lmdb
import pytest

from tanglenode.protocol.message import TangleLink
from tanglenode.storage.errors import StorageError, StoreDamaged
from tanglenode.storage.registry import view_names
from tanglenode.storage.reindex import contents, reindex
from tanglenode.storage.store import FeedStore
from tanglenode.storage.tools import compact as compact_module
from tanglenode.storage.tools.compact import (
    SCRATCH,
    DatabaseShape,
    StoreInUse,
    compact,
    copy_rows,
    database_shapes,
    free_share,
)
from tests.factories import ALL_VIEWS, Feed

MAP_SIZE = 2**28
DUPSORT, DUPFIXED = 0x04, 0x10  # LMDB's flags (lmdb.h)


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
    """What the store holds (every view's rows, every database's flags and entries, the
    messages), once `check` has passed on it."""
    with FeedStore(path, create=False, map_size=MAP_SIZE, views=ALL_VIEWS) as store:
        report = store.feeds.check()
        assert report.ok, report.problems
        raws = list(store.feeds.iter_raw())
        return contents(store.ctx, store.views), database_shapes(store.ctx.env), raws


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
    shapes = iter([None, {b"": DatabaseShape(0, 0)}])  # the original's, then a copy that lost all

    def miscounted(env):
        found = next(shapes)
        return database_shapes(env) if found is None else found

    monkeypatch.setattr(compact_module, "database_shapes", miscounted)
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


COMPACT = """
import sys
from pathlib import Path
from tanglenode.storage.tools.compact import compact
done = compact(Path(sys.argv[1]), int(sys.argv[2]))
print(done.before, done.after)
"""


def compacted_apart(path) -> tuple[int, int]:
    """`compact` in a child process, so that a crash in it (LMDB's compacting copy died of
    SIGSEGV here, issue 41) fails the test with its exit code instead of killing pytest."""
    done = subprocess.run(
        [sys.executable, "-c", COMPACT, str(path), str(MAP_SIZE)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    died = f"killed by {signal.Signals(-done.returncode).name}" if done.returncode < 0 else ""
    assert done.returncode == 0, f"compact exited {done.returncode} {died}: {done.stderr[-2000:]}"
    before, after = map(int, done.stdout.split())
    return before, after


def popular(path, replies: int) -> None:
    """A store where `replies` messages of 20 feeds each name one root, in batches of 20 (the
    file keeps free pages); `tl-succ` holds `replies` duplicates under the root in each
    timeline the replies join."""
    root = Feed("popular-root").root("chat", {"type": "post", "text": "a popular post"})
    feeds = [Feed(f"popular-{n}") for n in range(20)]
    link = TangleLink(root.id, (root.id,))
    with FeedStore(path, map_size=MAP_SIZE, views=ALL_VIEWS) as store:
        store.writes.ingest([root.raw])
        for round_no in range(replies // len(feeds)):
            store.writes.ingest(
                [
                    feed.append(
                        {"type": "post", "text": f"reply {round_no}"}, tangles={"chat": link}
                    ).raw
                    for feed in feeds
                ]
            )


def most_duplicates(path, name: bytes) -> int:
    """The most duplicates any one key of the named database holds."""
    env = lmdb.open(str(path), readonly=True, lock=False, max_dbs=64, map_size=MAP_SIZE)
    try:
        with env.begin() as txn:
            cursor = txn.cursor(env.open_db(name, txn=txn, create=False))
            most = 0
            for _key in cursor.iternext_nodup(values=False):
                most = max(most, cursor.count())
            return most
    finally:
        env.close()


def test_a_message_named_by_two_thousand_others_compacts_and_checks(tmp_path):
    """Issue 41: `tl-succ` (DUPSORT+DUPFIXED) with 2,000 duplicates under one key."""
    path = tmp_path / "store"
    popular(path, 2000)
    assert most_duplicates(path, b"tl-succ") == 2000
    before = held(path)
    assert before[1][b"tl-succ"].flags == DUPSORT | DUPFIXED
    with FeedStore(path, create=False, map_size=MAP_SIZE) as store:
        assert free_share(store.ctx.env) > 0.2  # the batches left free pages to give back
    size, after = compacted_apart(path)
    assert after < size
    assert (path / "data.mdb").stat().st_size == after
    assert held(path) == before  # checked; every row, flag and entry count as before
    assert most_duplicates(path, b"tl-succ") == 2000
    assert not (path / SCRATCH).exists()


# Every flag LMDB keeps that py-lmdb sets, alone and together, with rows that need each.
KINDS = {
    b"plain": {},
    b"reverse": {"reverse_key": True},
    b"integer": {"integerkey": True},
    b"dups": {"dupsort": True},
    b"fixed-dups": {"dupsort": True, "dupfixed": True},
    b"integer-dups": {"dupsort": True, "dupfixed": True, "integerdup": True},
    b"all": {
        "reverse_key": True,
        "dupsort": True,
        "dupfixed": True,
        "integerdup": True,
    },
    b"empty": {"dupsort": True},
}


def rows_of(name: bytes) -> list[tuple[bytes, bytes]]:
    if name == b"empty":
        return []
    if name == b"integer":
        return [(n.to_bytes(8, sys.byteorder), b"v" * (n % 300)) for n in range(3000)]
    if name in (b"plain", b"reverse"):
        return [(b"key %05d" % n, b"v" * (n % 300)) for n in range(3000)]
    # 2,000 duplicates under one key (what crashed LMDB's compacting copy), and a few more keys
    values = [n.to_bytes(4, sys.byteorder) for n in range(2000)]
    return [(b"popular", value) for value in values] + [
        (b"key %d" % n, value) for n in range(50) for value in values[:3]
    ]


def every_kind(path) -> lmdb.Environment:
    env = lmdb.open(str(path), max_dbs=16, map_size=MAP_SIZE)
    for name, flags in KINDS.items():
        database = env.open_db(name, **flags)
        with env.begin(write=True, db=database) as txn:
            for key, value in rows_of(name):
                txn.put(key, value)
    return env


def read_back(env: lmdb.Environment) -> dict[bytes, list[tuple[bytes, bytes]]]:
    """Each database's rows in its own order."""
    with env.begin() as txn:
        return {name: list(txn.cursor(env.open_db(name, txn=txn, create=False))) for name in KINDS}


@pytest.mark.parametrize("budget", [compact_module.COPY_BUDGET, 1000])
def test_the_copy_keeps_every_database_with_its_flags_and_its_rows_in_order(
    tmp_path, monkeypatch, budget
):
    """In one write transaction a database, and in many (a budget of 1,000 bytes)."""
    monkeypatch.setattr(compact_module, "COPY_BUDGET", budget)
    source = every_kind(tmp_path / "source")
    (tmp_path / "copy").mkdir()
    try:
        copy_rows(source, tmp_path / "copy", MAP_SIZE)
        wanted, rows = database_shapes(source), read_back(source)
    finally:
        source.close()
    assert not (tmp_path / "copy" / "lock.mdb").exists()  # the copy was ours alone
    copy = lmdb.open(str(tmp_path / "copy"), max_dbs=16, map_size=MAP_SIZE)
    try:
        assert database_shapes(copy) == wanted
        assert read_back(copy) == rows
        with copy.begin() as txn:
            for name, flags in KINDS.items():
                database = copy.open_db(name, txn=txn, create=False)
                set_flags = {flag for flag, on in database.flags(txn).items() if on}
                assert set_flags == set(flags), name
        assert len(rows[b"fixed-dups"]) == 2150 and rows[b"integer"][0][0] == bytes(8)
    finally:
        copy.close()
