"""The node's and its peers' IPC ops (node/ipc/peers.py), and digests, over a real socket."""

import time

import pytest
import trio

from tanglenode.node.gossip.network import Network
from tanglenode.node.ipc.client import NodeError, connect
from tanglenode.node.ipc.peers import StoreFacts
from tanglenode.node.ipc.server import IpcServer
from tanglenode.node.net.peers import PeerRegistry
from tanglenode.node.service.store_service import StoreService
from tanglenode.protocol.identity import feed_text, tag_of
from tanglenode.storage.store import FeedStore
from tanglenode.storage.views.digest import EMPTY, order_digest
from tests.factories import ALL_VIEWS, Feed, keypair

ME = keypair("ipc-peers")
PEER = keypair("ipc-peers-other")


@pytest.fixture
async def node(tmp_path, nursery):
    store = FeedStore(tmp_path / "store", keypair=ME, map_size=2**28, views=ALL_VIEWS)
    service = StoreService(store)
    registry = PeerRegistry()
    network = Network(bytes(32), ME, service, registry)
    server = IpcServer(service, registry, network, ME, status_extra={"listen": "-"})
    path = await nursery.start(server.serve, tmp_path / "ipc.sock")
    yield path, store, registry, network
    nursery.cancel_scope.cancel()
    store.close()


async def test_timeline_digest_and_status_digests(node):
    path, store, _registry, _network = node
    async with await connect(path) as client:
        empty = await client.request("timeline", spacetime=True, digest=True)
        assert empty == {"version": 0, "count": 0, "digest": EMPTY.digest}
        assert "digests" not in await client.status()  # only when asked: not free
        root = await client.publish("root", {"chat": None})
        reply = await client.publish("reply", {"chat": root["id"]})
        chat = {"tangle": "chat", "root": root["id"]}
        found = await client.request("timeline", **chat, digest=True)
        assert found["count"] == 2
        assert found["digest"] == order_digest([root["id"], reply["id"]])
        page = await client.timeline(**chat)
        assert found["version"] == page["version"]
        status = await client.request("status", digests=True)
        spacetime, tangle = status["digests"]
        assert spacetime == {"spacetime": True, "version": 2, "count": 2} | {
            "digest": order_digest(
                i for _r, i in store.timelines.timeline(store.timelines.timeline_name(None))
            )
        }
        assert tangle == {**chat, **found} and status["digests_truncated"] is False
        causal = await client.request("timeline", **chat, order="causal-time", digest=True)
        assert causal["count"] == 2  # a digest of any view and order
        with pytest.raises(NodeError, match="not-found"):
            await client.request("timeline", tangle="chat", root=bytes(32), digest=True)


async def test_status_shows_an_inbound_peer_by_key_and_a_stale_error_with_its_age(node):
    path, _store, registry, _network = node
    inbound = registry.connected(PEER.public, "in", "127.0.0.1:53124")  # a source port
    dialed = registry.dialing(ME.public, "10.0.0.9:8008")
    dialed.failed("dial 10.0.0.9:8008: connection refused")
    dialed.error_at = time.time() - 90
    async with await connect(path) as client:
        peers = {peer["key"]: peer for peer in (await client.status())["peers"]}
        assert peers[PEER.public]["address"] is None
        assert peers[PEER.public]["direction"] == "in"
        assert peers[ME.public]["last_error_age"] >= 90
        assert peers[ME.public]["dialed"] is True
    registry.disconnected(PEER.public, "connection lost: reset")
    assert inbound.last_error == "connection lost: reset" and inbound.source is None
    registry.connected(PEER.public, "in", "127.0.0.1:53999")
    assert inbound.last_error is None and inbound.error_age() is None  # connected again


async def test_status_shows_suspected_forks_until_the_proof_comes(node):
    path, store, _registry, _network = node
    forker = Feed("ipc-forker")
    held = forker.append({"branch": 1})
    other = Feed(forker.keypair).append({"branch": 2})
    honest = Feed("ipc-honest")
    naming = honest.append("saw branch two", timeframe={forker.public: other})
    store.writes.ingest([held.raw, naming.raw])  # the honest message names the branch not held
    async with await connect(path) as client:
        status = await client.status()
        assert status["suspected_forks"] == [
            {
                "feed": forker.public,
                "seq": 1,
                "named_tag": tag_of(other.id),
                "held_tag": tag_of(held.id),
                "named_by": honest.public,
            }
        ]
        assert status["suspected_forks_total"] == 1 and status["truncated"] is False
        assert status["stalls"] == [  # the naming message waits: a stall as well
            {
                "feed": honest.public,
                "seq": 1,
                "waits_for": [forker.public, 1],
                "waits_for_tag": tag_of(other.id),
                "suspected": True,
                "witness": False,
            }
        ]
        store.writes.ingest([other.raw])  # the other branch: a proof, which settles it
        status = await client.status()
        assert status["suspected_forks"] == [] and status["suspected_forks_total"] == 0
        assert status["stalls_total"] == 0


async def test_status_reads_the_store_once_a_commit_however_often_it_is_asked(node):
    """Polled between commits, `status` answers from what it read after the last one; any
    commit, the node's or another writer's of the same store, makes it read again."""
    path, store, _registry, network = node
    facts = network.service.shared(StoreFacts)  # the one the node's `status` keeps
    forker = Feed("ipc-poll-forker")
    held = forker.append({"branch": 1})
    other = Feed(forker.keypair).append({"branch": 2})
    naming = Feed("ipc-poll-honest").append("saw two", timeframe={forker.public: other})
    async with await connect(path) as client:
        first = await client.status()
        reads = facts.reads
        for _ in range(5):
            assert await client.status() == first
        assert facts.reads == reads  # nothing committed: nothing read
        await client.publish("a post", {"chat": None})  # the node's own writer
        assert (await client.status())["final"] == first["final"] + 1
        assert facts.reads == reads + 1
        store.writes.ingest([held.raw, naming.raw])  # a writer the service never saw
        stalled = await client.status()
        assert stalled["suspected_forks_total"] == 1 and stalled["stalls_total"] == 1
        assert facts.reads == reads + 2
        store.writes.ingest([other.raw])
        settled = await client.status()
        assert settled["suspected_forks_total"] == 0 and settled["stalls_total"] == 0
        assert facts.reads == reads + 3


async def test_disconnect_stops_a_dialer_and_refuses_an_unknown_peer(node):
    path, _store, registry, _network = node
    async with await connect(path) as client:
        with pytest.raises(NodeError, match="not-found"):
            await client.request("disconnect", key=PEER.public)
        # A port nothing listens on: the dialer keeps failing and retrying.
        with trio.socket.socket() as probe:
            await probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        await client.request("connect", address=f"127.0.0.1:{port}", key=PEER.public)
        assert registry.peers[PEER.public].dialed
        assert await client.request("disconnect", key=PEER.public) == {
            "dialed": True,
            "connections": 0,
        }
        assert not registry.peers[PEER.public].dialed
        with pytest.raises(NodeError, match="not-found"):  # nothing left to stop
            await client.request("disconnect", key=PEER.public)


async def test_connect_with_save_adds_the_peer_to_the_config_once(tmp_path, nursery):
    from tanglenode.config.settings import load_settings
    from tanglenode.config.template import render_config

    store = FeedStore(tmp_path / "store", keypair=ME, map_size=2**28, views=ALL_VIEWS)
    service = StoreService(store)
    registry = PeerRegistry()
    network = Network(bytes(32), ME, service, registry)
    config = tmp_path / "tangled.toml"
    server = IpcServer(service, registry, network, ME, config_file=config)
    path = await nursery.start(server.serve, tmp_path / "ipc.sock")
    with trio.socket.socket() as probe:
        await probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    address = f"127.0.0.1:{port}"
    try:
        async with await connect(path) as client:
            with pytest.raises(NodeError, match="not-found"):  # no config file yet
                await client.request("connect", address=address, key=PEER.public, save=True)
            assert PEER.public not in registry.peers  # not dialed when not saved
            config.write_text(render_config(tmp_path))
            reply = await client.request("connect", address=address, key=PEER.public, save=True)
            assert reply == {"dialing": address, "saved": True, "standing": "every-feed"}
            again = await client.request("connect", address=address, key=PEER.public, save=True)
            assert again["saved"] is False  # already there: written once
            saved = load_settings(config, environ={}).peers
            assert [(p.address, p.key) for p in saved] == [(address, feed_text(PEER.public))]
            with pytest.raises(NodeError, match="conflict"):  # the same key, another address
                await client.request("connect", address="127.0.0.1:1", key=PEER.public, save=True)
            assert len(load_settings(config, environ={}).peers) == 1
            with pytest.raises(NodeError, match="bad-request"):  # a flag is a boolean
                await client.request("connect", address=address, key=PEER.public, save=1)
    finally:
        nursery.cancel_scope.cancel()
        store.close()
