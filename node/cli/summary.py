"""A message's row in the CLI's views: its author, time and summary, cut to the terminal.

What a message says in one line is node/present/summary.py's `Summaries`, shared
with the web view (its names are kept here for the commands and tests that
import them from the CLI); this module fits it to a terminal (`fit`, wide
characters counted two columns) and makes the views' rows (`Viewer`: as text
for a person, or as JSON fields with ids only).
"""

from __future__ import annotations

import shutil
import sys
import unicodedata
from collections.abc import Callable
from typing import Any

from tanglenode.node.present.render import TIME_WIDTH, format_timestamp
from tanglenode.node.present.summary import GROUP as GROUP
from tanglenode.node.present.summary import MAX_OPS as MAX_OPS
from tanglenode.node.present.summary import MAX_SUMMARY as MAX_SUMMARY
from tanglenode.node.present.summary import Summaries
from tanglenode.node.present.summary import compact_json as compact_json
from tanglenode.node.present.summary import one_line as one_line
from tanglenode.node.present.text import safe


def terminal_width() -> int | None:
    """Columns of the terminal stdout is, or None when it is not one."""
    if not sys.stdout.isatty():
        return None
    return shutil.get_terminal_size((100, 24)).columns


def _columns(char: str) -> int:
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def fit(line: str, width: int | None) -> str:
    """`line` cut to `width` terminal columns (wide characters count two), with an
    ellipsis (None: as is)."""
    if width is None or len(line) <= width // 2:
        return line
    if sum(_columns(char) for char in line) <= width:
        return line
    used, kept = 0, 0
    for char in line:
        if used + _columns(char) > width - 1:  # one column left for the ellipsis
            break
        used += _columns(char)
        kept += 1
    return line[:kept] + "…"


# -- a view's rows -------------------------------------------------------------------

AUTHOR_WIDTH = 14
ID_WIDTH = 44  # a message id, `%` and 43 characters of base64
SHORT_ID_WIDTH = 10  # `%AbCdEfGh…`, as feeds are shortened (names.short_feed)
CONTENT_ROOM = 40  # columns a row leaves for content before its ids are shortened


class Viewer:
    """What a view adds to an id: the message's author, time and summary, as text for a
    person (names, cut to the terminal) or as JSON fields (ids only)."""

    def __init__(self, names: Any, store: Any, keypair_source: Callable[[], Any]) -> None:
        from tanglenode.protocol.identity import feed_text

        self.names = names
        self.store = store
        self.width = terminal_width()
        self.human = Summaries(names.label, store, keypair_source)
        self.machine = Summaries(feed_text, store, keypair_source)

    def message(self, msg_id: bytes) -> Any:
        """The stored message `msg_id`, or None."""
        return None if self.store is None else self.store.feeds.get(msg_id)

    def columns(self, message: Any) -> str:
        """`author  time  summary` for a person ('?' columns for a message not held)."""
        if message is None:
            return f"{'?':<{AUTHOR_WIDTH}}  {'?':<{TIME_WIDTH}}  (not in the store)"
        author = fit(safe(self.names.label(message.author)), AUTHOR_WIDTH)
        return (
            f"{author:<{AUTHOR_WIDTH}}  {format_timestamp(message.timestamp):<{TIME_WIDTH}}  "
            f"{safe(self.human.line(message))}"
        )

    def fields(self, message: Any) -> dict[str, Any]:
        """`author`, `timestamp` and `summary` for JSON ({} for a message not held)."""
        from tanglenode.protocol.identity import feed_text

        if message is None:
            return {}
        found = {
            "author": feed_text(message.author),
            "timestamp": message.timestamp,
            "summary": self.machine.line(message),
        }
        opened = self.machine.opened(message)
        return found | ({"private": opened} if opened is not None else {})

    def id_width(self, before: int, after: int = 0) -> int:
        """Columns for the message ids of a view whose rows hold `before` columns ahead of
        the id and `after` between it and the author: whole ids, unless on a terminal too
        narrow to leave `CONTENT_ROOM` for the content (piped output keeps whole ids)."""
        whole = before + ID_WIDTH + after + len(self.header("")) - len("CONTENT")
        if self.width is not None and self.width < whole + CONTENT_ROOM:
            return SHORT_ID_WIDTH
        return ID_WIDTH

    @staticmethod
    def id_text(msg_id: bytes, width: int = ID_WIDTH) -> str:
        """`msg_id` as `%…`, cut to `width` columns with an ellipsis (whole at `ID_WIDTH`)."""
        from tanglenode.protocol.identity import message_text

        text = message_text(msg_id)
        return text if len(text) <= width else text[: width - 1] + "…"

    def row(self, prefix: str, msg_id: bytes) -> str:
        return fit(f"{prefix}  {self.columns(self.message(msg_id))}", self.width)

    @staticmethod
    def header(prefix: str) -> str:
        return f"{prefix}  {'AUTHOR':<{AUTHOR_WIDTH}}  {'TIME (UTC)':<{TIME_WIDTH}}  CONTENT"


def open_viewer(obj: Any, store: Any, *, as_json: bool = False) -> Viewer:
    """A `Viewer` over an open store (None: ids only), with our names and keys; for
    `as_json` output, which shows ids, without reading any names."""
    from tanglenode.config.secret import read_secret
    from tanglenode.node.cli.names import ids_only, load_names

    names = ids_only(obj) if as_json else load_names(obj, store)
    return Viewer(names, store, lambda: read_secret(obj.settings.secret_path))
