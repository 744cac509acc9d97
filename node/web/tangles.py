"""`/tangles` and `/t/NAME/ROOT`: a tangle's timeline, kept live by its `ins`/`mov` stream.

Theory of operation
-------------------
A view whose list is a replica of the timeline, updated by each command
(docs/TIMELINES.md, "Replicas"). `/t/NAME/ROOT` (ROOT: the root's id without its
`%`) renders the tangle's timeline at one version, server-side, with each
row's author (by name), claimed time, one-line content and state in the
joined view (a `pending` row waits for a message it names; an `invalid`
one never joins). The table carries that version. `view.js` then opens
`/t/NAME/ROOT/events?since=VERSION` and applies each command as it comes:
`ins` (a row, rendered here, inserted at a position), `mov` (a row moved from
one position to another: a late message placed ahead of it), `del` (a row a
fork proof removed). Every frame's id is the version it reaches, so a
browser that loses the connection reconnects with `Last-Event-ID` and
resumes after the last command it applied. The log holds only the commands
after its floor (its retention drops the oldest, storage/engine/command_log.py;
a rebuild restarts it): a stream asked to start below it, or that falls
below it while following, sends `reset` and nothing more, and the script
reloads the page, which is drawn at the version the timeline has now.

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

from tanglenode.node.present.names import Names
from tanglenode.node.present.summary import Summaries
from tanglenode.node.present.text import safe
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
from tanglenode.node.web.page import compose, e, listing, shell, when
from tanglenode.protocol.document import INIT, is_document
from tanglenode.protocol.document import TANGLE as DOC_TANGLE
from tanglenode.protocol.identity import feed_text, message_text
from tanglenode.protocol.ipc import PAGE, PAGE_BYTES
from tanglenode.protocol.limits import MAX_TANGLE_NAME_BYTES
from tanglenode.protocol.message import Message
from tanglenode.storage.documents.sealed import is_sealed
from tanglenode.storage.engine.timeline import Delete, Insert
from tanglenode.storage.errors import BelowLogFloor
from tanglenode.storage.groups.state import EPOCH, GROUP, MEMBERS, GroupError, read_group
from tanglenode.storage.views.timelines import timeline_name

MAX_ROWS = 5000  # rows rendered on a tangle's page
MAX_WATCHED = 2000  # pending rows a stream re-reads the state of
MAX_GROUPS = 64  # groups a page of rows opens, at most
INDEX_PAGE = 100  # tangles on a page of /tangles
PENDING = "pending"


def tangle_path(name: str, root: bytes) -> str:
    """The page of tangle (name, root), without the token."""
    return f"/t/{segment(name)}/{segment(root_text(root))}"


def thread_path(name: str, root: bytes) -> str:
    """The thread page of conversation (name, root), without the token (node/web/thread.py)."""
    return f"/thread/{segment(name)}/{segment(root_text(root))}"


def _tangle(args: tuple[str, ...]) -> tuple[str, bytes] | None:
    """(name, root) of a path's NAME and ROOT; None when they can be no tangle's."""
    name, given = args[0], args[1]
    root = parse_root(given)
    if root is None or len(name.encode("utf-8", "surrogatepass")) > MAX_TANGLE_NAME_BYTES:
        return None
    return name, root


# -- rows ------------------------------------------------------------------------------


# On our own messages: erase it everywhere (IPC `delete`, view.js asks first).
ERASE_BUTTON = "<button type='button' class='erase' data-erase>delete</button>"


def row_fields(message: Any, names: Names, summaries: Summaries) -> dict[str, Any]:
    """What a row shows of `message`: JSON for the script, text for the page."""
    erased = not message.has_content
    return {
        "id": message_text(message.id),
        "author": safe(names.label(message.author)),
        "feed": feed_text(message.author),
        "time": when(message.timestamp),
        "text": "(erased)" if erased else safe(summaries.line(message)),
        "erasable": names.is_ours(message.author) and not erased,  # ours: a delete button
    }


def row_html(row: dict[str, Any], state: str) -> str:
    """One `<tr>` of the timeline (the script builds the same from `row_fields`)."""
    erase = ERASE_BUTTON if row["erasable"] else ""
    return (
        f"<tr data-id='{e(row['id'])}' data-state='{e(state)}' class='{e(state)}'>"
        f"<td class='pos'></td><td class='author' title='{e(row['feed'])}'>{e(row['author'])}</td>"
        f"<td class='time'>{e(row['time'])}</td><td class='text'>{e(row['text'])}</td>"
        f"<td class='actions'>{erase}</td></tr>"
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
            summaries.know_group(root, await web.service.read(read_group, web.keypair, root))
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
        after = (root, request.query.get("after_name", "")[:MAX_TANGLE_NAME_BYTES])

    def page_and_roots(store):
        infos, cursor = store.tangles.tangle_page(after, INDEX_PAGE)
        return infos, cursor, {info.root: store.feeds.get(info.root) for info in infos}

    infos, cursor, roots = await web.service.read(page_and_roots)
    names = await web.names()
    more = None
    if cursor is not None:
        root, name = cursor
        more = web.link("/tangles", after_root=root_text(root), after_name=name)
    headers = ["tangle", "root", "messages", "joined", "pending", "last activity (UTC)"]
    headers.append("started by")
    body = "<h1>Tangles</h1>" + compose("publish", "Start a conversation", {}, name_field=True)
    for kind, title in KINDS:
        rows = [
            _index_row(web, names, info)
            for info in infos
            if kind_of(info.name, roots.get(info.root)) == kind
        ]
        if rows:
            body += f"<h2>{title}</h2>" + listing(f"tangles-{kind}", headers, rows, "", None)
    if not infos:
        body += "<p class='muted'>No tangles yet.</p>"
    if more:
        body += f"<p><a href='{e(more)}'>more tangles</a></p>"
    return html_response(shell(web, "tangles", body, script=True))


# What a tangle is for: the conversations people write, a private group's own tangles
# (its chat, members and epochs: docs/GROUPS.md), and documents. Decided by the name and
# what its root holds, as anyone may name a conversation `doc` or `members`.
KINDS = [
    ("conversation", "Conversations"),
    ("document", "Documents"),
    ("group", "Private groups' tangles (their chat, members, epochs)"),
]
GROUP_TANGLES = frozenset({GROUP, MEMBERS, EPOCH})


def kind_of(name: str, root: Message | None) -> str:
    """`group` for a group's tangle rooted at a group envelope, `document` for a `doc`
    tangle rooted at a document's init (public or sealed), else `conversation` (a
    root not held included: nothing shows what it is)."""
    content = None if root is None else root.content
    if name in GROUP_TANGLES and is_sealed(content) and content.get("epoch") is None:
        return "group"
    doc_init = is_document(content) and content["type"] == INIT
    if name == DOC_TANGLE and (doc_init or is_sealed(content)):
        return "document"
    return "conversation"


def _index_row(web: WebContext, names: Names, info: Any) -> str:
    """One tangle of `/tangles`: its name, its root's short id (names repeat), counts."""
    return (
        f"<tr><td><a href='{e(web.link(tangle_path(info.name, info.root)))}'>"
        f"{e(safe(info.name))}</a></td><td><code>{e(message_text(info.root)[:10])}</code></td>"
        f"<td>{info.messages}</td><td>{info.joined}</td>"
        f"<td>{info.pending}</td><td>{e(when(info.last))}</td>"
        f"<td>{e(safe(names.label(info.author))) if info.author else '?'}</td></tr>"
    )


async def page(web: WebContext, request: Request) -> Response:
    """`/t/NAME/ROOT`: the timeline's last `MAX_ROWS` rows at one version, then live."""
    found = _tangle(request.args)
    if found is None:
        return not_found("no such tangle: the root is not a message id, or the name too long")
    name, root = found
    timeline = timeline_name(root, name)
    version, start, entries = await web.service.read(
        lambda store: store.timelines.timeline_tail(timeline, MAX_ROWS)
    )
    names = await web.names()
    ids = [msg_id for _, msg_id, _ in entries]
    held = await web.service.read(lambda store: [store.feeds.get(msg_id) for msg_id in ids])
    fields = await _rows(web, names, [message for message in held if message is not None])
    missing = {"id": "", "author": "?", "feed": "", "time": "?", "text": "(not in the store)"}
    rows = [  # a message removed since the order was read keeps its place: the stream deletes it
        row_html(fields.get(msg_id, missing | {"id": message_text(msg_id)}), state)
        for _, msg_id, state in entries
    ]
    pending = sum(1 for entry in entries if entry[2] == PENDING)
    root_message = await web.service.read(lambda store: store.feeds.get(root))
    by = f" started by {e(safe(names.label(root_message.author)))}" if root_message else ""
    if kind_of(name, root_message) == "conversation":
        by += f" · <a href='{e(web.link(thread_path(name, root)))}'>read as a conversation</a>"
    events = web.link(tangle_path(name, root) + "/events")
    shown = f", the last {len(rows)} shown" if start else ""
    body = (
        f"<h1>{e(safe(name))}</h1><p class='muted'>root <code>{e(message_text(root))}</code>"
        f"{by} · <span id='count'>{start + len(entries)}</span> messages{shown}, "
        f"<span id='pending-count'>{pending}</span> "
        "pending · <span id='live' class='live' data-state='connecting'>connecting</span></p>"
        f"<table id='timeline' data-tangle-events='{e(events)}' data-version='{version}' "
        f"data-start='{start}'><thead><tr><th>#</th><th>author</th><th>time (UTC)</th>"
        "<th>content</th><th></th></tr></thead>"
        f"<tbody style='counter-reset:pos {start}'>{''.join(rows)}</tbody></table>"
    )
    body += compose("publish", "Write a reply", {"tangle": name, "root": message_text(root)})
    return html_response(shell(web, safe(name), body, script=True))


# -- the live stream -------------------------------------------------------------------


class _TangleStream:
    """One browser's stream: pages of commands from a version, and state changes."""

    def __init__(self, web: WebContext, timeline: bytes) -> None:
        self.web = web
        self.timeline = timeline
        self.pending: set[bytes] = set()  # rows sent as pending, watched until they change
        self.names: Names | None = None
        self.reset = False  # `reset` sent: the page reloads, this stream has nothing more

    async def unjoined(self) -> bytes:
        """The frame of the shown rows not joined now, and they are watched from now on.

        Sent first (the page may show as pending a row that joined since it was drawn),
        and again after a deletion (a feed cut back makes joined rows pending again)."""
        timeline = self.timeline
        _, start, entries = await self.web.service.read(
            lambda store: store.timelines.timeline_tail(timeline, MAX_ROWS)
        )
        unjoined = [(msg_id, state) for _, msg_id, state in entries if state != "joined"]
        kept = unjoined[-MAX_WATCHED:]  # the newest, as the page shows the newest
        self.pending = {msg_id for msg_id, state in kept if state == PENDING}
        states = {message_text(msg_id): state for msg_id, state in kept}
        complete = start == 0 and len(kept) == len(unjoined)  # else older rows are unknown
        return frame("unjoined", {"states": states, "complete": complete})

    async def _names(self, messages: list[Any]) -> Names:
        """Names, read again only when the page holds an `about` or an author not named yet
        (reading them costs a scan of every name)."""
        if self.names is None or any(
            self.names.name(message.author) is None
            or (isinstance(message.content, dict) and message.content.get("type") == "about")
            for message in messages
        ):
            self.names = await self.web.names()
        return self.names

    async def next_page(self, version: int) -> tuple[list[bytes], int] | None:
        service = self.web.service
        timeline = self.timeline
        if self.reset:
            return None
        try:
            _, updates = await service.read(
                lambda store: store.timelines.timeline_updates(timeline, version, PAGE, PAGE_BYTES)
            )
        except BelowLogFloor:  # the log dropped commands the page still needs: draw it anew
            self.reset = True
            head = await service.read(lambda store: store.timelines.timeline_version(timeline))
            return [frame("reset", {"version": head})], version
        changed = await self._state_changes()
        if not updates:
            if not changed:
                return None
            return [frame("states", {"states": changed})], version
        names = await self._names([message for _, message in updates if message])
        inserted = [command.id for command, _ in updates if isinstance(command, Insert)]
        fields = await _rows(self.web, names, [message for _, message in updates if message])
        found = await service.read(lambda store: store.timelines.member_states(timeline, inserted))
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
        frames = [frame("commands", body, reached)]
        if any(isinstance(command, Delete) for command, _ in updates):
            frames.append(await self.unjoined())
        return frames, reached

    async def _state_changes(self) -> dict[str, str]:
        """The watched pending rows whose state changed since they were sent."""
        if not self.pending:
            return {}
        watched = sorted(self.pending)
        service = self.web.service
        timeline = self.timeline
        states = await service.read(lambda store: store.timelines.member_states(timeline, watched))
        changed = {}
        for msg_id, state in zip(watched, states, strict=True):
            if state != PENDING:
                self.pending.discard(msg_id)
                changed[message_text(msg_id)] = state
        return changed


async def events(web: WebContext, request: Request) -> Response:
    """`/t/NAME/ROOT/events`: the commands after `Last-Event-ID` (or `?since=`), live."""
    found = _tangle(request.args)
    if request.args[2] != "events" or found is None:
        return not_found()
    since = resume_version(request.last_event_id, request.query.get("since"))
    if since is None:
        return text_response("since: a version is needed\n", 400)
    timeline = timeline_name(found[1], found[0])
    version, _, _ = await web.service.read(lambda store: store.timelines.timeline_tail(timeline, 0))
    floor = await web.service.read(lambda store: store.timelines.timeline_floor(timeline))
    if not floor <= since <= version:  # a version it never had, or below its log: start again
        return event_stream(web, [frame("reset", {"version": version})], version, _nothing)
    stream = _TangleStream(web, timeline)
    return event_stream(web, [await stream.unjoined()], since, stream.next_page)


async def _nothing(_version: int) -> None:
    return None
