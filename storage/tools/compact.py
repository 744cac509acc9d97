"""`tangled compact`: give the store's free pages back to the disk, offline.

Theory of operation
-------------------
LMDB never shrinks `data.mdb`: pages freed by a transaction (an index row
rewritten, a batch's dirty leaves copied on write) go to its free list and
are reused by later writes, but the file keeps its high-water size. A
store filled by a long import can hold a third of its file as free pages.

`compact` writes LMDB's compacting copy (`mdb_env_copy2` with
`MDB_CP_COMPACT`: the live pages only, renumbered) into a fresh directory
beside `data.mdb`, fsyncs it, checks it (every named database holds as many
entries as in the original, read in one read transaction of each), and then
moves the copy's `data.mdb` over the original with one `rename`, which the
directory's fsync makes durable. A crash before the rename leaves the old
store and a scratch directory that the next run removes; after it, the new
one.

No other process may have the store open at the rename: LMDB keeps the last
transaction's number in `lock.mdb`, shared by every process that has the
environment open, and a process opening the new file beside a stale lock
file would read the wrong meta page (the copy's empty first one). Every
process that opens the environment holds a shared `fcntl` lock on the first
byte of `lock.mdb` for as long as it has it open (that is how LMDB finds the
first opener, who resets the file). So, with our own environment closed,
`compact` takes that byte exclusively without waiting: if it cannot, another
process (a `tangled log`, an export, a script) has the store open and
`StoreInUse` says so, leaving the store as it was. Holding it, `compact`
renames the copy into place and removes `lock.mdb`, so the next opener
makes a fresh one. The writers are kept out by the data directory's lock,
which the caller holds (storage/feeds/datalock.py).
"""

from __future__ import annotations

import fcntl
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import lmdb

from tanglenode.storage.errors import StorageError, StoreDamaged
from tanglenode.storage.feeds.layout import MAX_NAMED_DATABASES
from tanglenode.storage.store import FeedStore

SCRATCH = "compacting"  # beside data.mdb, inside the store's directory


class StoreInUse(StorageError):
    """Another process has the store open: compacting now would hand it a stale lock file."""


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


def free_share(env: lmdb.Environment) -> float:
    """The share of `data.mdb`'s pages (up to the last one used) that no database holds:
    LMDB's free list, which `compact` gives back."""
    info = env.info()
    with env.begin() as txn:
        main = txn.stat(env.open_db(None, txn=txn))
        used = 2 + _pages(main)  # the two meta pages and the main database
        for name in [bytes(name) for name in txn.cursor().iternext(values=False)]:
            used += _pages(txn.stat(env.open_db(name, txn=txn, create=False)))
    total = info["last_pgno"] + 1
    return max(0, total - used) / total


def _pages(stat: dict) -> int:
    return stat["branch_pages"] + stat["leaf_pages"] + stat["overflow_pages"]


def compact(store_path: Path, map_size: int) -> Compacted:
    """Rewrite the store at `store_path` without its free pages (see the module docstring).

    The caller holds the data directory's lock. Raises `StoreNotFound` without a store,
    `StoreInUse` while another process has it open, `StoreDamaged` when the copy does not
    hold what the original does, `StorageError` when the copy cannot be written (a full
    disk); in every case the store is left as it was.
    """
    data = store_path / "data.mdb"
    scratch = store_path / SCRATCH
    _remove(scratch)  # a run cut short left it
    try:
        with FeedStore(store_path, create=False, map_size=map_size) as store:
            before = data.stat().st_size
            wanted = entry_counts(store.ctx.env)
            scratch.mkdir()
            store.ctx.env.copy(str(scratch), compact=True)
        _fsync(scratch / "data.mdb")
        found = _copied_counts(scratch, map_size)
    except (OSError, lmdb.Error) as error:
        _remove(scratch)
        raise StorageError(
            f"cannot write the compacted copy beside the store ({error}); the store is unchanged"
        ) from None
    if found != wanted:
        _remove(scratch)
        differ = sorted(
            name.decode(errors="replace") for name in wanted if found.get(name) != wanted[name]
        )
        raise StoreDamaged(
            f"the compacted copy differs in {', '.join(differ)}; the store is unchanged"
        )
    with _alone(store_path / "lock.mdb", scratch):
        os.replace(scratch / "data.mdb", data)
        (store_path / "lock.mdb").unlink(missing_ok=True)
        _fsync(store_path)
    _remove(scratch)
    return Compacted(before, data.stat().st_size)


def _copied_counts(scratch: Path, map_size: int) -> dict[bytes, int]:
    copy = lmdb.open(
        str(scratch), readonly=True, lock=False, max_dbs=MAX_NAMED_DATABASES, map_size=map_size
    )
    try:
        return entry_counts(copy)
    finally:
        copy.close()


class _alone:
    """Hold the byte of `lock.mdb` every process with the environment open holds shared."""

    def __init__(self, lock_file: Path, scratch: Path) -> None:
        self._lock_file, self._scratch = lock_file, scratch
        self._fd = -1

    def __enter__(self) -> None:
        self._fd = os.open(self._lock_file, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
        except OSError:
            os.close(self._fd)
            _remove(self._scratch)
            raise StoreInUse(
                "another process has the store open (a `tangled log`, an export, a script?); "
                "close it and compact again; the store is unchanged"
            ) from None

    def __exit__(self, *exc_info: object) -> None:
        os.close(self._fd)  # closing it drops the lock


def _remove(path: Path) -> None:
    """Remove a scratch directory, or whatever stands at its name (a file, a link)."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


def _fsync(path: Path) -> None:
    """Make a file's bytes, or a directory's entries, durable."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
