"""`tangled compact`: give the store's free pages back to the disk, offline.

Theory of operation
-------------------
LMDB never shrinks `data.mdb`: pages freed by a transaction (an index row
rewritten, a batch's dirty leaves copied on write) go to its free list and
are reused by later writes, but the file keeps its high-water size. A
store filled by a long import can hold a third of its file as free pages.

`compact` writes a copy of the store's rows into a fresh environment in a
scratch directory beside `data.mdb` (`copy_rows`), fsyncs it, checks it
(every named database holds as many entries, with the same flags, as in the
original), and then moves the copy's `data.mdb` over the original with one
`rename`, which the directory's fsync makes durable. A crash before the
rename leaves the old store and a scratch directory that the next run
removes; after it, the new one.

The copy is our own, row by row, not LMDB's compacting copy
(`mdb_env_copy2` with `MDB_CP_COMPACT`): that one, in LMDB 0.9.36 (py-lmdb
3.0.0), kills the process with SIGSEGV on a DUPSORT+DUPFIXED database once
a key's duplicates outgrow the page they share with it and get a tree of
their own (about 500 values of 4 bytes), which `tl-succ` holds under any
message that many others name (issue 41; LMDB 0.9.31 copied it). Our copy
only goes through LMDB's ordinary write path, whatever the binding. It
works so:

- Every key of the main database names a database (the store keeps nothing
  else there). Each is created in the copy with the original's flags,
  taken from its record in the main database (the 16 bits LMDB keeps:
  dupsort, dupfixed, integerkey, ...), so its keys and duplicates sort the
  same; the check compares those bits too, so a flag this binding cannot
  set (reverse-dup, which it cannot set either when creating the store)
  would fail the check rather than slip through.
- The rows are read in key order from one read transaction (the store as
  of one moment; the writers are kept out anyway) and written in that
  order. A database without duplicates is written by appends
  (`MDB_APPEND`): LMDB then fills each leaf before it starts the next,
  where the original's leaves, split in the middle as rows came, are half
  full to full. A DUPSORT database is written by ordinary puts, in order:
  py-lmdb's `append` means `MDB_APPENDDUP` there since 3.0 and `MDB_APPEND`
  before it, and neither takes both a new key and a key's next duplicate.
  Both fill pages better than the original's live pages, all that LMDB's
  compacting copy kept: on `bench/compact.py`'s store of 100,000
  messages, 125.6 MiB against 164.8 (docs/BENCHMARKS.md, "Issue 41"); on
  one of 20,000, `tl-succ`, put and not appended, 389 pages against 573.
- Each write transaction carries about `COPY_BUDGET` bytes of rows (it
  ends at the first row past them), so the memory the copy takes is
  bounded, whatever the store's size. The
  copy's environment has no lock file (only we open it) and flushes
  nothing until its end, when it syncs once.

No other process may have the store open at the rename: LMDB keeps the last
transaction's number in `lock.mdb`, shared by every process that has the
environment open, and a process opening the new file beside a stale lock
file would read the wrong meta page. Every process that opens the
environment holds a shared `fcntl` lock on the first byte of `lock.mdb` for
as long as it has it open (that is how LMDB finds the first opener, who
resets the file). So, with our own environment closed, `compact` takes that
byte exclusively without waiting: if it cannot, another process (a `tangled
log`, an export, a script) has the store open and `StoreInUse` says so,
leaving the store as it was. Holding it, `compact` renames the copy into
place and removes `lock.mdb`, so the next opener makes a fresh one. The
writers are kept out by the data directory's lock, which the caller holds
(storage/feeds/datalock.py).
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import lmdb

from tanglenode.storage.errors import StorageError, StoreDamaged
from tanglenode.storage.feeds.layout import MAX_NAMED_DATABASES
from tanglenode.storage.feeds.metapage import DB_RECORD
from tanglenode.storage.store import FeedStore

if TYPE_CHECKING:
    from lmdb import _StatDict  # lmdb's stubs: what stat() answers

SCRATCH = "compacting"  # beside data.mdb, inside the store's directory
COPY_BUDGET = 32 * 2**20  # about the bytes of rows (keys and values) one write of the copy carries

# LMDB's persistent flags of a database (lmdb.h) and the `open_db` argument that sets each.
FLAG_ARGUMENTS = {
    0x02: "reverse_key",  # MDB_REVERSEKEY
    0x04: "dupsort",  # MDB_DUPSORT
    0x08: "integerkey",  # MDB_INTEGERKEY
    0x10: "dupfixed",  # MDB_DUPFIXED
    0x20: "integerdup",  # MDB_INTEGERDUP
}
DUPSORT = 0x04


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


@dataclass(frozen=True, slots=True)
class DatabaseShape:
    """What the check compares of one database: LMDB's flags of it and its entries."""

    flags: int
    entries: int


def database_shapes(env: lmdb.Environment) -> dict[bytes, DatabaseShape]:
    """Every named database of `env` (and the main one, `b""`, which lists them)."""
    with env.begin() as txn:
        shapes = {b"": DatabaseShape(0, txn.stat(env.open_db(None, txn=txn))["entries"])}
        for name, record in list(txn.cursor()):
            database = env.open_db(bytes(name), txn=txn, create=False)
            shapes[bytes(name)] = DatabaseShape(_flags(record), txn.stat(database)["entries"])
    return shapes


def _flags(record: bytes) -> int:
    """A database's flags, from its record in the main database (LMDB's `MDB_db`)."""
    return DB_RECORD.unpack(bytes(record))[1]


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


def _pages(stat: _StatDict) -> int:
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
            wanted = database_shapes(store.ctx.env)
            scratch.mkdir()
            copy_rows(store.ctx.env, scratch, map_size)
        _fsync(scratch / "data.mdb")
        found = _copied_shapes(scratch, map_size)
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


def copy_rows(source: lmdb.Environment, directory: Path, map_size: int) -> None:
    """Write every named database of `source`, with its flags and its rows in order, into a
    new environment in `directory` (see the module docstring), and sync it."""
    copy = lmdb.open(
        str(directory),
        map_size=map_size,
        max_dbs=MAX_NAMED_DATABASES,
        lock=False,  # only we open it
        sync=False,  # synced once, below
        metasync=False,
    )
    try:
        with source.begin() as read:
            for name, record in list(read.cursor()):
                original = source.open_db(bytes(name), txn=read, create=False)
                _copy_database(read.cursor(original), copy, bytes(name), _flags(record))
        copy.sync(True)
    finally:
        copy.close()


def _copy_database(
    rows: lmdb.Cursor[bytes], copy: lmdb.Environment, name: bytes, flags: int
) -> None:
    """The rows under `rows` into a new database `name` of `copy` with `flags`, in write
    transactions of about `COPY_BUDGET` bytes of rows each."""
    arguments = {argument: True for bit, argument in FLAG_ARGUMENTS.items() if flags & bit}
    with copy.begin(write=True) as txn:
        database = copy.open_db(name, txn=txn, **arguments)
    append = not flags & DUPSORT  # see the module docstring
    remaining = rows.iternext()
    while True:
        with copy.begin(write=True) as txn:
            consumed, _ = txn.cursor(database).putmulti(_within_budget(remaining), append=append)
        if not consumed:
            return


def _within_budget(rows: Iterable[tuple[bytes, bytes]]) -> Iterator[tuple[bytes, bytes]]:
    """The next rows of `rows`, up to the first that brings them past `COPY_BUDGET` bytes."""
    spent = 0
    for key, value in rows:
        yield key, value
        spent += len(key) + len(value)
        if spent >= COPY_BUDGET:
            return


def _copied_shapes(scratch: Path, map_size: int) -> dict[bytes, DatabaseShape]:
    copy = lmdb.open(
        str(scratch), readonly=True, lock=False, max_dbs=MAX_NAMED_DATABASES, map_size=map_size
    )
    try:
        return database_shapes(copy)
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
