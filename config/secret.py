"""The node's secret key file: created once with mode 0600, refused if others can read it."""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path

from tanglenode.config.settings import ConfigError
from tanglenode.protocol import json_depth
from tanglenode.protocol.errors import LocalProtocolError
from tanglenode.protocol.identity import Keypair

MAX_SECRET_CHARACTERS = 64 << 10


class SecretExists(ConfigError):
    """`tangled init` never overwrites a key or a config."""


def write_secret(path: Path, keypair: Keypair) -> None:
    """Write `keypair` to a new file readable by its owner only."""
    document = {
        "curve": "ed25519",
        "public": keypair.feed_id,
        "seed": base64.b64encode(keypair.seed).decode(),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise SecretExists([f"{path} already exists; refusing to overwrite a secret key"]) from None
    with os.fdopen(fd, "w") as file:
        json.dump(document, file, indent=2)
        file.write("\n")


def read_secret(path: Path) -> Keypair:
    try:
        mode = path.stat().st_mode
        with path.open(encoding="utf-8") as file:
            text = file.read(MAX_SECRET_CHARACTERS + 1)  # a secret file is ~150 characters
    except FileNotFoundError:
        raise ConfigError([f"{path}: no secret key here; run `tangled init` first"]) from None
    except OSError as error:
        raise ConfigError([f"{path}: cannot read the secret key: {error.strerror}"]) from None
    except UnicodeDecodeError:
        raise ConfigError([f"{path}: not a tangled secret key file"]) from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError([f"{path}: group or others may read it; run `chmod 600 {path}`"])
    try:
        if len(text) > MAX_SECRET_CHARACTERS:
            raise ValueError("too large")
        document = json_depth.loads(text)
        keypair = Keypair(base64.b64decode(document["seed"], validate=True))
    except (ValueError, KeyError, TypeError, LocalProtocolError):
        raise ConfigError([f"{path}: not a tangled secret key file"]) from None
    if document.get("public") != keypair.feed_id:
        raise ConfigError([f"{path}: its public key does not match its seed"])
    return keypair
