"""The meta-page reader, on real LMDB files: what it reads, and what it refuses."""

import shutil
import struct

import lmdb
import pytest

from tanglenode.storage.errors import StoreDamaged
from tanglenode.storage.feeds.metapage import (
    MAGIC,
    META_SIZE,
    PAGE_HEADER,
    check_data_file,
    current_meta,
    parse_meta,
    read_metas,
)
from tanglenode.storage.store import FeedStore
from tests.factories import keypair


@pytest.fixture
def store_dir(tmp_path):
    """A real store with a few commits: the two metas hold different txnids."""
    path = tmp_path / "store"
    with FeedStore(path, keypair=keypair("me"), map_size=64 * 2**20) as store:
        for number in range(5):
            store.writes.publish({"n": number})
    return path


def head_of(path):
    return (path / "data.mdb").read_bytes()[: 2 * 65536]


def test_both_metas_are_read_and_the_newer_is_current(store_dir):
    metas, problems = read_metas(head_of(store_dir))
    assert problems == [] and [meta.page for meta in metas] == [0, 1]
    assert abs(metas[0].txnid - metas[1].txnid) == 1  # they alternate
    assert {metas[0].txnid % 2, metas[1].txnid % 2} == {0, 1}
    current = current_meta(head_of(store_dir))
    assert current.txnid == max(meta.txnid for meta in metas)
    env = lmdb.open(str(store_dir), readonly=True, max_dbs=64)
    try:
        info, stat = env.info(), env.stat()
        assert (current.txnid, current.last_page) == (info["last_txnid"], info["last_pgno"])
        assert current.page_size == stat["psize"]
        assert current.main.entries == stat["entries"] and current.main.depth == stat["depth"]
    finally:
        env.close()
    size = (store_dir / "data.mdb").stat().st_size
    assert current.needed_bytes <= size
    assert check_data_file(store_dir) == current


def smash_meta(path, page: int, page_size: int = 4096) -> None:
    data = bytearray((path / "data.mdb").read_bytes())
    data[page * page_size + PAGE_HEADER.size : page * page_size + PAGE_HEADER.size + 4] = b"\0" * 4
    (path / "data.mdb").write_bytes(bytes(data))


def test_a_damaged_meta_leaves_the_other(store_dir):
    before = read_metas(head_of(store_dir))[0]
    smash_meta(store_dir, 0)
    metas, problems = read_metas(head_of(store_dir))
    assert [meta.page for meta in metas] == [1] and metas[0] == before[1]
    assert problems == ["meta page 0 has no LMDB magic (found 0x00000000)"]
    assert current_meta(head_of(store_dir)) == before[1]  # found without page 0's page size


def test_the_newer_meta_damaged_falls_back_to_the_older(store_dir):
    metas = read_metas(head_of(store_dir))[0]
    newer = max(metas, key=lambda meta: meta.txnid)
    smash_meta(store_dir, newer.page)
    assert current_meta(head_of(store_dir)) == metas[1 - newer.page]


def test_no_valid_meta_is_refused(store_dir):
    smash_meta(store_dir, 0)
    smash_meta(store_dir, 1)
    with pytest.raises(StoreDamaged, match=r"not a readable LMDB file.*no LMDB magic"):
        check_data_file(store_dir)
    with pytest.raises(StoreDamaged):
        FeedStore(store_dir, create=False)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda m: struct.pack_into("=I", m, PAGE_HEADER.size, 0xDEC0EFBE), "other byte order"),
        (lambda m: struct.pack_into("=I", m, PAGE_HEADER.size + 4, 2), "data version 2"),
        (lambda m: struct.pack_into("=Q", m, 0, 7), "wrong page header"),
        (lambda m: struct.pack_into("=I", m, PAGE_HEADER.size + 24, 1000), "page size 1000"),
        (lambda m: struct.pack_into("=Q", m, META_SIZE - 16, 0), "last page 0"),
        (lambda m: struct.pack_into("=Q", m, META_SIZE - 24, 2**40), "root .* out of range"),
    ],
    ids=["byte-order", "version", "pgno", "page-size", "last-page", "main-root"],
)
def test_each_invalid_field_is_named(store_dir, mutate, message):
    page = bytearray(head_of(store_dir)[:META_SIZE])
    assert parse_meta(bytes(page), 0).page == 0
    mutate(page)
    with pytest.raises(ValueError, match=message):
        parse_meta(bytes(page), 0)


def test_a_short_page_is_not_a_meta():
    with pytest.raises(ValueError, match="cut short"):
        parse_meta(struct.pack("=I", MAGIC), 0)


def test_truncated_to_half_is_refused_before_lmdb_maps_it(store_dir):
    path = store_dir / "data.mdb"
    needed = check_data_file(store_dir).needed_bytes
    with path.open("r+b") as file:
        file.truncate(path.stat().st_size // 2)
    with pytest.raises(StoreDamaged, match=rf"truncated: \d+ bytes, .*\({needed}\).*import"):
        FeedStore(store_dir, create=False)


def test_one_page_short_is_refused(store_dir):
    path = store_dir / "data.mdb"
    meta = check_data_file(store_dir)
    with path.open("r+b") as file:
        file.truncate(meta.needed_bytes - 1)
    with pytest.raises(StoreDamaged, match="truncated"):
        check_data_file(store_dir)


def test_an_emptied_file_is_refused_not_started_afresh(store_dir):
    (store_dir / "data.mdb").write_bytes(b"")
    with pytest.raises(StoreDamaged, match="empty"):
        FeedStore(store_dir, keypair=keypair("me"))  # even when asked to create
    assert (store_dir / "data.mdb").stat().st_size == 0


def test_a_new_store_has_no_file_to_check(tmp_path):
    assert check_data_file(tmp_path / "nothing") is None
    with FeedStore(tmp_path / "fresh", map_size=2**20):
        pass
    assert check_data_file(tmp_path / "fresh").last_page >= 1


def test_a_copy_with_bytes_flipped_inside_a_page_still_opens(store_dir, tmp_path):
    """The check reads the metas only: damage inside the B-trees is `check`'s to find."""
    copy = tmp_path / "copy"
    shutil.copytree(store_dir, copy)
    data = bytearray((copy / "data.mdb").read_bytes())
    for index in range(3 * 4096, 3 * 4096 + 200):
        data[index] ^= 0xFF
    (copy / "data.mdb").write_bytes(bytes(data))
    assert check_data_file(copy) == check_data_file(store_dir)
