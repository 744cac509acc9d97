"""`tangled compact`: give the store's free pages back to the disk, offline.

Theory of operation
-------------------
LMDB never shrinks `data.mdb`: pages freed by a transaction (an index row
rewritten, a batch's dirty leaves copied on write) go to its free list and
are reused by later writes, but the file keeps its high-water size. A
store filled by a long import can hold a third of its file as free pages.

`compact` writes LMDB's compacting copy (`mdb_env_copy2` with
`MDB_CP_COMPACT`: the live pages only, renumbered) into a fresh directory
beside `data.mdb`, checks the copy (every named database holds as many
entries as in the original, read in one read transaction of each), and
then moves the copy's `data.mdb` over the original with one `rename`,
which the directory's fsync makes durable. A crash before the rename
leaves the old store and a scratch directory that the next run removes;
after it, the new one. Nothing else may write meanwhile: the caller holds
the data directory's lock (storage/feeds/datalock.py), so the node is not
running; a reader that had the old file open keeps reading the old inode.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import lmdb

from tanglenode.storage.errors import StoreDamaged
from tanglenode.storage.feeds.layout import MAX_NAMED_DATABASES
from tanglenode.storage.store import FeedStore

SCRATCH = "compacting"  # beside data.mdb, inside the store's directory


@dataclass(frozen=True, slots=True)
class Compacted:
    """The size of `data.mdb` before and after."""

    before: int
    after: int

    @property
    def freed(self) -> int:
        return self.before - self.after


def entry_counts(env: lmdb.Environment) -> dict[bytes, int]:
    """Entries of every named database of `env` (and of the main one, which lists them)."""
    with env.begin() as txn:
        counts = {b"": txn.stat(env.open_db(None, txn=txn))["entries"]}
        names = [bytes(name) for name in txn.cursor().iternext(values=False)]
        for name in names:
            counts[name] = txn.stat(env.open_db(name, txn=txn, create=False))["entries"]
    return counts


def compact(store_path: Path, map_size: int) -> Compacted:
    """Rewrite the store at `store_path` without its free pages (see the module docstring).

    The caller holds the data directory's lock. Raises `StoreNotFound` without a store,
    `StoreDamaged` when the copy does not hold what the original does.
    """
    data = store_path / "data.mdb"
    scratch = store_path / SCRATCH
    shutil.rmtree(scratch, ignore_errors=True)  # a run cut short left it
    with FeedStore(store_path, create=False, map_size=map_size) as store:
        before = data.stat().st_size
        wanted = entry_counts(store.ctx.env)
        scratch.mkdir()
        store.ctx.env.copy(str(scratch), compact=True)
    copy = lmdb.open(
        str(scratch), readonly=True, lock=False, max_dbs=MAX_NAMED_DATABASES, map_size=map_size
    )
    try:
        found = entry_counts(copy)
    finally:
        copy.close()
    if found != wanted:
        shutil.rmtree(scratch, ignore_errors=True)
        differ = sorted(
            name.decode(errors="replace") for name in wanted if found.get(name) != wanted[name]
        )
        raise StoreDamaged(
            f"the compacted copy differs in {', '.join(differ)}; the store is unchanged"
        )
    os.replace(scratch / "data.mdb", data)
    _sync_directory(store_path)
    shutil.rmtree(scratch, ignore_errors=True)
    return Compacted(before, data.stat().st_size)


def _sync_directory(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
