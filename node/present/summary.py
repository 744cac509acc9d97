"""One line about a message, for every view: what it says, as a person would read it.

Theory of operation
-------------------
`Summaries.line(message)` reads the content the way a person would:

- a post (`{"text": ...}`, with or without `"type": "post"`): the first line
  of its text, `…` after it when more follows;
- an `about`: the name a feed gives itself (or another feed);
- a `contact` (protocol/contacts.py): `follows ~name`, `unfollows`,
  `blocks`, `unblocks`, the feed by `label` (petname, `~self-chosen` name
  from the about-names view, else a short id);
- a document's `doc/init`: its title; a `doc/edit`: `+N -M in “title”`,
  code points typed and deleted (and restored, if any), the title read
  from the document's root message in the store (once per document; with
  no store, as the web view's are, the root's short id);
- a private group message: opened when our keys open it (the group's epoch
  key sealed to our feed, `storage/groups/state.py`), then summarised as above with
  the group's name in front; else `[group] sealed`;
- anything else: its `type` and the rest as compact JSON, or compact JSON.

Content is hostile: every summary is one line (`one_line`: whitespace runs as
one space; control, format and bidi characters as `?`, as node/present/text.py
shows them, so no escape sequence reaches a terminal), cut to `MAX_SUMMARY`
characters with `…`, whatever the message holds; the work is bounded too (a
cut read of the text, at most `MAX_OPS` ops counted). The CLI's rows
(node/cli/summary.py `Viewer`) cut it to the terminal's width; the web view
(node/web/tangles.py, groups.py) shows it escaped. Group views are read once
per group and read again when a message of that group is not in them yet (a
live `watch`), so each group costs one read per new message at most; the web
view hands its own (`know_group`), read through its service.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from unicodedata import category

from tanglenode.node.present.render import jsonable
from tanglenode.node.present.text import REPLACEMENT, unsafe
from tanglenode.protocol.document import MAX_OPS as MAX_OPS  # an edit's ops, all counted

MAX_SUMMARY = 200  # characters of a summary: one line of a log, not the message
MAX_TITLE = 60  # characters of a document's title in an edit's summary
GROUP = "group"
MAX_TITLES = 4096  # documents' titles kept by one `Summaries` (a long log reads each once)
_ZWJ = "\u200d"  # kept between two symbols (an emoji sequence), else shown as `?`


def one_line(text: str, limit: int = MAX_SUMMARY) -> str:
    """`text` as one line to show: whitespace runs as one space, each control, format or
    bidi character as `?`, at most `limit` characters (the last one `…` when cut)."""
    cut = text[: limit * 4 + 8]  # the cut bounds the work; what survives is cut again
    words = " ".join(cut.split())
    if not words.isprintable():
        shown = []
        for at, char in enumerate(words):
            if char == _ZWJ and 0 < at < len(words) - 1 and _symbols(words[at - 1], words[at + 1]):
                shown.append(char)
            else:
                shown.append(REPLACEMENT if unsafe(char) else char)
        words = "".join(shown)
    if len(words) > limit or (len(cut) < len(text) and cut.split()):
        return words[: limit - 1].rstrip() + "…"
    return words


def _symbols(before: str, after: str) -> bool:
    """Whether a zero-width joiner between `before` and `after` joins an emoji sequence."""
    return category(before) in ("So", "Sk", "Mn") and category(after) == "So"


def first_line(text: str, limit: int = MAX_SUMMARY) -> str:
    """The first line of `text` that holds something, as `one_line`, with `…` when more
    lines follow."""
    head = text[: limit * 4 + 8]
    lines = head.strip().splitlines()
    if not lines:
        return ""
    first = one_line(lines[0], limit)
    more = len(lines) > 1 or len(head) < len(text.rstrip())
    return first if first.endswith("…") or not more else one_line(first + " …", limit)


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
        self._titles: dict[bytes, str] = {}  # a document's root -> how its edits name it

    # -- the parts a view shows --------------------------------------------------------

    def line(self, message: Any) -> str:
        """One line: what `message` says."""
        if getattr(message, "has_content", True) is False:
            return "(content not held: erased or purged)"
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
                return first_line(text)
            if kind == "about":
                return self._about_line(content, message)
            if kind == "contact":
                return self._contact_line(content, message)
            if kind == "doc/init" and isinstance(content.get("title"), str):
                return one_line(f"new document “{one_line(content['title'], MAX_TITLE)}”")
            if kind == "doc/edit":
                return self._edit_line(content, message)
            if isinstance(kind, str):
                rest = {key: value for key, value in content.items() if key != "type"}
                return one_line(f"{one_line(kind, 40)} {compact_json(rest)}")
        if isinstance(content, str):
            return first_line(content)
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

    def _contact_line(self, content: dict, message: Any) -> str:
        from tanglenode.protocol.contacts import contact_said

        said = contact_said(content, message.author if message is not None else b"")
        if said is None:  # a contact message that says nothing (protocol/contacts.py)
            return one_line(f"contact {compact_json(content)}")
        if said.blocking:
            verb = "blocks"
        elif said.following:
            verb = "follows"
        elif said.following is False:
            verb = "unfollows"
        else:
            verb = "unblocks"
        return one_line(f"{verb} {self.label(said.contact)}")

    def _edit_line(self, content: dict, message: Any) -> str:
        ops = content.get("ops")
        if not isinstance(ops, list):
            return compact_json(content)
        typed = deleted = restored = 0
        for op in ops[:MAX_OPS]:
            if not isinstance(op, list) or len(op) != 4:
                continue
            if op[0] == "ins" and isinstance(op[3], str):
                typed += len(op[3])
            elif op[0] in ("del", "undel") and type(op[3]) is int and op[3] > 0:
                if op[0] == "del":
                    deleted += op[3]
                else:
                    restored += op[3]
        again = f", {restored} restored" if restored else ""
        return one_line(f"+{typed} -{deleted}{again} in {self._document(message)}")

    def _document(self, message: Any) -> str:
        """The document `message` edits, as its edit's summary names it: “title”, else its
        root's short id (no store to read, or the root not held)."""
        from tanglenode.protocol.document import TANGLE
        from tanglenode.protocol.identity import message_text

        link = message.tangles.get(TANGLE) if message is not None else None
        root = None if link is None else link.root
        if root is None:
            return "a document"
        if root not in self._titles:
            title = None
            held = self._store.feeds.get(root) if self._store is not None else None
            content = getattr(held, "content", None)
            if isinstance(content, dict) and isinstance(content.get("title"), str):
                title = "“" + one_line(content["title"], MAX_TITLE) + "”"
            if len(self._titles) >= MAX_TITLES:
                self._titles.clear()
            self._titles[root] = title or message_text(root)[:9] + "…"
        return self._titles[root]

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
