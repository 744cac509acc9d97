"""The document and group pages against a real store: what they show, that others' text is
escaped, the slider's JSON, the live stream's frames, and the 404s and 400s."""

import json
import re
from contextlib import aclosing
from html.parser import HTMLParser

import pytest
import trio

from tanglenode.node.service.store_service import StoreService
from tanglenode.node.web import docs, groups
from tanglenode.node.web.doc_events import snapshot_frames
from tanglenode.node.web.doc_text import colour
from tanglenode.node.web.events import Streams
from tanglenode.node.web.http import Request, WebContext
from tanglenode.protocol.doc_ipc import SNAPSHOT_CHARS, apply_splices
from tanglenode.protocol.identity import feed_text, message_text
from tanglenode.storage.groups import state as group_store
from tanglenode.storage.store import FeedStore
from tests.factories import keypair

ME = keypair("web-docs")
PEER = keypair("web-docs-peer")
OUTSIDER = keypair("web-docs-outsider")
TOKEN = "web-docs-token"
HOSTILE = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


async def no_status(digests: bool) -> dict:
    raise AssertionError("the document pages do not read the status")


class Site:
    """A store of ours with the web context over it, and a peer that edits through its own."""

    def __init__(self, tmp_path):
        self.tmp_path = tmp_path
        self.store = FeedStore(tmp_path / "store", keypair=ME, map_size=2**28)
        self.service = StoreService(self.store)
        self.web = WebContext(
            no_status,
            TOKEN,
            service=self.service,
            keypair=ME,
            data_dir=tmp_path,
            streams=Streams(),
        )

    async def peer(self, who, act):
        """`act(store)` on a store of `who`'s holding all of ours; we ingest what it wrote."""
        with FeedStore(self.tmp_path / feed_text(who.public)[1:9], keypair=who) as theirs:
            theirs.writes.ingest(list(self.store.feeds.iter_raw()))
            before = {f.author: f.head_seq for f in theirs.feeds.held()}.get(who.public, 0)
            result = act(theirs)
            raws = theirs.feeds.read_feed_raw(who.public, before + 1, 1000)
        assert all(r.stored for r in await self.service.ingest(raws))
        return result

    async def get(self, handler, *args, **query):
        response = await handler(self.web, Request(args, {k: str(v) for k, v in query.items()}))
        return response.status, response.body.decode()


@pytest.fixture
async def site(tmp_path):
    made = Site(tmp_path)
    yield made
    made.store.close()


def root(msg_id: bytes) -> str:
    return message_text(msg_id)[1:]


async def a_document(site):
    """A hostile title; we type, the peer (named hostilely) types and deletes, we type."""
    doc = (await site.service.create_document(HOSTILE)).id
    await site.service.edit_document(doc, [("ins", 0, "hello world")])
    about = {"type": "about", "about": feed_text(PEER.public), "name": HOSTILE}
    await site.peer(PEER, lambda store: store.writes.publish(about))
    await site.peer(PEER, lambda store: store.documents.edit_document(doc, [("ins", 5, " <b>&")]))
    await site.service.edit_document(doc, [("del", 0, 1), ("ins", 0, "H")])
    return doc


class Spans(HTMLParser):
    """The text of the element with `id`, and its direct spans as (text, data-author)."""

    def __init__(self, element_id):
        super().__init__()
        self.id, self.depth, self.spans, self.tags = element_id, 0, [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if self.depth:
            self.depth += 1
            self.spans.append([tag, "", attrs])
        elif attrs.get("id") == self.id:
            self.depth = 1

    def handle_endtag(self, tag):
        if self.depth:
            self.depth -= 1

    def handle_data(self, data):
        if self.depth > 1:
            self.spans[-1][1] += data
        elif self.depth == 1:
            self.spans.append([None, data, {}])


def spans_of(page: str, element_id: str) -> list:
    parser = Spans(element_id)
    parser.feed(page)
    return parser.spans


async def test_the_document_page_shows_the_text_in_blame_colours_all_escaped(site):
    doc = await a_document(site)
    code, page = await site.get(docs.page, root(doc))
    assert code == 200
    assert "<script>" not in page.replace("<script defer src=", "")
    assert f"<h1>{ESCAPED}</h1>" in page and f"<title>{ESCAPED} · tanglenode</title>" in page
    runs = spans_of(page, "text")
    assert "".join(text for _tag, text, _attrs in runs) == "Hello <b>& world"
    assert [(text, attrs["data-author"]) for _tag, text, attrs in runs] == [
        ("Hello", feed_text(ME.public)),
        (" <b>&", feed_text(PEER.public)),
        (" world", feed_text(ME.public)),
    ]
    assert runs[1][2]["style"] == f"background:{colour(PEER.public)}"
    assert colour(PEER.public) != colour(ME.public)
    assert " &lt;b&gt;&amp;</span>" in page
    legend = {attrs["data-author"]: text for _tag, text, attrs in spans_of(page, "legend")}
    assert legend == {
        feed_text(ME.public): "@" + feed_text(ME.public)[1:9] + "…",
        feed_text(PEER.public): "~" + HOSTILE,
    }
    assert f"~{ESCAPED}" in page
    slider = re.search(r"<input id='version'[^>]*>", page).group(0)
    assert "type='range'" in slider and "max='3'" in slider and "value='3'" in slider
    assert f"data-doc-events='/doc/{root(doc)}/events?token={TOKEN}'" in page
    # the last version dyed against the one before: our H for the peer's h
    assert [(tag, text) for tag, text, _attrs in spans_of(page, "revision") if tag] == [
        ("ins", "H"),
        ("del", "h"),
    ]


async def test_the_slider_json_is_the_revision_at_a_version_dyed(site):
    doc = await a_document(site)
    code, body = await site.get(docs.part, root(doc), "at", v=2)
    assert code == 200
    shown = json.loads(body)
    assert shown["version"] == 2 and shown["compared"] == 1 and shown["against"] == "previous"
    assert shown["text"] == "hello <b>& world"
    assert shown["author"] == feed_text(PEER.public) and shown["name"] == "~" + HOSTILE
    assert shown["inserted"] == 5 and shown["deleted"] == 0
    assert [(s["text"], s["inserted_by"], s["removed_by"]) for s in shown["spans"]] == [
        ("hello", None, None),
        (" <b>&", "~" + HOSTILE, None),
        (" world", None, None),
    ]
    current = json.loads((await site.get(docs.part, root(doc), "at", v=1, against="current"))[1])
    assert current["text"] == "hello world" and current["compared"] is None
    assert [
        (s["text"], bool(s["inserted_by"]), bool(s["removed_by"])) for s in current["spans"]
    ] == [
        ("H", True, False),
        ("h", False, True),
        ("ello", False, False),
        (" <b>&", True, False),
        (" world", False, False),
    ]
    first = json.loads((await site.get(docs.part, root(doc), "at", v=0))[1])
    assert first["text"] == "" and first["spans"] == []
    past = json.loads((await site.get(docs.part, root(doc), "at", v=999))[1])
    assert past["version"] == 3 and past["text"] == "Hello <b>& world"  # the last one


async def test_bad_queries_are_one_line_400s_and_unknown_things_404(site):
    doc = await a_document(site)
    for query in ({"v": "x"}, {"v": "-1"}, {"v": "1" * 11}, {}, {"v": "1", "against": "x"}):
        code, body = await site.get(docs.part, root(doc), "at", **query)
        assert code == 400 and body.count("\n") == 1 and "Traceback" not in body, query
    assert (await site.get(docs.index, start="nope"))[0] == 400
    for since in ("-1", "x", "1" * 30, "\u0663"):  # an Arabic-Indic 3 is a digit to isdigit
        assert (await site.get(docs.part, root(doc), "events", since=since))[0] == 400, since
    assert (await site.get(groups.index, after="nope"))[0] == 400
    unknown = root(b"\x09" * 32)
    for handler, args in (
        (docs.page, (unknown,)),
        (docs.page, ("not-an-id",)),
        (docs.page, ("A" * 5000,)),
        (docs.part, (unknown, "at")),
        (docs.part, (unknown, "events")),
        (docs.part, (root(doc), "elsewhere")),
        (groups.page, (unknown,)),
        (groups.page, ("%" + root(doc),)),
    ):
        code, body = await site.get(handler, *args, v=1)
        assert code == 404 and "Traceback" not in body, args


async def test_the_index_lists_documents_linking_to_them(site):
    doc = await a_document(site)
    other = (await site.service.create_document("plain")).id
    code, page = await site.get(docs.index)
    assert code == 200 and "2 held" in page
    assert f"<a href='/doc/{root(doc)}?token={TOKEN}'>{ESCAPED}</a>" in page
    assert f"<a href='/doc/{root(other)}?token={TOKEN}'>plain</a>" in page
    assert "<td>3</td><td>16</td>" in page  # versions, characters


async def read_until(chunks, wanted: str, seen: str = "") -> str:
    with trio.fail_after(10):
        while wanted not in seen:
            seen += (await chunks.__anext__()).decode()
    return seen


def frames(text: str) -> list[tuple[str | None, str, dict]]:
    found = []
    for block in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in fields:
            found.append((fields.get("id"), fields["event"], json.loads(fields["data"])))
    return found


async def test_the_stream_sends_each_edit_as_splices_from_the_version_shown(site):
    doc = await a_document(site)
    response = await docs.part(site.web, Request((root(doc), "events"), {"since": "3"}))
    assert response.status == 200 and site.web.streams.open == 1
    async with aclosing(response.stream) as chunks:
        first = await read_until(chunks, "retry")
        assert frames(first) == []  # the page's version is continued: no snapshot
        await site.peer(PEER, lambda store: store.documents.edit_document(doc, [("ins", 16, "!")]))
        seen = await read_until(chunks, "event: splice")
        [(version, event, data)] = frames(seen)
        assert (version, event) == ("4", "splice")
        assert data["splices"] == [["ins", 16, "!"]] and data["version"] == 4
        assert data["author"] == feed_text(PEER.public) and data["name"] == "~" + HOSTILE
        assert data["colour"] == colour(PEER.public)
        assert apply_splices("Hello <b>& world", data["splices"]) == "Hello <b>& world!"
    assert site.web.streams.open == 0


async def test_a_stream_without_a_version_or_with_one_never_had_starts_from_a_snapshot(site):
    doc = await a_document(site)
    for query, last_event_id in (({}, None), ({"since": "77"}, None), ({}, "77")):
        response = await docs.part(site.web, Request((root(doc), "events"), query, last_event_id))
        async with aclosing(response.stream) as chunks:
            [(version, event, data)] = frames(await read_until(chunks, "event: snapshot"))
        assert (version, event, data["version"], data["start"]) == ("3", "snapshot", 3, 0)
        assert [(run["text"], run["author"]) for run in data["runs"]] == [
            ("Hello", feed_text(ME.public)),
            (" <b>&", feed_text(PEER.public)),
            (" world", feed_text(ME.public)),
        ]
    # Last-Event-ID wins over ?since= (the page's first version), so a reconnect resumes
    response = await docs.part(site.web, Request((root(doc), "events"), {"since": "1"}, "3"))
    async with aclosing(response.stream) as chunks:
        assert frames(await read_until(chunks, "retry")) == []


def test_a_long_snapshot_is_cut_and_only_its_last_frame_carries_the_version():
    from tanglenode.node.cli.names import Names

    runs = [("a" * (SNAPSHOT_CHARS - 1), ME.public), ("bcd", PEER.public), ("e" * 10, None)]
    sent = frames(b"".join(snapshot_frames(9, runs, Names())).decode())
    assert [(version, data["start"], data["last"]) for version, _event, data in sent] == [
        (None, 0, False),
        ("9", SNAPSHOT_CHARS, True),
    ]
    text = "".join(run["text"] for _v, _e, data in sent for run in data["runs"])
    assert text == "a" * (SNAPSHOT_CHARS - 1) + "bcd" + "e" * 10
    assert all(sum(len(r["text"]) for r in d["runs"]) <= SNAPSHOT_CHARS for _v, _e, d in sent)
    assert sent[1][2]["runs"][-1]["author"] is None


async def a_group(site):
    """Our group with a hostile name: the peer added, a hostile post, the peer's post."""
    content, tangles = group_store.create(ME, HOSTILE)
    group = (await site.service.publish(content, tangles)).id
    view = await site.service.read(group_store.read_group, ME, group)
    await site.service.publish(*group_store.add(view, ME, [PEER.public]))
    view = await site.service.read(group_store.read_group, ME, group)
    await site.service.publish(*group_store.post(view, ME, {"type": "post", "text": HOSTILE}))
    about = {"type": "about", "about": feed_text(PEER.public), "name": "peer & co"}
    await site.peer(PEER, lambda store: store.writes.publish(about))

    def post(store):
        view = group_store.read_group(store, PEER, group)
        return store.writes.publish(
            *group_store.post(view, PEER, {"type": "post", "text": "hi all"})
        )

    await site.peer(PEER, post)
    return group


async def test_the_group_page_shows_members_epochs_and_the_timeline_escaped(site):
    group = await a_group(site)
    code, page = await site.get(groups.page, root(group))
    assert code == 200 and "<script>" not in page
    assert f"<h1>{ESCAPED}</h1>" in page
    shown = spans_of(page, "members")
    members = {attrs["data-feed"]: text for _t, text, attrs in shown if "data-feed" in attrs}
    assert members == {
        feed_text(ME.public): "@" + feed_text(ME.public)[1:9] + "…",
        feed_text(PEER.public): "~peer & co",
    }
    # a button excluding each member but us, named as shown (escaped)
    excluding = [attrs for _t, _text, attrs in shown if "data-exclude" in attrs]
    assert excluding == [
        {"type": "button", "data-exclude": feed_text(PEER.public)} | {"data-name": "~peer & co"}
    ]
    posts = page.split("id='group-posts'")[1].split("</ol>")[0]  # the conversation, escaped
    assert f"<p class='text'>{ESCAPED}</p>" in posts and "<p class='text'>hi all</p>" in posts
    assert "Epochs: 1" in page and "current" in page
    rows = re.findall(r"<tr data-id='(%[^']+)' data-state='(\w+)'", page.split("group-timeline")[1])
    assert [state for _id, state in rows] == ["valid"] * 4
    assert rows[0][0] == message_text(group)
    assert f"<td class='text'>{ESCAPED}</td>" in page
    assert "<td class='text'>hi all</td>" in page
    assert "~peer &amp; co" in page
    assert f"href='/t/group/{root(group)}?token={TOKEN}'" in page


async def test_the_groups_list_and_a_group_we_cannot_open(site):
    group = await a_group(site)

    def theirs(store):
        return store.writes.publish(*group_store.create(OUTSIDER, "secret"))

    sealed = await site.peer(OUTSIDER, theirs)
    code, page = await site.get(groups.index)
    assert code == 200
    listed = re.findall(r"<tr data-id='(%[^']+)'", page)
    assert listed == [message_text(group)]  # theirs holds no key of ours
    assert f"<a href='/groups/{root(group)}?token={TOKEN}'>{ESCAPED}</a>" in page
    assert "<td>2</td><td>1</td><td>member</td>" in page
    code, page = await site.get(groups.page, root(sealed.id))
    assert code == 200 and "secret" not in page
    assert "This node holds no key of this group" in page
    assert "<h1><span class='muted'>(cannot open)</span></h1>" in page
    assert "data-state='sealed'" in page and "Members: 0" in page


async def test_controls_and_bidi_in_the_text_show_as_marks_one_for_one(site):
    doc = (await site.service.create_document("t\u202eitle")).id
    await site.service.edit_document(doc, [("ins", 0, "a\u202eb\nc\x1b[31m\td")])
    code, page = await site.get(docs.page, root(doc))
    assert code == 200 and "\u202e" not in page and "\x1b" not in page and "<h1>t?itle</h1>" in page
    assert "".join(text for _tag, text, _attrs in spans_of(page, "text")) == "a?b\nc?[31m\td"
    shown = json.loads((await site.get(docs.part, root(doc), "at", v=1))[1])
    assert shown["text"] == "a?b\nc?[31m\td" and shown["spans"][0]["text"] == shown["text"]
    response = await docs.part(site.web, Request((root(doc), "events"), {"since": "1"}))
    async with aclosing(response.stream) as chunks:
        await read_until(chunks, "retry")
        await site.service.edit_document(doc, [("ins", 2, "\u200b!")])
        [(_version, _event, data)] = frames(await read_until(chunks, "event: splice"))
    assert data["splices"] == [["ins", 2, "?!"]]  # as long as what it stands for


def test_runs_of_one_author_are_merged():
    from tanglenode.node.web.doc_text import merge_runs

    runs = [("a", ME.public), ("b", ME.public), ("", PEER.public), ("c", PEER.public), ("d", None)]
    assert merge_runs(runs) == [("ab", ME.public), ("c", PEER.public), ("d", None)]


async def test_the_history_lists_every_edit_newest_first_with_names_times_and_ids(site):
    doc = await a_document(site)
    _code, page = await site.get(docs.page, root(doc))
    assert f"<a id='history' href='/doc/{root(doc)}/history?token={TOKEN}'>" in page
    code, history = await site.get(docs.part, root(doc), "history")
    assert code == 200
    versions = site.store.documents.document_versions(doc)
    rows = history.split("<tr>")[2:]  # after the headers
    assert [row.split("</td>")[0] for row in rows] == ["<td>v3", "<td>v2", "<td>v1", "<td>v0"]
    assert "~" + ESCAPED in rows[1] and "<b>" not in history.split("<h1>")[1]
    for row, version in zip(rows, reversed(versions), strict=True):
        assert f"title='{message_text(version.msg_id)}'" in row
    code, older = await site.get(docs.part, root(doc), "history", start=1)
    assert [row.split("</td>")[0] for row in older.split("<tr>")[2:]] == ["<td>v1", "<td>v0"]
    assert (await site.get(docs.part, root(doc), "history", start="x"))[0] == 400
    assert (await site.get(docs.part, root(bytes(32)), "history"))[0] == 404
