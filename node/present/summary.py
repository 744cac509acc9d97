"""One line about a message, for every view: what it says, as a person would read it.

Theory of operation
-------------------
`Summaries.line(message)` reads the content the way a person would:

- a post (`{"text": ...}`, with or without `"type": "post"`): its text;
- an `about`: the name a feed gives itself (or another feed);
- a document's `doc/init` and `doc/edit`: the title, the text typed and how
  many characters were deleted;
- a private group message: opened when our keys open it (the group's epoch
  key sealed to our feed, `storage/groups/state.py`), then summarised as above with
  the group's name in front; else `[group] sealed`;
- anything else: compact JSON.

Content is hostile: every summary is one line of printable text (control and
format characters dropped, `storage.views.abouts.clean_name`), cut to a bound.
The CLI's rows (node/cli/summary.py `Viewer`) cut it to the terminal's width;
the web view (node/web/tangles.py, groups.py) shows it whole, escaped. Group
views are read once per group and read again when a message of that group is
not in them yet (a live `watch`), so each group costs one read per new message
at most; the web view hands its own (`know_group`), read through its service.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tanglenode.node.present.render import jsonable
from tanglenode.storage.views.abouts import clean_name

MAX_SUMMARY = 1000  # characters, before a terminal's width cuts it
MAX_OPS = 256  # doc/edit ops read for a summary
GROUP = "group"


def one_line(text: str, limit: int = MAX_SUMMARY) -> str:
    return clean_name(text, limit)


def compact_json(value: Any, limit: int = MAX_SUMMARY) -> str:
    text = json.dumps(jsonable(value, 32), ensure_ascii=False, separators=(",", ":"))
    return one_line(text, limit)


class Summaries:
    """Summaries of messages, with `label` naming feeds; opens group messages with `keypair`
    (read lazily by `keypair_source`) from `store`, when both are given."""

    def __init__(
        self,
        label: Callable[[bytes], str],
        store: Any = None,
        keypair_source: Callable[[], Any] | None = None,
    ) -> None:
        self.label = label
        self._store = store
        self._keypair_source = keypair_source
        self._keypair: Any = None
        self._groups: dict[bytes, Any] = {}

    # -- the parts a view shows --------------------------------------------------------

    def line(self, message: Any) -> str:
        """One line: what `message` says."""
        try:
            return self.content_line(message.content, message)
        except (TypeError, ValueError, KeyError, AttributeError):  # content of a shape not met
            return compact_json(message.content)  # yet: a summary never fails a view

    def opened(self, message: Any) -> dict[str, Any] | None:
        """A group message's private part as JSON, if our keys open it; else None."""
        found = self._open_group(message)
        if found is None or found[1] is None:
            return None
        _name, private = found
        body: dict[str, Any] = {"type": str(private.kind)}
        if private.content is not None or str(private.kind) == "group/post":
            body["content"] = jsonable(private.content)
        if private.members:
            from tanglenode.protocol.identity import feed_text

            body["members"] = [feed_text(member) for member in private.members]
        if private.name:
            body["name"] = private.name
        return body

    def know_group(self, root: bytes, view: Any) -> None:
        """Open the messages of group `root` with `view` (read by the caller, as the web view
        does through its service) rather than by reading the store here."""
        self._groups[root] = view

    # -- content ----------------------------------------------------------------------

    def content_line(self, content: Any, message: Any = None) -> str:
        if isinstance(content, dict):
            if content.get("group") == 1 and "box" in content and message is not None:
                return self._group_line(message)
            kind = content.get("type")
            text = content.get("text")
            if isinstance(text, str) and kind in (None, "post"):
                return one_line(text)
            if kind == "about":
                return self._about_line(content, message)
            if kind == "doc/init" and isinstance(content.get("title"), str):
                return one_line(f"new document “{content['title']}”")
            if kind == "doc/edit":
                return self._edit_line(content)
        if isinstance(content, str):
            return one_line(content)
        return compact_json(content)

    def _about_line(self, content: dict, message: Any) -> str:
        from tanglenode.protocol.errors import BadIdentifier
        from tanglenode.protocol.identity import feed_text, parse_feed

        name = content.get("name")
        about = content.get("about")
        if not isinstance(name, str) or not isinstance(about, str):
            return compact_json(content)
        if message is not None and about == feed_text(message.author):
            return one_line(f"names itself “{name}”")
        try:
            whom = self.label(parse_feed(about))
        except BadIdentifier:
            whom = one_line(about, 60)
        return one_line(f"calls {whom} “{name}”")

    @staticmethod
    def _edit_line(content: dict) -> str:
        ops = content.get("ops")
        if not isinstance(ops, list):
            return compact_json(content)
        typed, deleted, restored = [], 0, 0
        for op in ops[:MAX_OPS]:
            if not isinstance(op, list) or len(op) != 4:
                continue
            if op[0] == "ins" and isinstance(op[3], str):
                typed.append(op[3])
            elif op[0] in ("del", "undel") and type(op[3]) is int:
                if op[0] == "del":
                    deleted += op[3]
                else:
                    restored += op[3]
        parts = []
        if typed:
            parts.append("typed “" + "".join(typed)[:MAX_SUMMARY] + "”")
        if deleted:
            parts.append(f"deleted {deleted}")
        if restored:
            parts.append(f"restored {restored}")
        return one_line("edit: " + (", ".join(parts) or "nothing"))

    # -- private groups ----------------------------------------------------------------

    def _group_line(self, message: Any) -> str:
        found = self._open_group(message)
        if found is None:
            return "[group] sealed"
        name, private = found
        where = f"[group {name}]" if name else "[group]"
        if private is None:
            return f"{where} sealed"
        kind = str(private.kind)
        members = ", ".join(self.label(member) for member in private.members[:20])
        if kind == "group/post":
            return one_line(f"{where} {self.content_line(private.content)}")
        if kind == "group/init":
            return one_line(f"{where} new epoch; members {members}")
        verb = "added" if kind == "group/add-member" else "excluded"
        return one_line(f"{where} {verb} {members}")

    def _open_group(self, message: Any) -> tuple[str | None, Any] | None:
        """(group name, opened private part or None) for a group message; None if unknown."""
        link = message.tangles.get(GROUP)
        if link is None:
            return None
        root = message.id if link.root is None else link.root
        view = self._groups.get(root)
        if view is None or message.id not in view.messages:
            if self._store is None or self._keypair_source is None:
                return None
            view = self._groups[root] = self._read_group(root)
        if view is None:
            return None
        name = view.opened[root].name if root in view.opened else None
        return (one_line(name, 60) if name else None), view.opened.get(message.id)

    def _read_group(self, root: bytes) -> Any:
        from tanglenode.storage.groups.state import GroupError, read_group

        if self._keypair is None:
            from tanglenode.config.settings import ConfigError

            try:
                self._keypair = self._keypair_source()  # type: ignore[misc]
            except ConfigError:  # no secret key (or one we may not read): nothing opens
                self._keypair_source = None
                return None
        try:
            return read_group(self._store, self._keypair, root)
        except GroupError:
            return None
