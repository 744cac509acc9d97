"""The own-head file: a padded JSON record, replaced atomically once, then rewritten in place."""

import json

from tanglenode.storage.ownhead import RECORD_BYTES, OwnHead, read_own_head, write_own_head
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
