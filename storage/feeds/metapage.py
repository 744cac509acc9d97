"""Check `data.mdb` against LMDB's own metadata before LMDB maps it.

Theory of operation
-------------------
LMDB maps `data.mdb` into memory and trusts it. A file cut short (a full
disk, a bad copy, a restore interrupted) makes the first read past its end
a SIGBUS: the process dies with exit 135 and no word of why. An emptied
file is worse: LMDB takes a 0-byte file for a new one and starts an empty
store under the node's old identity. So before `lmdb.open` we read the file
head ourselves and refuse, with one line and a hint, what LMDB would crash
on or silently wipe.

The head of the file is two meta pages (page 0 and page 1). Each page
starts with a 16-byte header (pgno: u64, pad: u16, flags: u16 — P_META is
0x08 — and 4 bytes we ignore), then MDB_meta, in the machine's byte order:

    u32 magic (0xBEEFC0DE)   u32 version (1 for LMDB 0.9)
    u64 address              u64 mapsize
    MDB_db free, MDB_db main   (48 bytes each: u32 pad, u16 flags,
                                u16 depth, u64 branch, leaf and overflow
                                pages, u64 entries, u64 root page)
    u64 last_pg              u64 txnid

The page size is the free DB's `pad` field. A commit writes its data pages,
syncs, then writes the meta page of its txnid's parity (txnid % 2), so the
two metas alternate and the one with the higher txnid is current; LMDB
picks it the same way. We take the valid meta with the highest txnid and
require the file to hold pages 0 … last_pg, i.e. at least
(last_pg + 1) * page size bytes. The check reads 2 pages and costs
microseconds; it does not look inside the B-trees (`tangled check` does,
through LMDB, and reports `MDB_CORRUPTED` as a finding).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from tanglenode.storage.errors import StoreDamaged

MAGIC = 0xBEEFC0DE
DATA_VERSION = 1  # MDB_DATA_VERSION of LMDB 0.9 (py-lmdb bundles 0.9.x)
P_META = 0x08
PAGE_HEADER = struct.Struct("=QHH4x")
DB_RECORD = struct.Struct("=IHHQQQQQ")  # pad, flags, depth, branch, leaf, overflow, entries, root
META = struct.Struct("=IIQQ48s48sQQ")
META_SIZE = PAGE_HEADER.size + META.size
INVALID_PAGE = 2**64 - 1  # the root of an empty DB
PAGE_SIZES = tuple(2**n for n in range(9, 17))  # LMDB's MIN_PAGESIZE .. MAX_PAGESIZE

RESTORE_HINT = (
    "restore the store directory from a backup, or move it aside and "
    "`tangled import` a bundle or archive (docs/BACKUP.md)"
)


@dataclass(frozen=True, slots=True)
class DbRecord:
    flags: int
    depth: int
    entries: int
    root: int


@dataclass(frozen=True, slots=True)
class Meta:
    """One of the two meta pages, as LMDB wrote it."""

    page: int
    version: int
    page_size: int
    map_size: int
    free: DbRecord
    main: DbRecord
    last_page: int
    txnid: int

    @property
    def needed_bytes(self) -> int:
        """How long the file must be for this meta's pages to exist."""
        return (self.last_page + 1) * self.page_size


def _db(raw: bytes) -> tuple[int, DbRecord]:
    pad, flags, depth, _branch, _leaf, _overflow, entries, root = DB_RECORD.unpack(raw)
    return pad, DbRecord(flags, depth, entries, root)


def parse_meta(page: bytes, number: int) -> Meta:
    """Parse meta page `number` (0 or 1); ValueError says why it is not a valid one."""
    if len(page) < META_SIZE:
        raise ValueError(f"meta page {number} is cut short ({len(page)} bytes)")
    pgno, _pad, flags = PAGE_HEADER.unpack_from(page)
    magic, version, _address, map_size, free_raw, main_raw, last_page, txnid = META.unpack_from(
        page, PAGE_HEADER.size
    )
    if magic != MAGIC:
        if magic == int.from_bytes(MAGIC.to_bytes(4, "little"), "big"):
            raise ValueError(f"meta page {number} was written on a machine of the other byte order")
        raise ValueError(f"meta page {number} has no LMDB magic (found {magic:#010x})")
    if version != DATA_VERSION:
        raise ValueError(f"meta page {number} is LMDB data version {version}, not {DATA_VERSION}")
    if pgno != number or not flags & P_META:
        raise ValueError(f"meta page {number} has a wrong page header (pgno {pgno}, {flags:#x})")
    page_size, free = _db(free_raw)
    _pad, main = _db(main_raw)
    if page_size not in PAGE_SIZES:
        raise ValueError(f"meta page {number} gives an impossible page size {page_size}")
    if last_page < 1:
        raise ValueError(f"meta page {number} gives an impossible last page {last_page}")
    for name, db in (("free", free), ("main", main)):
        if db.root != INVALID_PAGE and not 2 <= db.root <= last_page:
            raise ValueError(f"meta page {number}: the {name} DB's root {db.root} is out of range")
    return Meta(number, version, page_size, map_size, free, main, last_page, txnid)


def read_metas(head: bytes) -> tuple[list[Meta], list[str]]:
    """The valid metas found in the first bytes of a data file, and why the others are not.

    Page 1 sits one page in; its page size comes from page 0, or, when page
    0 is damaged, from whichever possible page size finds a valid page 1.
    """
    metas: list[Meta] = []
    problems: list[str] = []
    try:
        metas.append(parse_meta(head[:META_SIZE], 0))
        sizes: tuple[int, ...] = (metas[0].page_size,)
    except ValueError as error:
        problems.append(str(error))
        sizes = PAGE_SIZES
    second = None
    for size in sizes:
        try:
            second = parse_meta(head[size : size + META_SIZE], 1)
            break
        except ValueError as error:
            if len(sizes) == 1 or size == sizes[-1]:
                problems.append(str(error))
    if second is not None:
        metas.append(second)
    return metas, problems


def current_meta(head: bytes) -> Meta:
    """The valid meta with the highest txnid; ValueError if neither page is valid."""
    metas, problems = read_metas(head)
    if not metas:
        raise ValueError("; ".join(problems))
    return max(metas, key=lambda meta: meta.txnid)


def check_data_file(store_dir: Path) -> Meta | None:
    """Refuse a `data.mdb` that is empty, cut short or not LMDB's; None if there is none yet."""
    path = Path(store_dir) / "data.mdb"
    try:
        with path.open("rb") as file:
            size = file.seek(0, 2)
            file.seek(0)
            head = file.read(max(PAGE_SIZES) + META_SIZE)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise StoreDamaged(f"cannot read {path}: {error.strerror or error}") from None
    if size == 0:
        raise StoreDamaged(
            f"{path} is empty (0 bytes): the store's data is gone; {RESTORE_HINT} "
            f"(a store never used can simply be deleted)"
        )
    try:
        meta = current_meta(head)
    except ValueError as error:
        raise StoreDamaged(
            f"{path} is not a readable LMDB file ({error}); {RESTORE_HINT}"
        ) from None
    if size < meta.needed_bytes:
        raise StoreDamaged(
            f"{path} is truncated: {size} bytes, but its last commit (txn {meta.txnid}) "
            f"uses {meta.last_page + 1} pages of {meta.page_size} bytes ({meta.needed_bytes}); "
            f"{RESTORE_HINT}"
        )
    return meta
