"""`tangled.toml` gaining a peer (`connect --save`) and `init`'s listen and peers."""

import errno
from pathlib import Path

import pytest

from tanglenode.config import peers as peers_module
from tanglenode.config.peers import ConfigNotWritten, save_peer
from tanglenode.config.settings import ConfigError, load_settings
from tanglenode.config.template import render_config
from tanglenode.protocol.identity import feed_text
from tests.factories import keypair

ROOT = Path(__file__).resolve().parents[2]  # the checkout: `tests` imports from here
ALICE, BOB = feed_text(keypair("cfg-alice").public), feed_text(keypair("cfg-bob").public)


def test_a_saved_peer_loads_back_and_the_users_text_stays(tmp_path):
    config = tmp_path / "tangled.toml"
    config.write_text(render_config(tmp_path / "data") + "# my own note\n")
    config.chmod(0o640)
    assert save_peer(config, "10.0.0.2:8008", ALICE) is True
    assert save_peer(config, "[::1]:9000", BOB) is True
    assert save_peer(config, "10.0.0.2:8008", ALICE) is False  # there already
    text = config.read_text()
    assert "# my own note\n" in text and text.count("[[peers]]") == 3  # 1 in a comment
    settings = load_settings(config, environ={})
    assert [(p.address, p.key) for p in settings.peers] == [
        ("10.0.0.2:8008", ALICE),
        ("[::1]:9000", BOB),
    ]
    assert config.stat().st_mode & 0o777 == 0o640
    assert list(tmp_path.glob(".tangled-*")) == []  # no temporary file left


def test_a_peer_that_would_break_the_config_is_refused_and_the_file_left_alone(tmp_path):
    config = tmp_path / "tangled.toml"
    config.write_text(f'peers = [{{address = "10.0.0.2:8008", key = "{ALICE}"}}]\n')
    before = config.read_bytes()
    with pytest.raises(ConfigError, match="cannot be added"):  # an inline array: no [[peers]]
        save_peer(config, "10.0.0.3:8008", BOB)
    with pytest.raises(ConfigError, match="saved with address"):
        save_peer(config, "10.0.0.9:8008", ALICE)
    with pytest.raises(ConfigError):  # a host no loader accepts
        save_peer(config, "bad host:1", BOB)
    assert config.read_bytes() == before
    assert list(tmp_path.glob(".tangled-*")) == []
    with pytest.raises(FileNotFoundError):
        save_peer(tmp_path / "absent.toml", "10.0.0.3:8008", BOB)
    config.write_text("listen = 5\n")  # invalid already: refused, not made worse
    with pytest.raises(ConfigError, match="listen"):
        save_peer(config, "10.0.0.3:8008", BOB)


def test_a_write_the_system_refuses_is_one_clear_error(tmp_path, monkeypatch):
    config = tmp_path / "tangled.toml"
    config.write_text(render_config(tmp_path / "data"))

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(peers_module.os, "replace", disk_full)
    with pytest.raises(ConfigNotWritten, match=r"cannot save the peer in .*No space left"):
        save_peer(config, "10.0.0.2:8008", ALICE)
    monkeypatch.undo()
    assert load_settings(config, environ={}).peers == []
    assert list(tmp_path.glob(".tangled-*")) == []


def test_init_renders_listen_and_peers(tmp_path):
    config = tmp_path / "tangled.toml"
    config.write_text(
        render_config(tmp_path, listen="0.0.0.0:9100", peers=[("h.example:1", ALICE)])
    )
    settings = load_settings(config, environ={})
    assert settings.listen == "0.0.0.0:9100"
    assert [(p.address, p.key) for p in settings.peers] == [("h.example:1", ALICE)]


def test_a_symlinked_config_gains_the_peer_where_the_link_points(tmp_path):
    real = tmp_path / "etc" / "real.toml"
    real.parent.mkdir()
    real.write_text(render_config(tmp_path / "data"))
    link = tmp_path / "tangled.toml"
    link.symlink_to(real)
    assert save_peer(link, "10.0.0.2:8008", ALICE) is True
    assert link.is_symlink() and link.resolve() == real  # the link is kept, not replaced
    assert [p.key for p in load_settings(real, environ={}).peers] == [ALICE]
    assert list(real.parent.glob(".tangled-*")) == []


def test_saves_at_once_from_several_processes_keep_every_peer(tmp_path):
    """Each save reads, adds and replaces the file: without one writer at a time, the last
    replace would keep only its own peer while every caller was told it was saved."""
    import subprocess
    import sys
    import tomllib

    config = tmp_path / "tangled.toml"
    config.write_text(render_config(tmp_path))
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from tanglenode.config.peers import save_peer\n"
        "from tanglenode.protocol.identity import feed_text\n"
        "from tests.factories import keypair\n"
        "n = int(sys.argv[2])\n"
        "for i in range(n * 4, n * 4 + 4):\n"
        "    key = feed_text(keypair(f'p{i}').public)\n"
        "    save_peer(Path(sys.argv[1]), f'127.0.0.1:{9000 + i}', key)\n"
    )
    workers = [
        subprocess.Popen([sys.executable, "-c", script, str(config), str(n)], cwd=ROOT)
        for n in range(6)
    ]
    assert [worker.wait(timeout=60) for worker in workers] == [0] * 6
    saved = tomllib.loads(config.read_text())["peers"]
    assert sorted(peer["address"] for peer in saved) == sorted(
        f"127.0.0.1:{9000 + i}" for i in range(24)
    )
