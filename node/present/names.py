"""How a feed is shown to people: `Names` (petname, `~self-chosen` name, short id), and the
petnames file it reads.

Theory of operation
-------------------
A feed is shown by the first of:

1. its **petname**: a name we gave it (`tangled name @FEED alice`), kept only
   here, in `<data_dir>/petnames.json` (`{"version": 1, "names": {"@FEED":
   "alice"}}`). A plain file, not the store, so it is read the same whether
   the node runs or not, by the CLI and by the web view (`read_petnames`);
   node/cli/names.py writes it. At most `MAX_PETNAMES` names, the file at most
   `MAX_FILE_BYTES`;
2. its **self-chosen name**, from its latest own `about` message below the
   feed's invalid boundary, if it has one (`storage/views/abouts.py`), shown with a
   `~` (`~alice`) so it can never pass for a petname: a petname may not start
   with `~`, `@` or `%`;
3. its id, shortened: `@AbCdEfGh…` (`short_feed`).

Every name is hostile text: `clean_name` strips control and format
characters, folds whitespace and bounds the length, before a name is stored
and again when the file is read.

The file is read with care: opened without blocking (a FIFO put in its place
cannot hang a view), refused unless it is a regular file, read at most
`MAX_FILE_BYTES`. A damaged or unreadable file raises `PetnamesDamaged`
(the CLI's `BadInput`, exit 3, in node/cli/names.py; the web view shows ids).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tanglenode.protocol import json_depth
from tanglenode.protocol.errors import BadIdentifier, TanglenodeError
from tanglenode.protocol.identity import feed_text, parse_feed
from tanglenode.storage.views.abouts import clean_name

PETNAMES_FILE = "petnames.json"
MAX_PETNAMES = 10_000
MAX_FILE_BYTES = 2 * 2**20
SELF_CHOSEN = "~"  # marks a name a feed gave itself
SHORT_ID_CHARS = 8


class PetnamesDamaged(TanglenodeError):
    """The petnames file cannot be read as one: its message says why and what to do."""


def short_feed(feed: bytes) -> str:
    """`@AbCdEfGh…`: enough of an id to tell feeds apart by eye."""
    return feed_text(feed)[: 1 + SHORT_ID_CHARS] + "…"


class Names:
    """How feeds are shown: petnames, then self-chosen names (`~name`), then short ids."""

    def __init__(
        self,
        petnames: dict[bytes, str] | None = None,
        abouts: dict[bytes, str] | None = None,
        ours: bytes | None = None,
    ) -> None:
        self.petnames = dict(petnames or {})
        self.abouts = dict(abouts or {})
        self.ours = ours

    def name(self, feed: bytes) -> str | None:
        """The name to show for `feed`, or None when it has none."""
        petname = self.petnames.get(feed)
        if petname:
            return petname
        about = self.abouts.get(feed)
        return SELF_CHOSEN + about if about else None

    def label(self, feed: bytes) -> str:
        """The name to show for `feed`, else its short id."""
        return self.name(feed) or short_feed(feed)

    def is_ours(self, feed: bytes) -> bool:
        return self.ours is not None and feed == self.ours


def read_petnames(path: Path) -> dict[bytes, str]:
    """The petnames file as feed -> name; {} if there is none; `PetnamesDamaged` if it is
    damaged (not a regular file, too large, not version 1 of the format) or unreadable."""
    damaged = f"{path} is not a petnames file; fix it, or move it aside to start anew"
    try:
        # O_NONBLOCK: opening a FIFO does not wait for a writer; fstat then refuses it
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise PetnamesDamaged(f"{path}: cannot read the petnames: {error.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PetnamesDamaged(f"{damaged} (not a regular file)")
        with os.fdopen(os.dup(fd), "rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        raise PetnamesDamaged(f"{path}: cannot read the petnames: {error.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES:
        raise PetnamesDamaged(f"{damaged} (over {MAX_FILE_BYTES} bytes)")
    try:
        document = json_depth.loads(data)
        names = document["names"]
        version = document.get("version")
        if type(version) is not int or version != 1 or not isinstance(names, dict):
            raise ValueError("not version 1")
        found = {parse_feed(feed): clean_name(name) for feed, name in names.items()}
    except (ValueError, KeyError, TypeError, AttributeError, BadIdentifier, RecursionError):
        raise PetnamesDamaged(damaged) from None
    if len(found) > MAX_PETNAMES:
        raise PetnamesDamaged(f"{damaged} (over {MAX_PETNAMES} names)")
    return {feed: name for feed, name in found.items() if name}
