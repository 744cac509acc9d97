"""`/tangles` and `/t/NAME/ROOT`: a tangle's timeline, kept live by its `ins`/`mov` stream.

Theory of operation
-------------------
Seed 000 §1.2 and §3: a view whose list is a replica of the shared array,
updated by each command. `/t/NAME/ROOT` (ROOT: the root's id without its
`%`) renders the tangle's timeline at one version, server-side, with each
row's author (by name), claimed time, one-line content and state in the
joined view (a `pending` row waits for a message it names; an `invalid`
one never joins). The table carries that version. `view.js` then opens
`/t/NAME/ROOT/events?since=VERSION` and applies each command as it comes:
`ins` (a row, rendered here, inserted at a position), `mov` (a row moved from
one position to another: a late message placed ahead of it), `del` (a row a
fork proof removed). Every frame's id is the version it reaches, so a
browser that loses the connection reconnects with `Last-Event-ID` and
resumes after the last command it applied.

A row's state can change with no command on the timeline (a pending row
joins when what it waits for arrives). Each stream remembers the rows it
sent as pending (at most `MAX_WATCHED`) and, with each page of commands,
reads their states again and sends those that changed.

At most `MAX_ROWS` rows are rendered: a longer tangle shows its last ones,
and the table says where they start (`data-start`); the script shifts that
offset for commands before it, and reloads the page when a move carries a
row across it (it has no content for a row it never got).
"""

from __future__ import annotations

from typing import Any

from tanglenode.node.cli.names import Names
from tanglenode.node.cli.summary import Summaries
from tanglenode.node.cli.terminal import safe
from tanglenode.node.web.events import event_stream, frame, resume_version
from tanglenode.node.web.http import (
    Request,
    Response,
    WebContext,
    html_response,
    not_found,
    parse_root,
    root_text,
    segment,
    text_response,
)
from tanglenode.node.web.page import e, shell, when
from tanglenode.protocol.identity import feed_text, message_text
from tanglenode.protocol.ipc import PAGE, PAGE_BYTES
from tanglenode.storage.errors import UnknownTimeline
from tanglenode.storage.groups import GROUP, GroupError
from tanglenode.storage.store import FeedStore
from tanglenode.storage.timeline import Delete, Insert

MAX_ROWS = 5000  # rows rendered on a tangle's page
MAX_WATCHED = 2000  # pending rows a stream re-reads the state of
MAX_GROUPS = 64  # groups a page of rows opens, at most
MAX_NAME = 1024  # characters of a tangle name in a path
INDEX_PAGE = 100  # tangles on a page of /tangles
PENDING = "pending"


def tangle_path(name: str, root: bytes) -> str:
    """The page of tangle (name, root), without the token."""
    return f"/t/{segment(name)}/{segment(root_text(root))}"


async def _timeline(web: WebContext, timeline: bytes, limit: int | None = None):
    """(version, entries with states); a tangle not seen yet is empty at version 0."""
    try:
        return await web.service.timeline_page(timeline, 0, limit, states=True)
    except UnknownTimeline:
        return 0, []


# -- rows ------------------------------------------------------------------------------


def row_fields(message: Any, names: Names, summaries: Summaries) -> dict[str, Any]:
    """What a row shows of `message`: JSON for the script, text for the page."""
    return {
        "id": message_text(message.id),
        "author": safe(names.label(message.author)),
        "feed": feed_text(message.author),
        "time": when(message.timestamp),
        "text": safe(summaries.line(message)),
    }


def row_html(row: dict[str, Any], state: str) -> str:
    """One `<tr>` of the timeline (the script builds the same from `row_fields`)."""
    return (
        f"<tr data-id='{e(row['id'])}' data-state='{e(state)}' class='{e(state)}'>"
        f"<td class='pos'></td><td class='author' title='{e(row['feed'])}'>{e(row['author'])}</td>"
        f"<td class='time'>{e(row['time'])}</td><td class='text'>{e(row['text'])}</td></tr>"
    )


async def _summaries(web: WebContext, names: Names, messages: list[Any]) -> Summaries:
    """Summaries that open the group messages among `messages` with our keys, each group
    read once through the service (never the store from the event loop)."""
    summaries = Summaries(names.label)
    roots = set()
    for message in messages:
        link = message.tangles.get(GROUP)
        if link is not None:
            roots.add(message.id if link.root is None else link.root)
    for root in sorted(roots)[:MAX_GROUPS]:
        try:
            summaries.know_group(root, await web.service.group(web.keypair, root))
        except GroupError:  # not a group of ours, or not one at all: sealed
            continue
    return summaries


async def _rows(web: WebContext, names: Names, messages: list[Any]) -> dict[bytes, dict]:
    """What each row of `messages` shows, by id."""
    summaries = await _summaries(web, names, messages)
    return {message.id: row_fields(message, names, summaries) for message in messages}


# -- the pages -------------------------------------------------------------------------


async def index(web: WebContext, request: Request) -> Response:
    """`/tangles`: a page of the tangles held, in (root, name) order, `?after=` the next."""
    after = None
    if "after_root" in request.query:
        root = parse_root(request.query["after_root"])
        if root is None:
            return text_response("after_root: not a message id\n", 400)
        after = (root, request.query.get("after_name", "")[:MAX_NAME])
    infos, cursor = await web.service.tangles(after, INDEX_PAGE)
    names = await web.names()
    rows = [
        f"<tr><td><a href='{e(web.link(tangle_path(info.name, info.root)))}'>"
        f"{e(safe(info.name))}</a></td><td>{info.messages}</td><td>{info.joined}</td>"
        f"<td>{info.pending}</td><td>{e(when(info.last))}</td>"
        f"<td>{e(safe(names.label(info.author))) if info.author else '?'}</td></tr>"
        for info in infos
    ]
    more = ""
    if cursor is not None:
        root, name = cursor
        link = web.link("/tangles", after_root=root_text(root), after_name=name)
        more = f"<p><a href='{e(link)}'>more tangles</a></p>"
    body = (
        "<h1>Tangles</h1><table><thead><tr><th>tangle</th><th>messages</th><th>joined</th>"
        "<th>pending</th><th>last activity (UTC)</th><th>started by</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
        + (more if rows else "<p class='muted'>No tangles yet.</p>")
    )
    return html_response(shell(web, "tangles", body))


async def page(web: WebContext, request: Request) -> Response:
    """`/t/NAME/ROOT`: the timeline at one version, then live by the script."""
    name, given = request.args
    root = parse_root(given)
    if root is None or len(name) > MAX_NAME:
        return not_found("no such tangle: the root is not a message id")
    timeline = FeedStore.timeline_name(root, name)
    version, entries = await _timeline(web, timeline)
    start = max(0, len(entries) - MAX_ROWS)
    names = await web.names()
    held = await web.service.messages([msg_id for _, msg_id, _ in entries[start:]])
    fields = await _rows(web, names, [message for message in held if message is not None])
    rows = [  # a message removed between the two reads is left out: the stream deletes it
        row_html(fields[msg_id], state) for _, msg_id, state in entries[start:] if msg_id in fields
    ]
    pending = sum(1 for entry in entries if entry[2] == PENDING)
    root_message = await web.service.message(root)
    by = f" started by {e(safe(names.label(root_message.author)))}" if root_message else ""
    events = web.link(tangle_path(name, root) + "/events")
    shown = f", the last {len(rows)} shown" if start else ""
    body = (
        f"<h1>{e(safe(name))}</h1><p class='muted'>root <code>{e(message_text(root))}</code>"
        f"{by} · <span id='count'>{len(entries)}</span> messages{shown}, "
        f"<span id='pending-count'>{pending}</span> "
        "pending · <span id='live' class='live' data-state='connecting'>connecting</span></p>"
        f"<table id='timeline' data-tangle-events='{e(events)}' data-version='{version}' "
        f"data-start='{start}'><thead><tr><th>#</th><th>author</th><th>time (UTC)</th>"
        "<th>content</th></tr></thead>"
        f"<tbody style='counter-reset:pos {start}'>{''.join(rows)}</tbody></table>"
    )
    return html_response(shell(web, name, body, script=True))


# -- the live stream -------------------------------------------------------------------


class _TangleStream:
    """One browser's stream: pages of commands from a version, and state changes."""

    def __init__(self, web: WebContext, timeline: bytes, watched: set[bytes]) -> None:
        self.web = web
        self.timeline = timeline
        self.pending = watched  # rows sent as pending, watched until they change

    async def next_page(self, version: int) -> tuple[list[bytes], int] | None:
        service = self.web.service
        try:
            _, updates = await service.timeline_updates(self.timeline, version, PAGE, PAGE_BYTES)
        except UnknownTimeline:  # not seen yet: its first member will make it
            return None
        changed = await self._state_changes()
        if not updates:
            if not changed:
                return None
            return [frame("states", {"states": changed})], version
        names = await self.web.names()
        inserted = [command.id for command, _ in updates if isinstance(command, Insert)]
        fields = await _rows(self.web, names, [message for _, message in updates if message])
        found = await service.member_states(self.timeline, inserted)
        states = dict(zip(inserted, found, strict=True))
        commands: list[dict[str, Any]] = []
        for command, _message in updates:
            if isinstance(command, Insert):
                state = states[command.id]
                if state == PENDING and len(self.pending) < MAX_WATCHED:
                    self.pending.add(command.id)
                row = fields.get(command.id, {})
                commands.append({"ins": command.pos, "row": row, "state": state})
            elif isinstance(command, Delete):
                commands.append({"del": command.pos})
            else:
                commands.append({"mov": [command.src, command.dst]})
        reached = version + len(updates)
        body: dict[str, Any] = {"commands": commands}
        if changed:
            body["states"] = changed
        return [frame("commands", body, reached)], reached

    async def _state_changes(self) -> dict[str, str]:
        """The watched pending rows whose state changed since they were sent."""
        if not self.pending:
            return {}
        watched = sorted(self.pending)
        service = self.web.service
        states = await service.member_states(self.timeline, watched)
        changed = {}
        for msg_id, state in zip(watched, states, strict=True):
            if state != PENDING:
                self.pending.discard(msg_id)
                changed[message_text(msg_id)] = state
        return changed


async def events(web: WebContext, request: Request) -> Response:
    """`/t/NAME/ROOT/events`: the commands after `Last-Event-ID` (or `?since=`), live."""
    name, given, what = request.args
    root = parse_root(given)
    if what != "events" or root is None or len(name) > MAX_NAME:
        return not_found()
    since = resume_version(request.last_event_id, request.query.get("since"))
    if since is None:
        return text_response("since: a version is needed\n", 400)
    timeline = FeedStore.timeline_name(root, name)
    version, _ = await _timeline(web, timeline, 0)
    if since > version:  # a version this timeline never had: the page must start again
        return event_stream(web, [frame("reset", {"version": version})], version, _nothing)
    # The rows not joined now: the page may show some as pending that joined since.
    _, entries = await _timeline(web, timeline)
    unjoined = [(msg_id, state) for _, msg_id, state in entries if state != "joined"]
    states = {message_text(msg_id): state for msg_id, state in unjoined[:MAX_WATCHED]}
    first = frame("unjoined", {"states": states, "complete": len(unjoined) <= MAX_WATCHED})
    watched = {msg_id for msg_id, state in unjoined[:MAX_WATCHED] if state == PENDING}
    return event_stream(web, [first], since, _TangleStream(web, timeline, watched).next_page)


async def _nothing(_version: int) -> None:
    return None
