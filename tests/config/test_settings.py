import json
import stat
from pathlib import Path

import pytest

from tanglenode.config.secret import SecretExists, read_secret, write_secret
from tanglenode.config.settings import (
    DEFAULT_NETWORK_KEY,
    MAX_WEB_HOSTS,
    ConfigError,
    config_path,
    load_settings,
)
from tanglenode.config.template import render_config
from tanglenode.protocol.identity import Keypair


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_defaults_when_there_is_no_file(tmp_path):
    settings = load_settings(tmp_path / "absent.toml", environ={})
    assert settings.listen == "127.0.0.1:8008"
    assert settings.network_key == DEFAULT_NETWORK_KEY
    assert settings.limits.to_protocol().max_message_bytes == 16 * 1024
    assert settings.limits.max_timeframe_entries == 64
    assert settings.peers == []


def test_the_rendered_template_loads_back(tmp_path):
    path = write(tmp_path / "tangled.toml", render_config(tmp_path / "data"))
    settings = load_settings(path, environ={})
    assert settings.data_dir == tmp_path / "data"
    assert settings.store_path == tmp_path / "data" / "store"
    assert settings.secret_path == tmp_path / "data" / "secret"
    assert settings.ipc_socket_path == tmp_path / "data" / "tangled.sock"


def test_a_relative_data_dir_is_relative_to_the_config_file(tmp_path):
    path = write(tmp_path / "tangled.toml", 'data_dir = "node-a"\n')
    assert load_settings(path, environ={}).data_dir == tmp_path / "node-a"


def test_layers_file_then_environment_then_flags(tmp_path):
    path = write(tmp_path / "t.toml", 'listen = "127.0.0.1:9000"\n[limits]\nmax_tangles = 8\n')
    environ = {"TANGLED_LISTEN": "127.0.0.1:9001", "TANGLED_LIMITS__MAX_PREVIOUS": "4"}
    settings = load_settings(path, environ=environ)
    assert (settings.listen, settings.limits.max_tangles, settings.limits.max_previous) == (
        "127.0.0.1:9001",
        8,
        4,
    )
    flagged = load_settings(path, environ=environ, overrides={"listen": "127.0.0.1:9002"})
    assert flagged.listen == "127.0.0.1:9002"


def test_peers_from_file_and_from_json_in_the_environment(tmp_path):
    key = Keypair.generate().feed_id
    path = write(tmp_path / "t.toml", f'[[peers]]\naddress = "10.0.0.1:8008"\nkey = "{key}"\n')
    assert load_settings(path, environ={}).peers[0].key == key
    environ = {"TANGLED_PEERS": f'[{{"address": "h:1", "key": "{key}"}}]'}
    assert load_settings(path, environ=environ).peers[0].address == "h:1"


def problems_of(path, environ=None):
    with pytest.raises(ConfigError) as caught:
        load_settings(path, environ=environ or {})
    return caught.value.problems


def test_errors_name_the_key_its_source_and_why(tmp_path):
    path = write(
        tmp_path / "t.toml", 'listen = "nowhere"\nsurprise = 1\n[limits]\nmax_tangles = 0\n'
    )
    problems = problems_of(path, {"TANGLED_LIMITS__MAX_MESSAGE_BYTES": "lots"})
    assert len(problems) == 4
    assert any(p.startswith(f"listen (from {path})") and "HOST:PORT" in p for p in problems)
    assert any(p.startswith("surprise") and "unknown setting" in p for p in problems)
    assert any(
        p.startswith(f"limits.max_tangles (from {path})") and "greater" in p for p in problems
    )
    assert any(
        p.startswith("limits.max_message_bytes (from TANGLED_LIMITS__MAX_MESSAGE_BYTES)")
        and "'lots'" in p
        for p in problems
    )


@pytest.mark.parametrize(
    "text, key",
    [
        ('network_key = "c2hvcnQ="\n', "network_key"),
        ('network_key = "not base64!"\n', "network_key"),
        ('log_format = "xml"\n', "log_format"),
        ('[[peers]]\naddress = "h:1"\nkey = "@nope"\n', "peers.0.key"),
        ("[storage]\nmap_size = 10\n", "storage.map_size"),
        ("[timelines]\nkeep_commands = -1\n", "timelines.keep_commands"),
        ('[timelines]\nkeep_commands = "all"\n', "timelines.keep_commands"),
        ("[timelines]\nkeep_commands = 4294967297\n", "timelines.keep_commands"),
    ],
)
def test_each_bad_value_is_named(tmp_path, text, key):
    problems = problems_of(write(tmp_path / "t.toml", text))
    assert [p.split(" ")[0] for p in problems] == [key]


def test_unknown_environment_settings_are_errors(tmp_path):
    problems = problems_of(tmp_path / "absent.toml", {"TANGLED_LISTN": "x"})
    assert problems == ["listn (from TANGLED_LISTN): unknown setting"]


def test_invalid_toml_is_reported_with_the_file(tmp_path):
    path = write(tmp_path / "t.toml", "listen = \n")
    (problem,) = problems_of(path)
    assert str(path) in problem and "TOML" in problem


def test_config_path_resolution(tmp_path, monkeypatch):
    monkeypatch.delenv("TANGLED_CONFIG", raising=False)
    monkeypatch.delenv("TANGLED_DATA_DIR", raising=False)
    assert config_path(tmp_path / "c.toml", tmp_path / "d") == tmp_path / "c.toml"
    assert config_path(None, tmp_path / "d") == tmp_path / "d" / "tangled.toml"
    monkeypatch.setenv("TANGLED_DATA_DIR", str(tmp_path / "e"))
    assert config_path(None, None) == tmp_path / "e" / "tangled.toml"
    monkeypatch.setenv("TANGLED_CONFIG", str(tmp_path / "f.toml"))
    assert config_path(None, tmp_path / "d") == tmp_path / "f.toml"


def test_secret_file_is_private_and_never_overwritten(tmp_path):
    path = tmp_path / "secret"
    keypair = Keypair.generate()
    write_secret(path, keypair)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert read_secret(path) == keypair
    with pytest.raises(SecretExists):
        write_secret(path, Keypair.generate())
    assert read_secret(path) == keypair


def test_a_secret_others_can_read_is_refused(tmp_path):
    path = tmp_path / "secret"
    write_secret(path, Keypair.generate())
    path.chmod(0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        read_secret(path)


def test_a_damaged_secret_file_is_refused(tmp_path):
    path = tmp_path / "secret"
    write_secret(path, Keypair.generate())
    text = path.read_text().replace('"public": "@', '"public": "@X')
    path.write_text(text)
    with pytest.raises(ConfigError, match="does not match"):
        read_secret(path)
    with pytest.raises(ConfigError, match="no secret key"):
        read_secret(tmp_path / "absent")


def test_the_web_view_is_off_unless_listen_is_set_and_then_checked(tmp_path):
    path = write(tmp_path / "t.toml", '[web]\nlisten = "127.0.0.1:8080"\n')
    assert load_settings(tmp_path / "absent.toml", environ={}).web.listen is None
    assert load_settings(path, environ={}).web.listen == "127.0.0.1:8080"
    environ = {"TANGLED_WEB__LISTEN": "127.0.0.1:0"}  # any free port
    assert load_settings(path, environ=environ).web.listen == "127.0.0.1:0"
    flagged = load_settings(path, environ=environ, overrides={"web": {"listen": "[::1]:9"}})
    assert flagged.web.listen == "[::1]:9"
    assert flagged.web_token_path == flagged.data_dir / "web-token"
    with pytest.raises(ConfigError) as raised:
        load_settings(path, environ={"TANGLED_WEB__LISTEN": "8080"})
    assert "web.listen (from TANGLED_WEB__LISTEN)" in str(raised.value)


def test_the_web_views_other_hosts_are_names_with_or_without_a_port(tmp_path):
    """`web.hosts`: the Hosts the view answers beside its listening address (docs/WEB.md,
    "The Host"), each checked as a Host header is read, at most `MAX_WEB_HOSTS`."""
    path = write(tmp_path / "t.toml", '[web]\nhosts = ["node.example", "[::1]:9"]\n')
    assert load_settings(tmp_path / "absent.toml", environ={}).web.hosts == []
    assert load_settings(path, environ={}).web.hosts == ["node.example", "[::1]:9"]
    environ = {"TANGLED_WEB__HOSTS": '["proxy.example:443"]'}
    assert load_settings(path, environ=environ).web.hosts == ["proxy.example:443"]
    for bad in ('["evil example"]', '["host:0"]', '["http://x"]', '"node.example"', "[1]"):
        with pytest.raises(ConfigError) as raised:
            load_settings(path, environ={"TANGLED_WEB__HOSTS": bad})
        assert "web.hosts" in str(raised.value) and "TANGLED_WEB__HOSTS" in str(raised.value)
    many = json.dumps([f"h{n}.example" for n in range(MAX_WEB_HOSTS + 1)])
    with pytest.raises(ConfigError, match=f"at most {MAX_WEB_HOSTS} hosts"):
        load_settings(path, environ={"TANGLED_WEB__HOSTS": many})


def test_the_command_logs_keep_what_the_store_keeps_unless_told(tmp_path):
    """The setting's default is the store's own (config imports no storage: kept equal here);
    0 keeps every command; the rendered template carries the default."""
    from tanglenode.storage.engine.command_log import DEFAULT_KEEP_COMMANDS, KEEP_ALL, LogRetention

    defaults = load_settings(tmp_path / "absent.toml", environ={})
    assert defaults.timelines.keep_commands == DEFAULT_KEEP_COMMANDS
    path = write(tmp_path / "tangled.toml", render_config(tmp_path / "data"))
    assert f"keep_commands = {DEFAULT_KEEP_COMMANDS}\n" in path.read_text()
    assert load_settings(path, environ={}).timelines.keep_commands == DEFAULT_KEEP_COMMANDS
    everything = load_settings(path, environ={"TANGLED_TIMELINES__KEEP_COMMANDS": "0"})
    assert LogRetention.keeping(everything.timelines.keep_commands) == KEEP_ALL


def test_the_subscribers_budget_defaults_are_the_node_s_and_one_frame_at_least(tmp_path):
    """config imports no node: the defaults are kept equal here; a stream's bound below one
    whole IPC frame is refused (a big page could never be queued)."""
    from tanglenode.node.ipc.queue_budget import DEFAULT_QUEUE_BYTES, DEFAULT_STREAM_BYTES

    defaults = load_settings(tmp_path / "absent.toml", environ={})
    assert defaults.subscribers.queue_bytes == DEFAULT_QUEUE_BYTES
    assert defaults.subscribers.stream_bytes == DEFAULT_STREAM_BYTES
    path = write(tmp_path / "tangled.toml", render_config(tmp_path / "data"))
    assert f"stream_bytes = {DEFAULT_STREAM_BYTES}\n" in path.read_text()
    small = {"TANGLED_SUBSCRIBERS__STREAM_BYTES": str(DEFAULT_STREAM_BYTES - 1)}
    with pytest.raises(ConfigError, match=r"subscribers\.stream_bytes"):
        load_settings(path, environ=small)
