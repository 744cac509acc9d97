"""Documents over IPC: every doc request on a real socket and store, hostile ones typed,
and the doc-watch stream (snapshot, splices, resume, reset, lag)."""

from contextlib import aclosing

import pytest
import structlog
import trio

from tanglenode.node.gossip.network import Network
from tanglenode.node.ipc.client import NodeError, connect
from tanglenode.node.ipc.docs import DocWatch
from tanglenode.node.ipc.server import IpcServer
from tanglenode.node.net.peers import PeerRegistry
from tanglenode.node.service.store_service import StoreService
from tanglenode.protocol import doc_ipc, ipc
from tanglenode.protocol.doc_ipc import apply_splices
from tanglenode.protocol.document import AtomRef, Insert, edit_content, init_content
from tanglenode.protocol.ipc import ErrorKind
from tanglenode.protocol.limits import Limits
from tanglenode.protocol.message import TangleLink
from tanglenode.storage.documents.rows import SpliceEntry
from tanglenode.storage.errors import UnknownDocument
from tanglenode.storage.store import FeedStore
from tests.factories import Feed, keypair

ME = keypair("doc-ipc")
PEER = keypair("doc-ipc-peer")
ID = b"\x07" * 32


class Node:
    def __init__(self, path, service, store, tmp_path):
        self.path, self.service, self.store, self.tmp_path = path, service, store, tmp_path

    def client(self):
        return connect(self.path)

    async def peer_edit(self, doc, splices):
        """A second author: a store of its own gets ours, edits, and we ingest its edit."""
        with FeedStore(self.tmp_path / "peer", keypair=PEER, map_size=2**26) as peer:
            peer.writes.ingest(list(self.store.feeds.iter_raw()))
            messages = peer.documents.edit_document(doc, splices)
            raws = peer.feeds.read_feed_raw(PEER.public, messages[0].seq, len(messages))
        results = await self.service.ingest(raws)
        assert all(result.stored for result in results)
        return messages


def text_and_version(shown: dict) -> dict:
    """A doc-show reply without its weft (checked by
    `test_a_text_is_read_in_pages_of_one_revision_while_edits_and_proofs_land`)."""
    return {key: value for key, value in shown.items() if key != "weft"}


@pytest.fixture
async def node(tmp_path, nursery):
    store = FeedStore(tmp_path / "store", keypair=ME, map_size=2**28)
    service = StoreService(store)
    registry = PeerRegistry()
    network = Network(bytes(32), ME, service, registry)
    servers = []

    async def start(**options):
        server = IpcServer(service, registry, network, ME, status_extra={"listen": "-"}, **options)
        servers.append(server)
        path = await nursery.start(server.serve, tmp_path / f"ipc{len(servers)}.sock")
        return Node(path, service, store, tmp_path)

    yield start
    nursery.cancel_scope.cancel()
    store.close()


async def edit(client, doc, *splices):
    return (await client.request("doc-edit", doc=doc, splices=[list(s) for s in splices]))[
        "messages"
    ]


async def test_every_doc_request_answers(node):
    served = await node()
    async with await served.client() as client:
        doc = (await client.request("doc-create", title="Notes"))["doc"]
        first = await edit(client, doc, ("ins", 0, "hello world"))
        assert [m["version"] for m in first] == [1]
        second = await edit(client, doc, ("del", 0, 1), ("ins", 0, "H"), ("ins", 11, "!"))
        assert [m["version"] for m in second] == [2]
        assert await edit(client, doc, ("ins", 0, "x"), ("del", 0, 1)) == []  # no change
        assert text_and_version(await client.request("doc-show", doc=doc)) == {
            "version": 2,
            "text": "Hello world!",
        }
        assert (await client.request("doc-show", doc=doc, at=1))["text"] == "hello world"
        at_msg = await client.request("doc-show", doc=doc, at=first[0]["msg"])
        assert text_and_version(at_msg) == {"version": None, "text": "hello world"}
        weft = {ME.public: (await client.get(first[0]["msg"]))["seq"]}
        assert (await client.request("doc-show", doc=doc, at=weft))["text"] == "hello world"
        assert (await client.request("doc-show", doc=doc, at={}))["text"] == ""

        listed = await client.request("doc-list")
        assert listed["total"] == 1 and listed["next"] is None
        (info,) = listed["documents"]
        assert info["doc"] == doc and info["title"] == "Notes" and info["author"] == ME.public
        assert (info["length"], info["versions"], info["set_aside"]) == (12, 2, 0)

        log = await client.request("doc-log", doc=doc)
        versions = log["versions"]
        assert [v["version"] for v in versions] == [0, 1, 2]
        assert [(v["inserted"], v["deleted"]) for v in versions] == [(0, 0), (11, 0), (2, 1)]
        assert versions[1]["msg"] == first[0]["msg"] and versions[2]["author"] == ME.public
        assert (log["set_aside"], log["set_aside_total"]) == ([], 0)
        paged = await client.request("doc-log", doc=doc, since=1, limit=1)
        assert [v["version"] for v in paged["versions"]] == [1]

        diff = (await client.request("doc-diff", doc=doc, **{"from": 1, "to": 2}))["spans"]
        assert "".join(s["text"] for s in diff) == "Hhello world!"
        assert [(s["text"], s["inserted_by"], s["removed_by"]) for s in diff] == [
            ("H", ME.public, None),
            ("h", None, ME.public),
            ("ello world", None, None),
            ("!", ME.public, None),
        ]
        to_now = await client.request("doc-diff", doc=doc, **{"from": 1})  # `to` nil: now
        assert to_now["spans"] == diff

        blame = (await client.request("doc-blame", doc=doc))["spans"]
        assert "".join(s["text"] for s in blame) == "Hello world!"
        assert {s["msg"] for s in blame} == {first[0]["msg"], second[0]["msg"]}
        old_blame = (await client.request("doc-blame", doc=doc, at=1))["spans"]
        assert [(s["text"], s["msg"]) for s in old_blame] == [("hello world", first[0]["msg"])]


async def test_two_authors_are_told_apart_by_diff_blame_and_log(node):
    served = await node()
    async with await served.client() as client:
        doc = (await client.request("doc-create", title="shared"))["doc"]
        await edit(client, doc, ("ins", 0, "ours "))
        await served.peer_edit(doc, [("ins", 5, "theirs")])
        assert (await client.request("doc-show", doc=doc))["text"] == "ours theirs"
        blame = (await client.request("doc-blame", doc=doc))["spans"]
        assert [(s["text"], s["author"]) for s in blame] == [
            ("ours ", ME.public),
            ("theirs", PEER.public),
        ]
        diff = (await client.request("doc-diff", doc=doc, **{"from": 1, "to": 2}))["spans"]
        assert [(s["text"], s["inserted_by"]) for s in diff] == [
            ("ours ", None),
            ("theirs", PEER.public),
        ]
        log = (await client.request("doc-log", doc=doc))["versions"]
        assert [v["author"] for v in log] == [ME.public, ME.public, PEER.public]


def own_head(store):
    return next(feed.head_seq for feed in store.feeds.held() if feed.author == ME.public)


async def test_an_exclusive_edit_against_a_stale_base_is_a_conflict_and_publishes_nothing(node):
    served = await node()
    async with await served.client() as client:
        doc = (await client.request("doc-create", title="raced"))["doc"]
        await edit(client, doc, ("ins", 0, "abc"))  # v1: what the editor read
        await served.peer_edit(doc, [("ins", 0, "x")])  # v2 came in since
        ours = own_head(served.store)
        with pytest.raises(NodeError) as refused:
            await client.request(
                "doc-edit", doc=doc, splices=[["del", 0, 3]], base=1, exclusive=True
            )
        assert refused.value.kind is ErrorKind.CONFLICT
        assert text_and_version(await client.request("doc-show", doc=doc)) == {
            "version": 2,
            "text": "xabc",
        }
        assert own_head(served.store) == ours  # nothing signed
        versions = (await client.request("doc-log", doc=doc))["versions"]
        assert [v["version"] for v in versions] == [0, 1, 2]
        # Against the version it now is, the same request goes through; and so do later
        # requests of one edit, each based on the version the previous one made.
        first = await client.request(
            "doc-edit", doc=doc, splices=[["del", 1, 3]], base=2, exclusive=True
        )
        assert [m["version"] for m in first["messages"]] == [3]
        second = await client.request(
            "doc-edit", doc=doc, splices=[["ins", 1, "y"]], base=3, exclusive=True
        )
        assert [m["version"] for m in second["messages"]] == [4]
        assert text_and_version(await client.request("doc-show", doc=doc)) == {
            "version": 4,
            "text": "xy",
        }
        with pytest.raises(NodeError) as refused:  # a base past the head names nothing
            await client.request("doc-edit", doc=doc, splices=[["ins", 0, "z"]], base=9)
        assert refused.value.kind is ErrorKind.NOT_FOUND


# Each: (op, arguments, kind). Every one is answered, and the connection serves on.
HOSTILE = {
    "create: no title": ("doc-create", {}, "bad-request"),
    "create: title is bytes": ("doc-create", {"title": b"t"}, "bad-request"),
    "create: title is empty": ("doc-create", {"title": ""}, "bad-request"),
    "create: title is long": ("doc-create", {"title": "t" * 201}, "bad-request"),
    "create: title of 201 bytes": ("doc-create", {"title": "é" * 101}, "bad-request"),
    "create: control characters": ("doc-create", {"title": "a\nb"}, "bad-request"),
    "edit: doc is text": ("doc-edit", {"doc": "%x", "splices": [["ins", 0, "a"]]}, "bad-request"),
    "edit: doc is short": ("doc-edit", {"doc": b"d", "splices": [["ins", 0, "a"]]}, "bad-request"),
    "edit: unknown doc": ("doc-edit", {"doc": ID, "splices": [["ins", 0, "a"]]}, "not-found"),
    "edit: no splices": ("doc-edit", {"doc": "$doc", "splices": []}, "bad-request"),
    "edit: splices is a map": ("doc-edit", {"doc": "$doc", "splices": {}}, "bad-request"),
    "edit: too many splices": (
        "doc-edit",
        {"doc": "$doc", "splices": [["ins", 0, "a"]] * (doc_ipc.MAX_SPLICES + 1)},
        "bad-request",
    ),
    "edit: too much text": (
        "doc-edit",
        {"doc": "$doc", "splices": [["ins", 0, "a" * (doc_ipc.MAX_SPLICE_CHARS + 1)]]},
        "bad-request",
    ),
    "edit: unknown kind": ("doc-edit", {"doc": "$doc", "splices": [["mov", 0, 1]]}, "bad-request"),
    "edit: short splice": ("doc-edit", {"doc": "$doc", "splices": [["ins", 0]]}, "bad-request"),
    "edit: splice is a map": (
        "doc-edit",
        {"doc": "$doc", "splices": [{"ins": 0}]},
        "bad-request",
    ),
    "edit: negative position": (
        "doc-edit",
        {"doc": "$doc", "splices": [["ins", -1, "a"]]},
        "bad-request",
    ),
    "edit: position is true": (
        "doc-edit",
        {"doc": "$doc", "splices": [["ins", True, "a"]]},
        "bad-request",
    ),
    "edit: position is huge": (
        "doc-edit",
        {"doc": "$doc", "splices": [["ins", 2**64 - 1, "a"]]},
        "bad-request",
    ),
    "edit: position past the text": (
        "doc-edit",
        {"doc": "$doc", "splices": [["ins", 4, "a"]]},
        "bad-request",
    ),
    "edit: delete past the text": (
        "doc-edit",
        {"doc": "$doc", "splices": [["del", 1, 3]]},
        "bad-request",
    ),
    "edit: a later splice past the text": (
        "doc-edit",
        {"doc": "$doc", "splices": [["del", 0, 3], ["ins", 1, "a"]]},
        "bad-request",
    ),
    "edit: empty insert": ("doc-edit", {"doc": "$doc", "splices": [["ins", 0, ""]]}, "bad-request"),
    "edit: insert of bytes": (
        "doc-edit",
        {"doc": "$doc", "splices": [["ins", 0, b"a"]]},
        "bad-request",
    ),
    "edit: delete of 0": ("doc-edit", {"doc": "$doc", "splices": [["del", 0, 0]]}, "bad-request"),
    "edit: delete of text": (
        "doc-edit",
        {"doc": "$doc", "splices": [["del", 0, "a"]]},
        "bad-request",
    ),
    "edit: base is negative": (
        "doc-edit",
        {"doc": "$doc", "splices": [["ins", 0, "a"]], "base": -1},
        "bad-request",
    ),
    "edit: base is text": (
        "doc-edit",
        {"doc": "$doc", "splices": [["ins", 0, "a"]], "base": "1"},
        "bad-request",
    ),
    "edit: base is stale, exclusive": (
        "doc-edit",
        {"doc": "$doc", "splices": [["ins", 0, "a"]], "base": 0, "exclusive": True},
        "conflict",
    ),
    "edit: exclusive is a number": (
        "doc-edit",
        {"doc": "$doc", "splices": [["ins", 0, "a"]], "base": 0, "exclusive": 1},
        "bad-request",
    ),
    "edit: base of an unknown message": (
        "doc-edit",
        {"doc": "$doc", "splices": [["ins", 0, "a"]], "base": ID},
        "not-found",
    ),
    "list: start is negative": ("doc-list", {"start": -1}, "bad-request"),
    "list: limit is a float": ("doc-list", {"limit": 1.5}, "bad-request"),
    "show: no doc": ("doc-show", {}, "bad-request"),
    "show: unknown doc": ("doc-show", {"doc": ID}, "not-found"),
    "show: at is text": ("doc-show", {"doc": "$doc", "at": "v1"}, "bad-request"),
    "show: at is negative": ("doc-show", {"doc": "$doc", "at": -1}, "bad-request"),
    "show: at is a float": ("doc-show", {"doc": "$doc", "at": 1.0}, "bad-request"),
    "show: at is a short id": ("doc-show", {"doc": "$doc", "at": b"m"}, "bad-request"),
    "show: at a version it never had": ("doc-show", {"doc": "$doc", "at": 99}, "not-found"),
    "show: at an unknown message": ("doc-show", {"doc": "$doc", "at": ID}, "not-found"),
    "show: weft keyed by text": ("doc-show", {"doc": "$doc", "at": {"f": 1}}, "bad-request"),
    "show: weft of a negative seq": ("doc-show", {"doc": "$doc", "at": {ID: -1}}, "bad-request"),
    "show: weft of a list": ("doc-show", {"doc": "$doc", "at": {ID: [1]}}, "bad-request"),
    "show: a page of nothing": ("doc-show", {"doc": "$doc", "limit": 0}, "bad-request"),
    "show: limit is negative": ("doc-show", {"doc": "$doc", "limit": -7}, "bad-request"),
    "show: limit is a float": ("doc-show", {"doc": "$doc", "limit": 7.0}, "bad-request"),
    "show: limit is true": ("doc-show", {"doc": "$doc", "limit": True}, "bad-request"),
    "show: start is negative": ("doc-show", {"doc": "$doc", "start": -1}, "bad-request"),
    "show: start is text": ("doc-show", {"doc": "$doc", "start": "7", "limit": 7}, "bad-request"),
    "log: since is negative": ("doc-log", {"doc": "$doc", "since": -1}, "bad-request"),
    "log: unknown doc": ("doc-log", {"doc": ID}, "not-found"),
    "diff: no from": ("doc-diff", {"doc": "$doc", "to": 1}, "bad-request"),
    "diff: to is a list": ("doc-diff", {"doc": "$doc", "from": 0, "to": [1]}, "bad-request"),
    "diff: unknown doc": ("doc-diff", {"doc": ID, "from": 0}, "not-found"),
    "blame: at is a bool": ("doc-blame", {"doc": "$doc", "at": True}, "bad-request"),
    "blame: unknown doc": ("doc-blame", {"doc": ID}, "not-found"),
    "watch: since is text": ("doc-watch", {"doc": "$doc", "since": "1"}, "bad-request"),
    "watch: unknown doc": ("doc-watch", {"doc": ID}, "not-found"),
}


@pytest.mark.parametrize("op, arguments, kind", HOSTILE.values(), ids=HOSTILE.keys())
async def test_each_hostile_doc_request_gets_its_typed_error_and_the_node_serves_on(
    node, op, arguments, kind
):
    served = await node()
    with structlog.testing.capture_logs() as logs:
        async with await served.client() as client:
            doc = (await client.request("doc-create", title="d"))["doc"]
            await edit(client, doc, ("ins", 0, "abc"))
            arguments = {k: doc if v == "$doc" else v for k, v in arguments.items()}
            with pytest.raises(NodeError) as refused:
                await client.request(op, **arguments)
            assert refused.value.kind == kind
            assert text_and_version(await client.request("doc-show", doc=doc)) == {
                "version": 1,
                "text": "abc",
            }
    assert not [entry for entry in logs if entry["log_level"] in ("error", "critical")]


def test_a_weft_wider_than_the_cap_is_refused_before_anything_runs():
    wide = {bytes(28) + n.to_bytes(4): 1 for n in range(doc_ipc.MAX_WEFT_FEEDS + 1)}
    with pytest.raises(ipc.RequestError) as refused:
        ipc.parse_request("doc-show", {"doc": ID, "at": wide}, Limits())
    assert refused.value.kind is ErrorKind.BAD_REQUEST
    wide.popitem()
    assert ipc.parse_request("doc-show", {"doc": ID, "at": wide}, Limits()).at == wide


async def test_a_bad_title_is_refused_with_the_document_reason(node):
    served = await node()
    async with await served.client() as client:
        with pytest.raises(NodeError) as refused:
            await client.request("doc-create", title="a\x07b")
    assert (refused.value.kind, refused.value.reason) == (ErrorKind.BAD_REQUEST, "bad-title")


# -- doc-watch -----------------------------------------------------------------------------


class Replica:
    """An editor's copy of the text, kept by the stream alone."""

    def __init__(self):
        self.text, self.version, self.snapshots = "", None, 0

    def apply(self, event):
        if "entries" in event:
            for entry in event["entries"]:
                assert entry["version"] == self.version + 1
                self.text = apply_splices(self.text, entry["splices"])
                self.version = entry["version"]
        elif "text" in event:
            if event["start"] == 0:
                self.text, self.snapshots = "", self.snapshots + 1
            assert event["start"] == len(self.text)
            self.text += event["text"]
            self.version = event["version"]


async def follow(client, doc, since, until, replica):
    """Apply doc-watch events to `replica` until it reaches version `until`; the reply."""
    with trio.fail_after(10):
        async with aclosing(client.doc_watch(doc, since=since)) as events:
            started = (await events.__anext__())["started"]
            replica.version = started["version"] if replica.version is None else replica.version
            if replica.version >= until and not started["snapshot"]:
                return started
            async for event in events:
                replica.apply(event)
                if replica.version >= until:
                    return started


async def test_doc_watch_sends_a_snapshot_then_splices_and_resumes_without_one(node):
    served = await node()
    async with await served.client() as client:
        doc = (await client.request("doc-create", title="live"))["doc"]
        await edit(client, doc, ("ins", 0, "one two three"))
        replica = Replica()
        async with await served.client() as watcher:
            events = watcher.doc_watch(doc)
            async with aclosing(events):
                assert (await events.__anext__())["started"] == {"version": 1, "snapshot": True}
                replica.apply(await events.__anext__())
                assert (replica.text, replica.version) == ("one two three", 1)
                await edit(client, doc, ("del", 3, 4), ("ins", 0, ">"))  # v2
                await served.peer_edit(doc, [("ins", 0, "😀 ")])  # v3, another author
                await edit(client, doc, ("ins", 9, "\n"))  # v4
                while replica.version < 4:
                    replica.apply(await events.__anext__())
        now = await client.request("doc-show", doc=doc)
        assert (replica.text, replica.version) == (now["text"], now["version"])
        assert replica.snapshots == 1

        # Resuming from any version the log still has: no snapshot, the same text.
        for since in range(5):
            resumed = Replica()
            resumed.text = (await client.request("doc-show", doc=doc, at=since))["text"]
            async with await served.client() as watcher:
                started = await follow(watcher, doc, since, 4, resumed)
            assert started == {"version": since, "snapshot": False}
            assert (resumed.text, resumed.snapshots) == (now["text"], 0)

        # A version the document never had: a snapshot.
        fresh = Replica()
        async with await served.client() as watcher:
            started = await follow(watcher, doc, 50, 4, fresh)
        assert started == {"version": 4, "snapshot": True}
        assert (fresh.text, fresh.snapshots) == (now["text"], 1)


async def test_doc_watch_snapshots_a_long_text_in_pages(node):
    served = await node()
    async with await served.client() as client:
        doc = (await client.request("doc-create", title="long"))["doc"]
        long_text = "abcdefghij" * (doc_ipc.SNAPSHOT_CHARS // 4)
        for start in range(0, len(long_text), doc_ipc.MAX_SPLICE_CHARS):
            piece = long_text[start : start + doc_ipc.MAX_SPLICE_CHARS]
            await edit(client, doc, ("ins", start, piece))
        head = (await client.request("doc-show", doc=doc))["version"]
        replica = Replica()
        async with aclosing(client.doc_watch(doc)) as events:
            assert (await events.__anext__())["started"]["snapshot"] is True
            starts = []
            while len(replica.text) < len(long_text):
                event = await events.__anext__()
                starts.append(event["start"])
                replica.apply(event)
        assert starts == list(range(0, len(long_text), doc_ipc.SNAPSHOT_CHARS))
        assert (replica.text, replica.version) == (long_text, head)


async def test_a_reset_in_the_splice_log_sends_a_fresh_snapshot(node):
    served = await node()
    service = served.service
    async with await served.client() as client:
        doc = (await client.request("doc-create", title="reset"))["doc"]
        await edit(client, doc, ("ins", 0, "abc"))  # v1
        await edit(client, doc, ("ins", 3, "def"))  # v2
        replica = Replica()
        replica.text = "abc"
        async with await served.client() as watcher:
            events = watcher.doc_watch(doc, since=1)
            async with aclosing(events):
                assert (await events.__anext__())["started"] == {"version": 1, "snapshot": False}
                replica.version = 1
                replica.apply(await events.__anext__())
                assert (replica.text, replica.version) == ("abcdef", 2)
                read = service.store.documents.document_splices

                def with_a_reset(doc_id, since, limit):  # the store says: v3 is a reset
                    head, entries = read(doc_id, since, limit)
                    return head, [
                        SpliceEntry(3, None, None) if e.version == 3 else e for e in entries
                    ]

                service.store.documents.document_splices = with_a_reset
                await edit(client, doc, ("ins", 6, "g"))  # v3
                with trio.fail_after(10):
                    replica.apply(await events.__anext__())
        assert (replica.text, replica.version, replica.snapshots) == ("abcdefg", 3, 1)

    for since, snapshot in ((0, True), (2, True), (3, False)):  # past the reset: a snapshot
        async with (
            await served.client() as watcher,
            aclosing(watcher.doc_watch(doc, since=since)) as events,
        ):
            assert (await events.__anext__())["started"] == {
                "version": 3 if snapshot else since,
                "snapshot": snapshot,
            }


def _doc_edit(feed, doc, ops, timeframe):
    return feed.append(
        edit_content(ops), tangles={"doc": TangleLink(doc.id, (doc.id,))}, timeframe=timeframe
    )


async def test_a_proof_that_rewrites_a_document_sends_watchers_a_snapshot(node):
    """A fork proof cuts an author's edits out: the engine weaves the document again, and a
    watcher (live, or resuming from before) takes the new text from a snapshot."""
    served = await node()
    alice, mallory, bob = Feed("w-alice"), Feed("w-mallory"), Feed("w-bob")
    doc = alice.root("doc", init_content("shared"))
    evil = _doc_edit(mallory, doc, [Insert(AtomRef(doc.id, 0), "evil")], {alice.public: 1})
    mallory.messages.clear()  # the same key signs another seq 1: a fork
    twin = _doc_edit(mallory, doc, [Insert(AtomRef(doc.id, 0), "twin")], {alice.public: 1})
    after_evil = {alice.public: doc, mallory.public: evil}
    cites_evil = _doc_edit(bob, doc, [Insert(AtomRef(evil.id, 3), "!")], after_evil)
    honest = _doc_edit(bob, doc, [Insert(AtomRef(doc.id, 0), "fine ")], after_evil)
    await served.service.ingest([doc.raw, evil.raw, cites_evil.raw, honest.raw])
    replica = Replica()
    async with await served.client() as watcher, aclosing(watcher.doc_watch(doc.id)) as events:
        assert (await events.__anext__())["started"] == {"version": 3, "snapshot": True}
        replica.apply(await events.__anext__())
        assert replica.text == "fine evil!"
        await served.service.ingest([twin.raw])  # the fork's proof
        with trio.fail_after(10):
            while replica.snapshots < 2:
                replica.apply(await events.__anext__())
    async with await served.client() as client:
        now = await client.request("doc-show", doc=doc.id)
    assert (replica.text, replica.version) == (now["text"], now["version"]) == ("fine ", 4)
    for since in range(4):  # from before the proof: the log no longer continues it
        resumed = Replica()
        async with await served.client() as watcher:
            started = await follow(watcher, doc.id, since, 4, resumed)
        assert started == {"version": 4, "snapshot": True} and resumed.text == "fine "


async def test_a_text_is_read_in_pages_of_one_revision_while_edits_and_proofs_land(node):
    """doc-show's pages (`start`, `limit`), the next ones `at` the first one's weft: an edit
    between two pages tears nothing; a proof that removes a message the weft names makes
    that revision `not-found` rather than another text under its name."""
    served = await node()
    alice, mallory = Feed("p-alice"), Feed("p-mallory")
    doc = alice.root("doc", init_content("paged"))
    typed = "héllo 😀 wörld, read in pages of seven\n"
    alice_edit = _doc_edit(alice, doc, [Insert(AtomRef(doc.id, 0), typed)], {})
    cause = AtomRef(alice_edit.id, len(typed) - 1)
    evil = _doc_edit(mallory, doc, [Insert(cause, "evil 😈")], {alice.public: 2})
    await served.service.ingest([doc.raw, alice_edit.raw, evil.raw])
    async with await served.client() as client:
        whole = await client.request("doc-show", doc=doc.id)
        assert set(whole) == {"version", "text", "weft"}  # no page asked: the one reply
        text = whole["text"]
        first = await client.request("doc-show", doc=doc.id, limit=7)
        assert first == {
            "version": whole["version"],
            "weft": whole["weft"],
            "text": text[:7],
            "start": 0,
            "length": len(text),
            "next": 7,
        }
        await edit(client, doc.id, ("ins", 0, ">> "))  # lands between the pages
        pages = [first]
        while pages[-1]["next"] is not None:
            at = {"at": first["weft"], "start": pages[-1]["next"], "limit": 7}
            pages.append(await client.request("doc-show", doc=doc.id, **at))
        assert "".join(page["text"] for page in pages) == text  # the first page's revision
        assert [len(page["text"]) for page in pages] == [7] * (len(text) // 7) + [len(text) % 7]
        assert {page["length"] for page in pages} == {len(text)}
        assert (await client.request("doc-show", doc=doc.id))["text"] == ">> " + text
        beyond = await client.request("doc-show", doc=doc.id, start=10**9, limit=7)
        assert (beyond["text"], beyond["start"], beyond["next"]) == ("", 10**9, None)

        mallory.messages.clear()  # the same key signs another seq 1: a fork, and its proof
        twin = _doc_edit(mallory, doc, [Insert(cause, "twin")], {alice.public: 2})
        await served.service.ingest([twin.raw])
        with pytest.raises(NodeError) as gone:
            await client.request("doc-show", doc=doc.id, at=first["weft"], start=7, limit=7)
        assert gone.value.kind == ErrorKind.NOT_FOUND
        assert (await client.request("doc-show", doc=doc.id))["text"] == ">> " + typed


def test_a_page_over_the_most_a_reply_carries_is_cut_to_it():
    parsed = ipc.parse_request("doc-show", {"doc": ID, "limit": 2**40}, Limits())
    assert (parsed.start, parsed.limit) == (0, doc_ipc.SHOW_CHARS)
    paged = ipc.parse_request("doc-show", {"doc": ID, "start": 5}, Limits())
    assert (paged.start, paged.limit) == (5, doc_ipc.SHOW_CHARS)  # a page, of the most
    assert ipc.parse_request("doc-show", {"doc": ID}, Limits()).limit is None  # the whole


async def test_a_slow_doc_watcher_is_told_it_lagged_and_resumes_without_loss(node):
    served = await node(queue_frames=2, send_seconds=30)
    async with await served.client() as writer, await served.client() as reader:
        doc = (await writer.request("doc-create", title="busy"))["doc"]
        events = reader.doc_watch(doc, since=0)
        assert (await events.__anext__())["started"] == {"version": 0, "snapshot": False}
        for n in range(300):  # the reader reads nothing meanwhile
            await edit(writer, doc, ("ins", 0, f"{n:03d}" * 2000))
        replica, lagged = Replica(), None
        replica.version = 0
        async with aclosing(events):
            with pytest.raises(NodeError, match="disconnected"):
                async for event in events:
                    if "lagged" in event:
                        lagged = event["lagged"]
                    replica.apply(event)
        assert lagged is not None and lagged == replica.version < 300
    patient = await node()  # the same store, served with the usual queue
    async with await patient.client() as client:
        await follow(client, doc, lagged, 300, replica)
    async with await patient.client() as client:
        assert replica.text == (await client.request("doc-show", doc=doc))["text"]
    assert replica.snapshots == 0


async def test_an_idle_doc_watch_wakes_on_a_peer_edit_and_ends_when_the_client_leaves(node):
    served = await node()
    async with await served.client() as client:
        doc = (await client.request("doc-create", title="idle"))["doc"]
    replica = Replica()
    replica.version = 0
    async with (
        await served.client() as watcher,
        aclosing(watcher.doc_watch(doc, since=0)) as events,
    ):
        await events.__anext__()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(served.peer_edit, doc, [("ins", 0, "hi")])
            with trio.fail_after(10):
                replica.apply(await events.__anext__())
    assert (replica.text, replica.version) == ("hi", 1)
    async with await served.client() as client:  # the node still serves
        assert (await client.request("doc-show", doc=doc))["text"] == "hi"


async def test_a_since_whose_splices_the_store_dropped_gets_a_snapshot(node):
    served = await node()
    service = served.service
    async with await served.client() as client:
        doc = (await client.request("doc-create", title="pruned"))["doc"]
        for n in range(3):
            await edit(client, doc, ("ins", 0, str(n)))
        read = service.store.documents.document_splices

        def pruned(doc_id, since, limit):  # a log that kept versions 3 and up only
            head, entries = read(doc_id, since, limit + 3)
            return head, [entry for entry in entries if entry.version >= 3][:limit]

        service.store.documents.document_splices = pruned
        replica = Replica()
        async with await served.client() as watcher:
            started = await follow(watcher, doc, 1, 3, replica)
        assert started == {"version": 3, "snapshot": True}
        assert (replica.text, replica.snapshots) == ("210", 1)


async def test_a_refusal_while_following_ends_the_stream_with_a_typed_error(node, monkeypatch):
    served = await node()
    async with await served.client() as client:
        doc = (await client.request("doc-create", title="gone"))["doc"]

    async def gone(watch, version):  # the stream's read of the splice log
        raise UnknownDocument("no such document any more")

    async with await served.client() as watcher:
        events = watcher.doc_watch(doc)
        async with aclosing(events):
            assert (await events.__anext__())["started"]["snapshot"] is True
            assert (await events.__anext__())["text"] == ""
            monkeypatch.setattr(DocWatch, "_splices", gone)
            await edit_elsewhere(served, doc)
            with trio.fail_after(10), pytest.raises(NodeError) as ended:
                await events.__anext__()
    assert ended.value.kind is ErrorKind.NOT_FOUND


async def edit_elsewhere(served, doc):
    """Wake the stream: a write to the store through the service."""
    await served.service.edit_document(doc, [("ins", 0, "x")])
