"""Adding a peer to `tangled.toml` (`tangled connect --save`), keeping the file valid.

The file is the user's: its comments and layout stay as they are. A new
peer is appended as one more `[[peers]]` table, its strings written with
TOML's escapes. The new text is written to a temporary file beside the
config, loaded and validated as the node would load it (the file alone,
without the environment), and only then moved over the config
(`os.replace`: a reader sees the old file or the new one, never half of
one). A peer already saved with the same key and address is left alone;
the same key at another address is refused (edit the file), as is a file
whose `peers` are written another way that a table cannot extend.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import tomllib
from collections.abc import Iterator
from pathlib import Path

from tanglenode.config.settings import ConfigError, load_settings
from tanglenode.protocol.errors import BadIdentifier, TanglenodeError
from tanglenode.protocol.identity import parse_feed

__all__ = ["ConfigNotWritten", "peer_table", "save_peer"]


class ConfigNotWritten(TanglenodeError):
    """The config file could not be read or replaced (permissions, a full disk, ...)."""


def peer_table(address: str, key: str) -> str:
    """`[[peers]]` with `address` and `key`, as TOML (JSON's escapes are TOML's too)."""
    return f"[[peers]]\naddress = {json.dumps(address)}\nkey = {json.dumps(key)}\n"


def save_peer(config: Path, address: str, key: str) -> bool:
    """Add peer (`address`, `key`) to the config file; False if it was there already.

    Raises `FileNotFoundError` without a config file, `ConfigError` if the
    file is invalid now, names the key at another address, or would not
    stay valid, and `ConfigNotWritten` when the system refuses the write.
    """
    try:
        with _only_writer(config):
            return _save_peer(config, address, key)
    except OSError as error:
        if isinstance(error, FileNotFoundError) and error.args == (config,):
            raise
        reason = error.strerror or str(error)
        raise ConfigNotWritten(f"cannot save the peer in {config}: {reason}") from None


@contextlib.contextmanager
def _only_writer(config: Path) -> Iterator[None]:
    """One save at a time, across threads and processes: each reads the file, adds its
    peer and replaces it, so two at once would keep only the last one's peer. The lock is
    on the directory the file is replaced in (a lock on the file would stay with the file
    the replace leaves behind)."""
    folder = os.open(config.resolve().parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        yield
    finally:
        os.close(folder)  # and the lock with it


def _save_peer(config: Path, address: str, key: str) -> bool:
    if not config.is_file():
        raise FileNotFoundError(config)
    load_settings(config, environ={})  # refuses a file that is invalid (or too large) now
    text = config.read_text(encoding="utf-8")
    wanted = parse_feed(key)
    for peer in tomllib.loads(text).get("peers", []):  # valid: a list of tables
        try:
            saved = parse_feed(peer.get("key"))
        except BadIdentifier:
            saved = None
        if saved == wanted:
            if peer.get("address") == address:
                return False
            raise ConfigError(
                [f"{config}: peer {key} is saved with address {peer.get('address')!r}; edit it"]
            )
    separator = "" if not text or text.endswith("\n\n") else "\n" if text.endswith("\n") else "\n\n"
    _replace_validated(config, text + separator + peer_table(address, key))
    return True


def _replace_validated(config: Path, text: str) -> None:
    """Write `text` beside `config`, check it loads, then move it over `config`.

    A symlinked config is written where the link points (the link stays), and the new
    file keeps the old one's mode and, where we may set it, its owner and group.
    """
    config = config.resolve()
    status = config.stat()
    mode = status.st_mode & 0o777
    handle, name = tempfile.mkstemp(prefix=".tangled-", suffix=".toml", dir=config.parent)
    temporary = Path(name)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, mode)
        if (status.st_uid, status.st_gid) != (os.geteuid(), os.getegid()):
            with contextlib.suppress(PermissionError):  # only root may give a file away
                os.chown(temporary, status.st_uid, status.st_gid)
        try:
            load_settings(temporary, environ={})
        except ConfigError as error:
            raise ConfigError([f"{config}: the peer cannot be added", *error.problems]) from None
        os.replace(temporary, config)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
