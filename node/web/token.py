"""The web view's access token: made once, kept in `<data_dir>/web-token` (mode 0600).

Whoever can read the file can use the web view, as whoever can open the IPC
socket can use the node: both belong to the node's user alone. The daemon
makes the file the first time it runs with the web view on and reuses it
after, so a bookmarked URL keeps working; `tangled status` reads it to print
the URL. Light on purpose: the CLI imports it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

from tanglenode.config.settings import ConfigError

TOKEN_BYTES = 32


def read_token(path: Path) -> str | None:
    """The token in `path`, or None when there is none (the view never ran) or it is empty."""
    try:
        token = path.read_text(encoding="ascii").strip()
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    return token or None


def load_or_create_token(path: Path) -> str:
    """The token in `path`, made (random, mode 0600, never over an existing file) if absent;
    ConfigError if group or others may read the file (as for the secret key)."""
    with contextlib.suppress(FileNotFoundError):
        if path.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise ConfigError([f"{path}: group or others may read it; run `chmod 600 {path}`"])
    token = read_token(path)
    if token is not None:
        return token
    token = secrets.token_urlsafe(TOKEN_BYTES)
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # an empty or unreadable leftover: replaced, not trusted
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="ascii") as file:
        file.write(token + "\n")
    return token
