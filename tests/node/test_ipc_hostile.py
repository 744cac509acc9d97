"""Hostile IPC clients against a real Unix socket: every bad request gets a typed reply.

After each one the same connection is asked for `status`: the node still serves it.
"""

import math
import struct
from functools import partial

import msgpack
import pytest
import structlog
import trio
import trio.testing

from tanglenode.node.gossip.network import Network
from tanglenode.node.ipc.client import NodeError, connect
from tanglenode.node.ipc.ops import MAX_FRAME
from tanglenode.node.ipc.server import IpcServer
from tanglenode.node.net.peers import PeerRegistry
from tanglenode.node.service.store_service import StoreService
from tanglenode.protocol.framing import FrameDecoder, encode_frame
from tanglenode.protocol.limits import Limits
from tanglenode.storage.store import FeedStore
from tests.factories import keypair, sign_raw, unsigned_fields

ME = keypair("hostile-ipc")
PEER = keypair("hostile-peer")
ID = b"\x07" * 32


async def serve(tmp_path, nursery, limits=None):
    store = FeedStore(tmp_path / "store", keypair=ME, map_size=2**28, limits=limits or Limits())
    service = StoreService(store)
    registry = PeerRegistry()
    network = Network(bytes(32), ME, service, registry)
    server = IpcServer(service, registry, network, ME, status_extra={"listen": "-"})
    path = await nursery.start(server.serve, tmp_path / "ipc.sock")
    return store, (path, service, registry)


@pytest.fixture
async def node(tmp_path, nursery):
    store, served = await serve(tmp_path, nursery)
    yield served
    nursery.cancel_scope.cancel()
    store.close()


@pytest.fixture
async def legacy_node(tmp_path, nursery):
    """A store that accepts deeper content than the default, standing in for messages a
    node stored before the content rules existed."""
    store, served = await serve(tmp_path, nursery, Limits(max_content_depth=600))
    yield served
    nursery.cancel_scope.cancel()
    store.close()


def nested(depth, inner=0):
    for _ in range(depth):
        inner = [inner]
    return inner


BAD_REQUESTS = {
    "timeline start is text": ("timeline", {"spacetime": True, "start": "x"}),
    "timeline limit is inf": ("timeline", {"spacetime": True, "limit": math.inf}),
    "timeline limit is negative": ("timeline", {"spacetime": True, "limit": -1}),
    "timeline spacetime is a map": ("timeline", {"spacetime": {"a": 1}}),
    "timeline root is short": ("timeline", {"tangle": "chat", "root": b"x"}),
    "timeline name is huge": ("timeline", {"tangle": "n" * 10_000, "root": ID}),
    "commands since is a float": ("commands", {"spacetime": True, "since": 1.5}),
    "placement message is text": ("placement", {"spacetime": True, "message": "%abc"}),
    "get message is an int": ("get", {"message": 7}),
    "get message is 31 bytes": ("get", {"message": b"x" * 31}),
    "connect port 1e3": ("connect", {"address": "127.0.0.1:1e3", "key": PEER.public}),
    "connect nonsense": ("connect", {"address": "nonsense:abc", "key": PEER.public}),
    "connect no host": ("connect", {"address": ":8008", "key": PEER.public}),
    "connect port 0": ("connect", {"address": "h:0", "key": PEER.public}),
    "connect port 65536": ("connect", {"address": "h:65536", "key": PEER.public}),
    "connect unicode digits": ("connect", {"address": "h:\uff18\uff10", "key": PEER.public}),
    "connect no colon": ("connect", {"address": "localhost", "key": PEER.public}),
    "connect address is bytes": ("connect", {"address": b"h:1", "key": PEER.public}),
    "connect key is short": ("connect", {"address": "h:1", "key": b"k"}),
    "publish tangles is a list": ("publish", {"content": 1, "tangles": ["chat"]}),
    "publish tangle name is huge": ("publish", {"content": 1, "tangles": {"n" * 600: None}}),
    "publish tangle name is empty": ("publish", {"content": 1, "tangles": {"": None}}),
    "publish tangle root is short": ("publish", {"content": 1, "tangles": {"chat": b"r"}}),
    "publish too many tangles": (
        "publish",
        {"content": 1, "tangles": {f"t{n}": None for n in range(17)}},
    ),
    "subscribe since is text": ("subscribe", {"spacetime": True, "since": "x"}),
    "subscribe name is huge": ("subscribe", {"tangle": "n" * 1000, "root": ID}),
    "watch-processed start is negative": ("watch-processed", {"start": -1}),
    "group-post group is text": ("group-post", {"group": "g", "content": 1}),
    "group-add too many members": ("group-add", {"group": ID, "members": [ID] * 5000}),
    "group-create name is a map": ("group-create", {"name": {"a": 1}}),
    "group-timeline order is bad": ("group-timeline", {"group": ID, "order": "x"}),
    "peers limit is text": ("peers", {"limit": "all"}),
    "clock start is a float": ("clock", {"start": 0.5}),
    "clock peer is short": ("clock", {"peer": b"p"}),
}


@pytest.mark.parametrize("op, arguments", BAD_REQUESTS.values(), ids=BAD_REQUESTS.keys())
async def test_each_bad_request_gets_bad_request_and_the_node_serves_on(node, op, arguments):
    path, _service, registry = node
    with structlog.testing.capture_logs() as logs:
        async with await connect(path) as client:
            with pytest.raises(NodeError) as refused:
                await client.request(op, **arguments)
            assert refused.value.kind == "bad-request"
            assert (await client.status())["feed"] == ME.public
    assert not [entry for entry in logs if entry["log_level"] in ("error", "critical")]
    assert registry.peers == {}  # nothing was stored or dialed


BAD_CONTENT = {
    "NaN": (math.nan, "non-finite-float"),
    "inf in a map": ({"x": [1.0, -math.inf]}, "non-finite-float"),
    "ext type": (msgpack.ExtType(5, b"xy"), "ext-type"),
    "ext in a list": ([1, msgpack.ExtType(1, b"")], "ext-type"),
    "timestamp": ({"t": msgpack.Timestamp(1, 0)}, "ext-type"),
    "300 deep": (nested(300), "too-deep"),
    "33 deep": (nested(33), "too-deep"),
}


@pytest.mark.parametrize("content, reason", BAD_CONTENT.values(), ids=BAD_CONTENT.keys())
async def test_content_breaking_a_rule_is_refused_with_its_reason(node, content, reason):
    path, service, _registry = node
    async with await connect(path) as client:
        with pytest.raises(NodeError) as refused:
            await client.publish(content)
        assert (refused.value.kind, refused.value.reason) == ("invalid-message", reason)
        with pytest.raises(NodeError) as refused:
            await client.request("group-post", group=ID, content=content)
        assert (refused.value.kind, refused.value.reason) == ("invalid-message", reason)
        assert (await client.status())["messages"] == 0
    assert service.clock == {}


async def test_other_hostile_frames_get_typed_replies(node):
    path, _service, _registry = node
    stream = await trio.open_unix_socket(str(path))
    decoder = FrameDecoder(MAX_FRAME)

    async def reply():
        while (frame := decoder.next_frame()) is None:
            decoder.receive_data(await stream.receive_some(65536))
        return frame

    async def send(value):
        await stream.send_all(encode_frame(value, MAX_FRAME))
        return await reply()

    not_a_map = await send([1, 2, 3])
    assert not_a_map == {
        "id": None,
        "error": {"kind": "bad-request", "message": not_a_map["error"]["message"]},
    }
    deep_id = await send({"op": "status", "id": nested(400)})
    assert deep_id["id"] is None and deep_id["error"]["kind"] == "bad-request"
    long_op = await send({"op": "x" * 100_000, "id": 1})
    assert long_op["error"]["kind"] == "unknown-op" and len(long_op["error"]["message"]) < 200
    ok = await send({"op": "status", "id": 2})
    assert ok["id"] == 2 and ok["ok"]["feed"] == ME.public
    # A frame that is not msgpack: a typed reply, then the node hangs up (documented).
    await stream.send_all(struct.pack(">I", 1) + b"\xc1")
    assert (await reply())["error"]["kind"] == "bad-frame"
    assert await stream.receive_some(10) == b""
    await stream.aclose()


async def test_a_stored_message_nested_too_deep_is_served_marked_not_dropped(legacy_node):
    path, service, _registry = legacy_node
    deep = sign_raw(ME, unsigned_fields(ME, content=nested(500)), canonical=False)
    (result,) = await service.ingest([deep])
    assert result.stored
    async with await connect(path) as client:
        body = await client.get(result.message.id)
        assert body["content"] == {"$too-deep": True}
        page = await client.timeline(spacetime=True)
        assert page["entries"][0][1] == result.message.id
        assert (await client.status())["messages"] == 1


async def test_a_bad_address_never_reaches_the_dialer_and_a_bad_dial_never_escapes(node, nursery):
    path, service, registry = node
    network = Network(bytes(32), ME, service, registry)

    async def hang_up(stream):
        await stream.aclose()

    listeners = await nursery.start(partial(trio.serve_tcp, hang_up, 0, host="127.0.0.1"))
    port = listeners[0].socket.getsockname()[1]
    # Straight to the dialer (as a config or a future caller might): an address it
    # cannot parse, and a key the handshake cannot use. Both become last_error.
    nursery.start_soon(network.dial_forever, "127.0.0.1:1e3", PEER.public)
    nursery.start_soon(network.dial_forever, f"127.0.0.1:{port}", b"short key")
    async with await connect(path) as client:
        while not all(
            registry.peers.get(key) and registry.peers[key].last_error
            for key in (PEER.public, b"short key")
        ):
            await trio.testing.wait_all_tasks_blocked()
            await client.status()  # the node serves on meanwhile
        assert "1e3" in registry.peers[PEER.public].last_error
        answered = await client.request("connect", address=f"127.0.0.1:{port}", key=PEER.public)
        assert answered == {"dialing": f"127.0.0.1:{port}", "standing": "every-feed"}
        assert (await client.status())["peers_total"] == 2


async def test_status_and_peers_stay_under_the_frame_cap_whatever_peers_advertise(node):
    path, service, registry = node
    fake = {struct.pack(">Q", n) * 4: 1_000_000 for n in range(30_000)}
    for n in range(150):
        peer = registry.state(keypair(f"flood-{n}").public)
        peer.address, peer.connections, peer.clock = f"10.0.0.{n}:8008", 1, fake
        peer.last_error = "e" * 100_000
    service.clock.update({struct.pack(">Q", n) * 4: 5 for n in range(60_000)})
    async with await connect(path) as client:
        status = await client.status()
        assert len(encode_frame(status, 1 << 30)) < MAX_FRAME
        assert status["peers_total"] == 150 and len(status["peers"]) == 100
        assert status["truncated"] is True and status["feeds"] == 60_000
        shown = status["peers"][0]
        assert shown["behind_feeds"] == 30_000 and len(shown["behind"]) <= 16
        assert len(shown["last_error"]) <= 300

        peers, start = [], 0
        while start is not None:
            page = await client.request("peers", start=start, limit=10**9)
            assert len(encode_frame(page, 1 << 30)) < MAX_FRAME
            peers.extend(page["peers"])
            start = page["next"]
        assert len({peer["key"] for peer in peers}) == 150

        entries, start = [], 0
        while start is not None:
            page = await client.request("clock", start=start)
            assert len(encode_frame(page, 1 << 30)) < MAX_FRAME
            entries.extend(page["entries"])
            start = page["next"]
        assert dict(entries) == service.clock
        theirs = await client.request("clock", peer=keypair("flood-0").public, limit=5)
        assert theirs["total"] == 30_000 and len(theirs["entries"]) == 5
