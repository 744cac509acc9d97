"""The own-head file: a padded JSON record, replaced atomically once, then rewritten in place."""

import json

import pytest

from tanglenode.storage.errors import OwnFeedBehind, StorageError
from tanglenode.storage.feeds.ownhead import (
    RECORD_BYTES,
    OwnHead,
    OwnHeadFile,
    read_own_head,
    write_own_head,
)
from tests.factories import keypair

ME = keypair("me").public


def test_the_record_is_rewritten_in_place_once_it_has_its_size(tmp_path):
    path = tmp_path / "store.own-head"
    write_own_head(path, OwnHead(ME, 1, b"\x01" * 32))
    inode = path.stat().st_ino
    for seq in (2, 10**18):
        write_own_head(path, OwnHead(ME, seq, bytes([seq % 251]) * 32))
        assert path.stat().st_ino == inode  # no new file, no rename
        assert path.stat().st_size == RECORD_BYTES
        assert read_own_head(path) == OwnHead(ME, seq, bytes([seq % 251]) * 32)
    assert json.loads(path.read_text())["seq"] == 10**18  # still plain JSON
    assert not path.with_name(path.name + ".tmp").exists()


def test_a_file_of_another_size_is_replaced_whole(tmp_path):
    path = tmp_path / "store.own-head"
    old = {"feed": "@" + "A" * 43 + "=.ed25519", "seq": 1, "id": "%x"}  # any earlier file
    path.write_text(json.dumps(old) + "\n")
    inode = path.stat().st_ino
    write_own_head(path, OwnHead(ME, 7, b"\x07" * 32))
    assert path.stat().st_ino != inode and path.stat().st_size == RECORD_BYTES
    assert read_own_head(path) == OwnHead(ME, 7, b"\x07" * 32)


def test_the_store_s_view_of_the_file_follows_a_replaced_or_damaged_file(tmp_path):
    path = tmp_path / "store.own-head"
    known = OwnHeadFile(path)
    assert known.read() is None
    known.write(OwnHead(ME, 3, b"\x03" * 32))
    assert known.read() == OwnHead(ME, 3, b"\x03" * 32)
    known.refuse_if_behind(ME, 3)
    path.unlink()
    write_own_head(path, OwnHead(ME, 9, b"\x09" * 32))  # a new file (another inode)
    assert known.read() == OwnHead(ME, 9, b"\x09" * 32)
    with pytest.raises(OwnFeedBehind, match="published up to seq 9"):
        known.refuse_if_behind(ME, 3)
    path.write_text("{damaged")
    with pytest.raises(StorageError, match="unreadable"):
        known.read()
