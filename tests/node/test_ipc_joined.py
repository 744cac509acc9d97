"""The joined view over IPC: entry states, placements, and a subscription to `view: joined`.

A real Unix socket and a real store; messages arrive through the service, as from peers.
"""

from contextlib import aclosing

import pytest
import trio

from tanglenode.node.gossip.network import Network
from tanglenode.node.ipc.client import NodeError, connect
from tanglenode.node.ipc.server import IpcServer
from tanglenode.node.net.peers import PeerRegistry
from tanglenode.node.service.store_service import StoreService
from tanglenode.protocol.message import TangleLink
from tanglenode.storage.engine.timeline import Insert, apply_commands
from tanglenode.storage.store import FeedStore
from tests.factories import ALL_VIEWS, Feed, keypair

ME = keypair("ipc-joined")


@pytest.fixture
async def node(tmp_path, nursery):
    store = FeedStore(tmp_path / "store", keypair=ME, map_size=2**28, views=ALL_VIEWS)
    service = StoreService(store)
    registry = PeerRegistry()
    server = IpcServer(service, registry, Network(bytes(32), ME, service, registry), ME)
    path = await nursery.start(server.serve, tmp_path / "ipc.sock")
    yield path, service
    nursery.cancel_scope.cancel()
    store.close()


def chat(root, *previous):
    return {"chat": TangleLink(root.id, tuple(sorted(m.id for m in previous)))}


async def test_entries_and_placements_carry_the_state(node):
    path, service = node
    alice, bob = Feed("alice"), Feed("bob")
    root = alice.root("chat")
    elsewhere = alice.root("other")
    a = bob.append(tangles=chat(root, root))
    waiting = bob.append(tangles=chat(root, a, root))
    bad = Feed("carol").append(
        tangles={"chat": TangleLink(root.id, tuple(sorted((root.id, elsewhere.id))))}
    )
    await service.ingest([root.raw, elsewhere.raw, bad.raw])
    async with await connect(path) as client:
        which = {"tangle": "chat", "root": root.id}
        entries = (await client.timeline(**which))["entries"]
        assert {entry[1]: entry[2] for entry in entries} == {root.id: "joined", bad.id: "invalid"}
        found = await client.request("placement", message=bad.id, **which)
        assert (found["state"], found["reason"]) == ("invalid", "previous-outside-tangle")
        spacetime = await client.request("placement", message=root.id, spacetime=True)
        assert "state" not in spacetime
        assert all(len(entry) == 2 for entry in (await client.timeline(spacetime=True))["entries"])
        joined = (await client.timeline(view="joined", **which))["entries"]
        assert [entry[1] for entry in joined] == [root.id]
        with pytest.raises(NodeError, match="not-found"):
            await client.request("placement", message=a.id, view="joined", **which)
        await service.ingest([a.raw, waiting.raw])
        found = await client.request("placement", message=waiting.id, view="joined", **which)
        assert (found["position"], found["state"]) == (2, "joined")


async def test_a_pending_member_says_what_it_waits_on(node):
    path, service = node
    alice, bob, carol = Feed("alice"), Feed("bob"), Feed("carol")
    root = alice.root("chat")
    a = bob.append(tangles=chat(root, root))
    b = carol.append(tangles=chat(root, a))
    await service.ingest([root.raw, b.raw])
    async with await connect(path) as client:
        which = {"tangle": "chat", "root": root.id}
        found = await client.request("placement", message=b.id, **which)
        assert (found["state"], found["waiting"]) == ("pending", [a.id])
        assert "reason" not in found


async def collect_joined(client, root, until_version):
    commands, version = [], 0
    events = client.subscribe(since=0, tangle="chat", root=root, view="joined")
    async with aclosing(events):
        async for event in events:
            for command in event.get("commands", ()):
                version = command["v"]
                assert "ins" in command  # members join after all they name: never a move
                commands.append(Insert(command["ins"], command["message"]["id"]))
            if version >= until_version:
                return commands


async def test_a_joined_subscription_streams_joins_only_and_rebuilds_the_view(node):
    path, service = node
    alice, bob, carol = Feed("alice"), Feed("bob"), Feed("carol")
    root = alice.root("chat")
    a = bob.append(tangles=chat(root, root))
    b = carol.append(tangles=chat(root, a))
    c = carol.append(tangles=chat(root, b))
    d = alice.append(tangles=chat(root, root))
    async with await connect(path) as client, trio.open_nursery() as nursery:
        received = []

        async def follow():
            received.extend(await collect_joined(client, root.id, 5))

        nursery.start_soon(follow)
        await service.ingest([b.raw, c.raw])  # set aside: nothing joins, nothing streams
        await service.ingest([root.raw, d.raw])  # root and d join: two inserts
        await service.ingest([a.raw])  # a joins, and b and c after it: three inserts
    async with await connect(path) as client:
        which = {"tangle": "chat", "root": root.id}
        joined = (await client.timeline(view="joined", **which))["entries"]
        everything = (await client.timeline(**which))["entries"]
    assert apply_commands([], received) == [entry[1] for entry in joined]
    assert [entry[:2] for entry in joined] == [entry[:2] for entry in everything]
