"""`/doc/ROOT/events`: a document's text, live, as server-sent events with blame colours.

Theory of operation
-------------------
The page (`/doc/ROOT`, node/web/docs.py) is rendered from a *blamed
snapshot*: the version and the text at the processed frontier, each run of
it with the author who typed it. Its event stream then continues that text
from that version (`?since=`, or the browser's `Last-Event-ID` after a
reconnect) with `node.ipc.docs.DocWatch`, the pages the IPC `doc-watch`
stream sends, so the web and `tangled doc watch` see the same splices.

Frames (node/web/events.py `frame`), each with `id:` = the version it
brings the text to, so a browser that reconnects resumes after it:

- `splice`: one version's splices (`["ins", pos, text]` / `["del", pos,
  length]`, positions in code points, in order), with the author of the
  edit (id, name, colour) so the new text is coloured as it arrives;
- `snapshot`: the whole text in runs `{text, author, name, colour}`; the
  frame with `start` 0 replaces the text, the ones after it (a long text is
  cut every `SNAPSHOT_CHARS` code points) append to it, and only the last
  (`last`: true) carries the version, so a browser cut off mid-snapshot
  starts it again.
  Sent when the stream starts without a version, or when `DocWatch` finds
  that the splice log no longer continues the browser's text (a proof cut a
  feed back and the document was woven again);
- `gone`: the document is no longer held (a proof cut out its `doc/init`);
  the browser closes the stream, nothing follows;
- `presence`: where an author's caret and selection are, on this node's pages
  or a peer's (node/gossip/presence.py): `{author, name, colour, caret, start,
  end}`, positions in code points of the text the stream has brought the page
  to (the atoms that name them found in the text now), with no `id:`
  (ephemeral: a reconnect gets each author's latest again). The stream is read
  again when presence changes, not only when the store does.

The runs, their colours and the readable text are node/web/doc_text.py's.
"""

from __future__ import annotations

from typing import Any

from tanglenode.node.ipc.docs import DocWatch
from tanglenode.node.ipc.presence import PresenceWatch
from tanglenode.node.present.names import Names
from tanglenode.node.service.store_service import StoreService
from tanglenode.node.web.doc_text import Run, author_body, blamed_snapshot, colour, readable
from tanglenode.node.web.events import NextPage, event_stream, frame, resume_version
from tanglenode.node.web.http import Request, Response, WebContext, not_found, text_response
from tanglenode.protocol.doc_ipc import SNAPSHOT_CHARS
from tanglenode.protocol.identity import message_text
from tanglenode.storage.errors import UnknownDocument


def snapshot_frames(version: int, runs: list[Run], names: Names) -> list[bytes]:
    """`snapshot` frames of at most `SNAPSHOT_CHARS` code points; the version on the last."""
    chunks: list[list[dict[str, Any]]] = [[]]
    size = 0
    for text, author in runs:
        while text:
            if size == SNAPSHOT_CHARS:
                chunks.append([])
                size = 0
            piece, text = text[: SNAPSHOT_CHARS - size], text[SNAPSHOT_CHARS - size :]
            chunks[-1].append({"text": readable(piece), **author_body(author, names)})
            size += len(piece)
    frames, start = [], 0
    for number, chunk in enumerate(chunks):
        last = number == len(chunks) - 1
        data = {"version": version, "start": start, "last": last, "runs": chunk}
        frames.append(frame("snapshot", data, version if last else None))
        start += sum(len(run["text"]) for run in chunk)
    return frames


def readable_splice(splice: list[Any]) -> list[Any]:
    return [splice[0], splice[1], readable(splice[2])] if splice[0] == "ins" else splice


class DocStream:
    """The frames of one `/doc/ROOT/events` stream: where it starts, then its pages."""

    def __init__(self, service: StoreService, doc: bytes, names: Names) -> None:
        self.service, self.doc, self.names = service, doc, names
        self.watch = DocWatch(service, doc)
        self.gone = False
        self.presence = PresenceWatch(service, doc)
        self.idle_at = -1  # the store's version at which the splice log had nothing new

    async def start(self, since: int | None) -> tuple[list[bytes], int]:
        """The first frames (none when `since` is continued intact) and the version reached."""
        if since is not None:
            started, _events = await self.watch.start(since)
            if not started["snapshot"]:
                return [], since
        return await self.snapshot()

    async def snapshot(self) -> tuple[list[bytes], int]:
        version, runs = await blamed_snapshot(self.service, self.doc)
        return snapshot_frames(version, runs, self.names), version

    async def next_page(self, version: int) -> tuple[list[bytes], int] | None:
        """The frames after `version` and the version they reach; None while nothing is new."""
        if self.gone:
            return None
        try:
            page = None
            now = self.service.version
            if now != self.idle_at:  # woken by presence alone: the log is not read again
                page = await self._next_page(version)
                self.idle_at = now if page is None else -1
            presence = await self._presence()
        except UnknownDocument:  # a proof took its doc/init away: the browser stops here
            self.gone = True
            return [frame("gone", {"version": version})], version
        if not presence:
            return page
        frames, reached = page if page is not None else ([], version)
        return frames + presence, reached

    async def _next_page(self, version: int) -> tuple[list[bytes], int] | None:
        page = await self.watch.next_page(version)
        if page is None:
            return None
        events, reached = page
        if "entries" not in events[0]:  # the log no longer continues `version`: a new text
            return await self.snapshot()
        entries = events[0]["entries"]
        doc, since, count = self.doc, entries[0]["version"], len(entries)
        found = await self.service.read(
            lambda store: store.documents.document_versions(doc, since, count)
        )
        authors = {version.msg_id: version.author for version in found}
        frames = [
            frame(
                "splice",
                {
                    "version": entry["version"],
                    "msg": None if entry["msg"] is None else message_text(entry["msg"]),
                    "splices": [readable_splice(splice) for splice in entry["splices"]],
                    **author_body(authors.get(entry["msg"]), self.names),
                },
                entry["version"],
            )
            for entry in entries
        ]
        return frames, reached

    async def _presence(self) -> list[bytes]:
        """`presence` frames for what the node learnt since this stream last looked."""
        frames = []
        for author, start, end in await self.presence.news():
            body = author_body(author, self.names)
            body["caret"] = _caret(colour(author))
            frames.append(frame("presence", {**body, "start": start, "end": end}))
        return frames


def _caret(background: str) -> str:
    """An author's caret colour: their text's hue, darker (doc_text.colour's `hsl`)."""
    return background.replace(",86%)", ",38%)")


async def events(web: WebContext, request: Request, doc: bytes) -> Response:
    """`/doc/ROOT/events`: the stream, from `Last-Event-ID` or `?since=`, else a snapshot."""
    given = request.query.get("since")
    if given is not None and not (given.isascii() and resume_version(None, given) is not None):
        return text_response("since: a version (0, 1, 2, ...)\n", 400)
    since = resume_version(request.last_event_id, given)
    stream = DocStream(web.service, doc, await web.names())
    try:
        first, start = await stream.start(since)
    except UnknownDocument:
        return not_found("no such document")
    next_page: NextPage = stream.next_page
    return event_stream(web, first, start, next_page, stream.presence.wake)
