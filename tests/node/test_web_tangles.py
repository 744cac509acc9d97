"""A tangle page's event stream against a real store whose logs keep only their last few
commands: a page older than the log's floor, or a stream the floor passes while it follows,
gets `reset` (the script reloads), and the page drawn again follows from its own version."""

import re
from contextlib import aclosing

import pytest

from tanglenode.node.service.store_service import StoreService
from tanglenode.node.web import tangles
from tanglenode.node.web.events import Streams
from tanglenode.node.web.http import Request, WebContext
from tanglenode.protocol.identity import message_text
from tanglenode.protocol.message import TangleLink
from tanglenode.storage.engine.command_log import LogRetention
from tanglenode.storage.store import FeedStore
from tests.factories import Feed, keypair
from tests.node.test_web_docs import frames, read_until

ME = keypair("web-tangles")
WINDOW = LogRetention(keep=8, slack=2)


async def no_status(digests: bool) -> dict:
    raise AssertionError("a tangle's page does not read the status")


@pytest.fixture
async def web(tmp_path):
    store = FeedStore(tmp_path / "store", keypair=ME, map_size=2**28, retention=WINDOW)
    service = StoreService(store)
    yield WebContext(no_status, "t", service=service, keypair=ME, streams=Streams())
    store.close()


async def a_tangle(web, replies: int) -> bytes:
    root = (await web.service.publish("root", {"chat": None})).id
    for n in range(replies):
        await web.service.publish(f"reply {n}", {"chat": root})
    return root


def stream(web, root: bytes, since: int):
    request = Request(("chat", message_text(root)[1:], "events"), {"since": str(since)})
    return tangles.events(web, request)


async def versions(web, root: bytes) -> tuple[int, int]:
    """The chat tangle's (version, floor)."""
    timelines = web.service.store.timelines
    name = timelines.timeline_name(root, "chat")
    return timelines.timeline_version(name), timelines.timeline_floor(name)


def apply(rows: list[str], commands: list[dict]) -> None:
    """The page's script's part: each command on the table's rows (ids as `%…`)."""
    for command in commands:
        if "ins" in command:
            rows.insert(command["ins"], command["row"]["id"])
        elif "mov" in command:
            rows.insert(command["mov"][1], rows.pop(command["mov"][0]))
        else:
            del rows[command["del"]]


async def test_a_page_older_than_the_floor_reloads_and_the_new_page_follows_live(web):
    root = await a_tangle(web, 30)
    head, floor = await versions(web, root)
    assert 1 < floor < head
    async with aclosing((await stream(web, root, 1)).stream) as chunks:
        assert frames(await read_until(chunks, "event: reset")) == [
            (None, "reset", {"version": head})
        ]
    page = (await tangles.page(web, Request(("chat", message_text(root)[1:]), {}))).body.decode()
    assert f"data-version='{head}'" in page
    rows = re.findall(r"<tr data-id='([^']*)'", page)
    async with aclosing((await stream(web, root, head)).stream) as chunks:
        await read_until(chunks, "event: unjoined")
        for n in range(5):  # fewer than the window: followed, nothing dropped
            await web.service.publish(f"live {n}", {"chat": root})
        reached = head
        while reached < head + 5:
            seen = await read_until(chunks, "event: commands")
            for version, event, data in frames(seen):
                assert event != "reset"
                if event == "commands":
                    apply(rows, data["commands"])
                    reached = int(version)
    timelines = web.service.store.timelines
    name = timelines.timeline_name(root, "chat")
    assert rows == [message_text(msg_id) for _rank, msg_id in timelines.timeline(name)]


async def test_a_stream_whose_next_command_the_log_dropped_says_reset(web):
    root = await a_tangle(web, 2)
    head, _floor = await versions(web, root)
    bob = Feed("web-retain-bob")
    burst = [
        bob.append(n, tangles={"chat": TangleLink(root, (root,))}).raw
        for n in range(3 * WINDOW.keep)
    ]
    async with aclosing((await stream(web, root, head)).stream) as chunks:
        await read_until(chunks, "event: unjoined")
        await web.service.ingest(burst)  # one transaction: the floor passes the page's version
        now, floor = await versions(web, root)
        assert floor > head
        assert frames(await read_until(chunks, "event: reset")) == [
            (None, "reset", {"version": now})
        ]


async def test_the_index_tells_conversations_documents_and_group_tangles_apart(web):
    """Two conversations of one name are told apart by their roots' short ids; a document
    and a group's own tangles are listed under their own headings."""
    from tanglenode.storage.groups import state as groups

    store, me = web.service.store, web.keypair
    first = await a_tangle(web, 0)
    second = await a_tangle(web, 0)
    store.documents.create_document("notes")
    store.writes.publish(*groups.create(me, "club"))
    page = (await tangles.index(web, Request((), {}))).body.decode()
    sections = re.findall(r"<h2>([^<]*)</h2><table id='tangles-(\w+)'", page)
    assert [kind for _title, kind in sections] == ["conversation", "document", "group"]
    conversations = page.split("id='tangles-conversation'")[1].split("</table>")[0]
    for root in (first, second):
        assert f"<code>{message_text(root)[:10]}</code>" in conversations
    groups_part = page.split("id='tangles-group'")[1].split("</table>")[0]
    assert groups_part.count("<tr>") == 3 + 1  # group, epoch, members, and the header row


async def test_a_conversation_named_as_a_group_or_document_tangle_stays_a_conversation(web):
    """The section is decided by what the root holds, not by the name alone: anyone may
    start a conversation called `members` or `doc`."""
    store = web.service.store
    for name in ("members", "doc", "epoch"):
        store.writes.publish({"type": "post", "text": f"a chat called {name}"}, {name: None})
    page = (await tangles.index(web, Request((), {}))).body.decode()
    sections = re.findall(r"<h2>([^<]*)</h2><table id='tangles-(\w+)'", page)
    assert [kind for _title, kind in sections] == ["conversation"]
    conversations = page.split("id='tangles-conversation'")[1].split("</table>")[0]
    assert conversations.count("<tr>") == 3 + 1
