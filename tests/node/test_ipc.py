"""The IPC server over a real Unix socket and a real store, in process."""

import stat
from contextlib import aclosing

import pytest
import trio

from tanglenode.node.gossip.network import Network
from tanglenode.node.ipc.client import NodeError, connect
from tanglenode.node.ipc.oneshot import error_from
from tanglenode.node.ipc.ops import OPS
from tanglenode.node.ipc.server import IpcServer
from tanglenode.node.net.peers import PeerRegistry
from tanglenode.node.service.store_service import StoreService
from tanglenode.protocol import ipc
from tanglenode.protocol.identity import tag_of
from tanglenode.protocol.ipc import ErrorKind
from tanglenode.protocol.message import TangleLink
from tanglenode.storage.engine.command_log import LogRetention
from tanglenode.storage.engine.timeline import Insert, Move, apply_commands
from tanglenode.storage.store import FeedStore
from tests.factories import Feed, keypair

ME = keypair("ipc")
WINDOW = LogRetention(keep=8, slack=2)  # a log keeps 8 to 10 commands


@pytest.fixture
async def node(tmp_path, nursery):
    async for start in _node(tmp_path, nursery):
        yield start


@pytest.fixture
async def windowed_node(tmp_path, nursery):
    """A node whose timelines' logs keep only their last few commands (`WINDOW`)."""
    async for start in _node(tmp_path, nursery, retention=WINDOW):
        yield start


async def _node(tmp_path, nursery, **store_options):
    store = FeedStore(tmp_path / "store", keypair=ME, map_size=2**28, **store_options)
    service = StoreService(store)
    registry = PeerRegistry()
    network = Network(bytes(32), ME, service, registry)

    def start(**options):
        server = IpcServer(service, registry, network, ME, status_extra={"listen": "-"}, **options)
        return nursery.start(server.serve, tmp_path / "ipc.sock")

    start.service = service  # for a test that ingests others' messages
    yield start
    nursery.cancel_scope.cancel()
    store.close()


async def test_socket_is_private_and_requests_are_answered(node, tmp_path):
    path = await node()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    async with await connect(path) as client:
        root = await client.publish({"text": "root"}, {"chat": None})
        reply = await client.publish({"text": "reply"}, {"chat": root["id"]})
        assert reply["tangles"]["chat"]["previous"] == [root["id"]]
        assert (await client.get(reply["id"]))["content"] == {"text": "reply"}
        page = await client.timeline(tangle="chat", root=root["id"])
        assert page["entries"] == [[0, root["id"], "joined"], [1, reply["id"], "joined"]]
        status = await client.status()
        assert status["feed"] == ME.public and status["messages"] == 2 and status["stalls"] == []
        with pytest.raises(NodeError, match="not-found"):
            await client.get(bytes(32))
        with pytest.raises(NodeError, match="unknown-op"):
            await client.request("frobnicate")
        with pytest.raises(NodeError, match="bad-request"):
            await client.publish("x", {"chat": "not bytes"})


async def test_message_bodies_carry_each_timeframe_entry_with_its_tag(node):
    """publish, get and both streams carry the timeframe as signed: {feed: [seq, tag]}."""
    path = await node()
    bob = Feed("ipc-timeframe-bob")
    bob.append("b1")
    head = bob.append("b2")
    await node.service.ingest([message.raw for message in bob.messages])
    expected = {bob.public: [2, tag_of(head.id)]}
    async with await connect(path) as client:
        published = await client.publish("after bob", {"chat": None})
        assert published["timeframe"] == expected
        assert (await client.get(published["id"]))["timeframe"] == expected
        assert (await client.get(head.id))["timeframe"] == {}
    async with await connect(path) as client:
        events = client.subscribe(since=0, tangle="chat", root=published["id"])
        async with aclosing(events):
            await events.__anext__()
            (insert,) = (await events.__anext__())["commands"]
            assert insert["message"]["timeframe"] == expected
    async with await connect(path) as client, aclosing(client.watch_processed(0)) as events:
        await events.__anext__()
        page = (await events.__anext__())["processed"]
        bodies = {entry["message"]["id"]: entry["message"] for entry in page}
        assert bodies[published["id"]]["timeframe"] == expected


async def test_a_bad_frame_closes_that_client_only(node):
    path = await node()
    async with await connect(path) as good:
        broken = await trio.open_unix_socket(str(path))
        await broken.send_all(b"\xff\xff\xff\xff")  # a frame length over the cap
        assert b"bad-frame" in await broken.receive_some(4096)
        assert await broken.receive_some(4096) == b""  # then the node hangs up
        await broken.aclose()
        assert (await good.status())["messages"] == 0


async def test_a_client_over_the_cap_is_told_why_before_it_is_closed(node):
    path = await node(max_clients=1)
    async with await connect(path) as first:
        await first.status()  # served: it holds the one place
        late = await trio.open_unix_socket(str(path))
        reply = await late.receive_some(4096)
        assert b"refused" in reply and b"IPC clients at once" in reply
        assert await late.receive_some(4096) == b""  # then closed
        await late.aclose()
        assert (await first.status())["messages"] == 0  # the first is served on


async def collect(client, since, until_version, **which):
    """Commands from `since` until the version reaches `until_version`."""
    commands, version = [], since
    async with aclosing(client.subscribe(since=since, **which)) as events:
        async for event in events:
            for command in event.get("commands", ()):
                version = command["v"]
                if "ins" in command:
                    commands.append(Insert(command["ins"], command["message"]["id"]))
                else:
                    commands.append(Move(*command["mov"]))
            if version >= until_version:
                return commands


async def test_subscription_resumes_from_any_version_and_rebuilds_the_order(node):
    path = await node()
    async with await connect(path) as client:
        root = (await client.publish("root", {"chat": None}))["id"]
        for n in range(10):
            await client.publish(n, {"chat": root})
        head = (await client.timeline(tangle="chat", root=root))["version"]
        everything = await collect(client, 0, head, tangle="chat", root=root)
    async with await connect(path) as client:  # a subscription keeps its connection
        tail = await collect(client, 4, head, tangle="chat", root=root)
    async with await connect(path) as client:
        order = [e[1] for e in (await client.timeline(tangle="chat", root=root))["entries"]]
    assert tail == everything[4:]
    assert apply_commands([], everything) == order


async def test_a_slow_subscriber_is_told_it_lagged_and_resumes_without_loss(node):
    path = await node(queue_frames=2, send_seconds=30)
    async with await connect(path) as writer, await connect(path) as reader:
        root = (await writer.publish("root", {"chat": None}))["id"]
        events = reader.subscribe(since=0, tangle="chat", root=root)
        assert "started" in await events.__anext__()
        # The reader stops reading while 400 large messages arrive.
        for n in range(400):
            await writer.publish({"n": n, "pad": "x" * 8000}, {"chat": root})
        received, lagged = [], None
        async with aclosing(events):
            with pytest.raises(NodeError, match="disconnected"):
                async for event in events:
                    if "lagged" in event:
                        lagged = event["lagged"]
                    received.extend(event.get("commands", ()))
        assert lagged is not None and lagged < 401
        assert [c["v"] for c in received] == list(range(1, lagged + 1))
    async with await connect(path) as client:
        rest = await collect(client, lagged, 401, tangle="chat", root=root)
    async with await connect(path) as client:
        order = [
            e[1] for e in (await client.timeline(tangle="chat", root=root, limit=1000))["entries"]
        ]
    first = [
        Insert(c["ins"], c["message"]["id"]) if "ins" in c else Move(*c["mov"]) for c in received
    ]
    assert apply_commands([], first + rest) == order


def test_the_dispatch_table_serves_every_op_of_the_protocol_and_nothing_else():
    IpcServer(None, None, None, ME)  # the table needs nothing running
    assert OPS.keys() == ipc.OPS
    assert {op for op, row in OPS.items() if row.stream} == ipc.STREAMING
    assert all(row.node for row in OPS.values() if row.stream)  # streams: the node only


async def test_every_op_reads_through_the_services_one_read(node):
    # the typed methods are those where the node adds state; any read is `read`
    typed = {name for name in vars(StoreService) if not name.startswith("_")}
    assert not typed & {"message", "timeline_page", "document_splices", "group", "tangles"}
    assert "read" in typed
    path = await node()
    async with await connect(path) as client:
        root = (await client.publish("root", {"chat": None}))["id"]
        reply = (await client.publish("reply", {"chat": root}))["id"]
        which = {"tangle": "chat", "root": root}
        assert (await client.get(reply))["content"] == "reply"
        assert len((await client.timeline(**which))["entries"]) == 2
        assert (await client.request("commands", **which))["version"] == 2
        assert (await client.request("placement", message=reply, **which))["position"] == 1
        assert (await client.status())["final"] >= 0
        group = (await client.request("group-create", name="g"))["group"]
        await client.request("group-post", group=group, content="secret")
        assert (await client.request("group-show", group=group))["members"] == [ME.public]
        rows = (await client.request("group-timeline", group=group))["entries"]
        assert [row["content"] for row in rows][-1] == "secret"
    async with await connect(path) as client:
        events = client.subscribe(since=0, spacetime=True)
        async with aclosing(events):
            assert (await events.__anext__())["started"] == {"version": 0, "snapshot": False}
            event = await events.__anext__()
            assert event["commands"][0]["v"] == 1 and "final" in event
    async with await connect(path) as client, aclosing(client.watch_processed(0)) as events:
        await events.__anext__()
        page = (await events.__anext__())["processed"]
        assert [entry["index"] for entry in page][:2] == [0, 1]


async def test_the_client_raises_error_kinds_and_keeps_a_kind_it_does_not_know_as_text(node):
    path = await node()
    async with await connect(path) as client:
        with pytest.raises(NodeError) as refused:
            await client.get(bytes(32))
    assert refused.value.kind is ErrorKind.NOT_FOUND
    newer = error_from({"id": 1, "error": {"kind": "from-the-future", "message": "m"}})
    assert newer.kind == "from-the-future" and not isinstance(newer.kind, ErrorKind)
    assert error_from({"id": 1, "error": "?"}).kind is ErrorKind.PROTOCOL


async def test_after_a_reindex_a_subscriber_at_an_old_version_starts_from_a_snapshot(node):
    """A rebuilt log tells how an empty timeline grew: resuming through it from a version of
    the old log would apply it twice. The log restarts above the old version (its floor)."""
    from tanglenode.storage.reindex import reindex

    path = await node()
    which = {"tangle": "chat"}
    async with await connect(path) as client:
        which["root"] = (await client.publish("root", {"chat": None}))["id"]
        for n in range(5):
            await client.publish(n, {"chat": which["root"]})
        old = (await client.timeline(**which))["version"]
    store = node.service.store
    reindex(store.ctx, store.views, [view.name for view in store.views])
    name = store.timelines.timeline_name(which["root"], "chat")
    floor = store.timelines.timeline_floor(name)
    assert floor > old and store.timelines.timeline_version(name) == floor
    async with await connect(path) as client:
        order = [e[1] for e in (await client.timeline(**which))["entries"]]
        events = client.subscribe(since=old, **which)
        async with aclosing(events):
            assert (await events.__anext__())["started"] == {"version": floor, "snapshot": True}
            snapshot = await events.__anext__()
            assert [entry[1] for entry in snapshot["snapshot"]] == order
    async with await connect(path) as client:  # a subscription keeps its connection
        with pytest.raises(NodeError) as refused:
            await client.request("commands", since=old, **which)
        assert refused.value.kind == ErrorKind.NOT_FOUND
        assert "a rebuild restarted it" in str(refused.value)
        await client.publish("after", {"chat": which["root"]})
        assert (await client.request("commands", since=floor, **which))["version"] == floor + 1


def _apply(replica: list[bytes], commands: list[dict]) -> int:
    """Apply subscription commands to `replica`; the version they reach."""
    for command in commands:
        if "ins" in command:
            body = command["message"]
            replica.insert(command["ins"], body["id"] if isinstance(body, dict) else body)
        elif "mov" in command:
            replica.insert(command["mov"][1], replica.pop(command["mov"][0]))
        else:
            del replica[command["del"]]
    return commands[-1]["v"]


async def _until(events, version: int, replica: list[bytes], *, spacetime: bool = False) -> dict:
    """Apply the stream's commands to `replica` until it reaches `version`; the last event."""
    reached = -1
    while reached < version:
        event = await events.__anext__()
        assert "lagged" not in event, event
        reached = _apply(replica, event["commands"])
        assert ("final" in event) == spacetime
    return event


async def test_a_subscriber_resuming_below_the_retention_floor_gets_a_snapshot_then_the_stream(
    windowed_node,
):
    """The log keeps only its last commands: a client back from a version it dropped gets
    the order then (a snapshot), then the commands that follow, and ends with the order
    `timeline` reads; `commands` from below the floor is not-found, from it whole."""
    path = await windowed_node()
    which = {"tangle": "chat"}
    async with await connect(path) as client:
        which["root"] = (await client.publish("root", {"chat": None}))["id"]
        for n in range(30):
            await client.publish(n, {"chat": which["root"]})
        old = 1  # the root's
        version = (await client.timeline(**which))["version"]
    store = windowed_node.service.store
    name = store.timelines.timeline_name(which["root"], "chat")
    floor = store.timelines.timeline_floor(name)
    assert old < floor < version and version - floor <= WINDOW.keep + WINDOW.slack
    async with await connect(path) as other:
        for timeline in (which, {"spacetime": True}):
            client = await connect(path)  # a subscription keeps its connection
            events = client.subscribe(since=old, **timeline)
            async with client, aclosing(events):
                started = (await events.__anext__())["started"]
                assert started["snapshot"] and started["version"] >= floor
                replica = [entry[1] for entry in (await events.__anext__())["snapshot"]]
                for n in range(5):  # fewer than the window: followed live, nothing dropped
                    await other.publish(f"live {n}", {"chat": which["root"]})
                head = (await other.timeline(**timeline))["version"]
                last = await _until(events, head, replica, spacetime="spacetime" in timeline)
                order = [entry[1] for entry in (await other.timeline(**timeline))["entries"]]
                assert replica == order
            if "spacetime" in timeline:
                assert last["final"] == store.timelines.spacetime_final() == len(order)
        floor = store.timelines.timeline_floor(name)
        with pytest.raises(NodeError) as refused:
            await other.request("commands", since=floor - 1, **which)
        assert refused.value.kind == ErrorKind.NOT_FOUND
        assert f"only the commands after version {floor}" in str(refused.value)
        page = await other.request("commands", since=floor, **which)
        assert len(page["commands"]) == page["version"] - floor


async def test_a_live_subscriber_whose_next_command_the_log_dropped_is_told_it_lagged(
    windowed_node,
):
    """One ingest of more commands than the log keeps moves the floor past a subscriber's
    version before it reads on: it gets `lagged` at that version, as one that stopped
    reading, and resuming from there starts it again from a snapshot."""
    path = await windowed_node()
    which = {"tangle": "chat"}
    async with await connect(path) as client:
        which["root"] = (await client.publish("root", {"chat": None}))["id"]
        at = (await client.timeline(**which))["version"]
    bob = Feed("ipc-retain-bob")
    burst = [
        bob.append(n, tangles={"chat": TangleLink(which["root"], (which["root"],))}).raw
        for n in range(3 * WINDOW.keep)
    ]
    async with await connect(path) as client, await connect(path) as other:
        events = client.subscribe(since=at, **which)
        async with aclosing(events):
            assert (await events.__anext__())["started"] == {"version": at, "snapshot": False}
            await windowed_node.service.ingest(burst)  # one transaction
            assert await events.__anext__() == {"lagged": at}
        name = windowed_node.service.store.timelines.timeline_name(which["root"], "chat")
        assert windowed_node.service.store.timelines.timeline_floor(name) > at

    async with await connect(path) as client, await connect(path) as other:
        events = client.subscribe(since=at, **which)
        async with aclosing(events):
            started = (await events.__anext__())["started"]
            assert started["snapshot"] and started["version"] == at + len(burst)
            replica = [entry[1] for entry in (await events.__anext__())["snapshot"]]
            await other.publish("after", {"chat": which["root"]})
            await _until(events, started["version"] + 1, replica)
            order = [entry[1] for entry in (await other.timeline(**which))["entries"]]
            assert replica == order and len(order) == 2 + len(burst)
