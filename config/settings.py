"""Settings: the `tangled.toml` schema, its defaults, and layered loading.

Layers, lowest first: built-in defaults, the TOML file, `TANGLED_*`
environment variables (nested keys joined by `__`, e.g.
`TANGLED_LIMITS__MAX_MESSAGE_BYTES`; lists and tables as JSON), then
command-line flags. Every value remembers which layer set it, so a
validation error names the key, where it came from, and why it is wrong.

The schema is the dataclasses below: each field's type, default and rules
(`ge`, `le`, a `check` function). Two validators read it. config/quick.py
accepts only values of exactly the right type that pass every rule, and
builds the settings from them with no other import; anything it doubts (a
string where a number belongs, an unknown key, a failed check) goes to
config/schema.py, which builds pydantic models from the same dataclasses
and validates there, so every error is pydantic's, named by key and layer.
A command thus starts without importing pydantic when its config is valid.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field
from pathlib import Path
from typing import Any, Literal

from tanglenode.config.quick import quick_settings
from tanglenode.protocol.address import BadAddress, parse_address, parse_host
from tanglenode.protocol.canonical import HARD_MAX_DEPTH
from tanglenode.protocol.errors import BadIdentifier, TanglenodeError
from tanglenode.protocol.identity import parse_feed
from tanglenode.protocol.limits import Limits

ENV_PREFIX = "TANGLED_"
CONFIG_ENV = "TANGLED_CONFIG"  # where the file is, not a setting
CONFIG_FILENAME = "tangled.toml"
# This project's own network: peers holding another key cannot even handshake.
DEFAULT_NETWORK_KEY = "r7AgjVgWSDtSmUGiSknUPVWm/mWfn8iNjgetFvLD+Ng="


class ConfigError(TanglenodeError):
    """The configuration is unreadable or invalid; `problems` lists each bad key."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("invalid configuration:\n  " + "\n  ".join(problems))
        self.problems = problems


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "tangled"


def _host_port(value: str, lowest: int = 1) -> str:
    try:
        parse_address(value, lowest_port=lowest)
    except BadAddress:
        raise ValueError(f"must be HOST:PORT with a port from {lowest} to 65535") from None
    return value


def _peer_address(value: str) -> str:
    return _host_port(value)


def _listen_address(value: str) -> str:
    """Where to accept peers; port 0 takes any free port (`tangled status` shows which)."""
    return _host_port(value, lowest=0)


def _network_key(value: str) -> str:
    try:
        decoded = base64.b64decode(value, validate=True)
    except binascii.Error:
        raise ValueError("must be base64") from None
    if len(decoded) != 32:
        raise ValueError(f"must decode to 32 bytes, not {len(decoded)}")
    return value


def _feed_key(value: str) -> str:
    try:
        parse_feed(value)
    except BadIdentifier as error:
        raise ValueError(str(error)) from None
    return value


def _setting(default: Any = MISSING, **rules: Any) -> Any:
    """A field and its rules (`ge`, `le`, `check`: a function raising ValueError, `doc`)."""
    return field(default=default, metadata=rules)


@dataclass(frozen=True)
class LimitsSettings:
    max_message_bytes: int = _setting(16 * 1024, ge=1024, le=1024 * 1024)
    max_tangles: int = _setting(16, ge=1, le=255)
    max_previous: int = _setting(16, ge=1, le=255)
    max_timeframe_entries: int = _setting(64, ge=32, le=4096)
    max_content_depth: int = _setting(32, ge=1, le=HARD_MAX_DEPTH)

    def to_protocol(self) -> Limits:
        return Limits(
            max_message_bytes=self.max_message_bytes,
            max_tangles=self.max_tangles,
            max_previous=self.max_previous,
            max_timeframe_entries=self.max_timeframe_entries,
            max_content_depth=self.max_content_depth,
        )


@dataclass(frozen=True)
class StorageSettings:
    map_size: int = _setting(64 * 2**30, ge=2**20, doc="LMDB map size in bytes")


@dataclass(frozen=True)
class ViewsSettings:
    """The optional derived views (storage/registry.py, `OPTIONAL`): each field is one, by
    its name with `_` for `-`. A view turned on later is built by `tangled reindex VIEW`."""

    causal_time: bool = _setting(
        False, doc="keep every timeline's causal-time order (--order causal-time)"
    )
    joined_order: bool = _setting(
        False, doc="keep each tangle's joined members as a timeline of their own (--view joined)"
    )

    def wanted(self) -> list[str]:
        """The names of the optional views turned on."""
        return [name.replace("_", "-") for name, on in vars(self).items() if on]


@dataclass(frozen=True)
class TimelinesSettings:
    # The default is storage.engine.command_log.DEFAULT_KEEP_COMMANDS (config imports no
    # storage; tests/config/test_settings.py checks that the two agree).
    keep_commands: int = _setting(
        4096,
        ge=0,
        le=1 << 32,
        doc="most recent commands each timeline's log keeps for resuming subscribers; 0: all",
    )


@dataclass(frozen=True)
class SubscribersSettings:
    """Bytes queued to subscribers (IPC streams and the web view's live pages) waiting to be
    written (node/ipc/queue_budget.py; the defaults are its, which tests/config checks)."""

    queue_bytes: int = _setting(
        32 << 20, ge=4 << 20, le=1 << 40, doc="queued to every subscriber together, in bytes"
    )
    stream_bytes: int = _setting(
        4 << 20,
        ge=4 << 20,
        le=1 << 40,
        doc="queued to one subscriber, in bytes (at least one whole frame, 4 MiB)",
    )


@dataclass(frozen=True)
class GossipSettings:
    max_peer_feeds: int = _setting(
        20_000, ge=16, le=1 << 22, doc="feeds a peer's clock may name before it is dropped"
    )
    verify_in_process: bool = _setting(
        True, doc="check received batches in a worker process (a second core), not a thread"
    )
    max_inbound: int | None = _setting(
        None,
        ge=1,
        le=1 << 20,
        doc="peers connected to us (or handshaking) at once; default: half the file "
        "descriptors left after the node's own (node/net/descriptors.py)",
    )
    max_inbound_per_address: int | None = _setting(
        None,
        ge=1,
        le=1 << 20,
        doc="of those, from one remote address; default: a sixteenth of max_inbound, at least 4",
    )


MAX_HOPS = 6  # follows away a node may reach (SSB's default is 2; more is rarely wise)


def _hops(value: Any) -> Any:
    if value != "all" and not (type(value) is int and 0 <= value <= MAX_HOPS):
        raise ValueError(f'hops is 0 to {MAX_HOPS} or "all"')
    return value


@dataclass(frozen=True)
class ReplicationSettings:
    """Which feeds the node carries (docs/PEERS.md, "Scope"): its own, those it follows
    within `hops` follows, its groups' members; "all" carries every feed but the blocked."""

    hops: int | Literal["all"] = _setting(
        2, check=_hops, doc='follows away a feed may be and still be carried, or "all"'
    )
    follow_invited: bool = _setting(
        False, doc="a community peer (pub): follow whoever redeems our invites, whatever each says"
    )

    def scope_hops(self) -> int | None:
        """`hops` as storage.scope takes it (None: every feed)."""
        return None if self.hops == "all" else int(self.hops)


MAX_WEB_HOSTS = 64


def _web_hosts(value: list[str]) -> list[str]:
    """Host names (or addresses) the web view also answers, each with its port or without
    one for any port: what a browser's `Host` names (node/web/hosts.py)."""
    if len(value) > MAX_WEB_HOSTS:
        raise ValueError(f"at most {MAX_WEB_HOSTS} hosts")
    for entry in value:
        try:
            parse_host(entry)
        except BadAddress as error:
            raise ValueError(f"{entry[:60]!r}: {error} (NAME, NAME:PORT, [IPV6]:PORT)") from None
    return value


@dataclass(frozen=True)
class WebSettings:
    listen: str | None = _setting(
        None,
        check=_listen_address,
        doc="HOST:PORT of the web view and /metrics (off when unset); use 127.0.0.1",
    )
    hosts: list[str] = field(
        default_factory=list,
        metadata={
            "check": _web_hosts,
            "doc": "other names the view is reached by, as a browser's Host header gives "
            "them (a TLS proxy's name, NAME or NAME:PORT); the listening address is always "
            "answered (docs/WEB.md, 'The Host')",
        },
    )


@dataclass(frozen=True)
class PeerSettings:
    address: str = _setting(check=_peer_address)
    key: str = _setting(check=_feed_key)


@dataclass(frozen=True)
class Settings:
    data_dir: Path = field(default_factory=default_data_dir)
    listen: str = _setting("127.0.0.1:8008", check=_listen_address)
    ipc_socket: Path | None = None
    secret_file: Path | None = None
    network_key: str = _setting(DEFAULT_NETWORK_KEY, check=_network_key)
    peers: list[PeerSettings] = field(default_factory=list)
    log_format: Literal["auto", "console", "json"] = "auto"
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    limits: LimitsSettings = field(default_factory=LimitsSettings)
    storage: StorageSettings = field(default_factory=StorageSettings)
    views: ViewsSettings = field(default_factory=ViewsSettings)
    timelines: TimelinesSettings = field(default_factory=TimelinesSettings)
    gossip: GossipSettings = field(default_factory=GossipSettings)
    subscribers: SubscribersSettings = field(default_factory=SubscribersSettings)
    replication: ReplicationSettings = field(default_factory=ReplicationSettings)
    web: WebSettings = field(default_factory=WebSettings)

    @property
    def store_path(self) -> Path:
        return self.data_dir / "store"

    @property
    def secret_path(self) -> Path:
        return self.secret_file or self.data_dir / "secret"

    @property
    def ipc_socket_path(self) -> Path:
        return self.ipc_socket or self.data_dir / "tangled.sock"

    @property
    def web_token_path(self) -> Path:
        """The web view's access token (mode 0600), made by the first `run` with the view on."""
        return self.data_dir / "web-token"

    @property
    def network_key_bytes(self) -> bytes:
        return base64.b64decode(self.network_key)


def config_path(flag: str | Path | None, data_dir_flag: str | Path | None) -> Path:
    """Where the config file is: --config, $TANGLED_CONFIG, else in the data directory."""
    if flag:
        return Path(flag)
    if os.environ.get(CONFIG_ENV):
        return Path(os.environ[CONFIG_ENV])
    data_dir = data_dir_flag or os.environ.get(ENV_PREFIX + "DATA_DIR") or default_data_dir()
    return Path(data_dir) / CONFIG_FILENAME


def load_settings(
    path: Path,
    *,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """Defaults < the TOML file at `path` (if it exists) < environment < `overrides`."""
    environ = os.environ if environ is None else environ
    merged: dict[str, Any] = {}
    sources: dict[tuple[str, ...], str] = {}
    _merge(merged, sources, _read_toml(path), str(path))
    for variable, value in _environment_layers(environ):
        _merge(merged, sources, value, variable)
    _merge(merged, sources, {k: v for k, v in (overrides or {}).items() if v is not None}, "flag")
    if "data_dir" in merged and sources[("data_dir",)] == str(path):
        merged["data_dir"] = path.parent / Path(merged["data_dir"]).expanduser()
    settings = quick_settings(Settings, merged)
    if settings is not None:
        return settings
    from tanglenode.config.schema import validate  # pydantic, only for what the quick path doubts

    valid, problems = validate(Settings, merged)
    if valid is None:
        raise ConfigError([_describe(problem, sources) for problem in problems])
    return valid


MAX_CONFIG_BYTES = 1 << 20


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as file:
            data = file.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise ConfigError([f"{path}: cannot read: {error.strerror or error}"]) from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError([f"{path}: larger than {MAX_CONFIG_BYTES} bytes; not a config file"])
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError([f"{path}: not UTF-8 text (byte {error.start})"]) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError([f"{path}: not valid TOML: {error}"]) from None
    except RecursionError:
        raise ConfigError([f"{path}: not valid TOML: nested too deeply"]) from None


def _environment_layers(environ: Mapping[str, str]) -> list[tuple[str, dict[str, Any]]]:
    layers = []
    for variable in sorted(environ):
        if not variable.startswith(ENV_PREFIX) or variable == CONFIG_ENV:
            continue
        path = variable[len(ENV_PREFIX) :].lower().split("__")
        raw = environ[variable]
        value: Any = raw
        if raw[:1] in "[{":
            try:
                value = json.loads(raw)
            except (json.JSONDecodeError, RecursionError):
                raise ConfigError([f"{variable}: not valid JSON"]) from None
        for key in reversed(path):
            value = {key: value}
        layers.append((variable, value))
    return layers


def _merge(target: dict, sources: dict, layer: Mapping[str, Any], source: str, at=()) -> None:
    for key, value in layer.items():
        where = (*at, key)
        if isinstance(value, Mapping) and isinstance(target.get(key), dict):
            _merge(target[key], sources, value, source, where)
            continue
        target[key] = dict(value) if isinstance(value, Mapping) else value
        sources[where] = source
        if isinstance(value, Mapping):
            for inner in value:
                sources[(*where, inner)] = source


def _describe(problem: Mapping[str, Any], sources: dict[tuple[str, ...], str]) -> str:
    location = tuple(str(part) for part in problem["loc"])
    key = ".".join(location) or "(top level)"
    source = next(
        (sources[location[:n]] for n in range(len(location), 0, -1) if location[:n] in sources),
        "defaults",
    )
    message = problem["msg"]
    if problem["type"] == "extra_forbidden":
        message = "unknown setting"
    elif "input" in problem and not isinstance(problem["input"], dict | list):
        message += f" (got {problem['input']!r})"
    return f"{key} (from {source}): {message}"
