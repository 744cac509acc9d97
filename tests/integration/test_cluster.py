"""Several real nodes on 127.0.0.1: partition and heal, SIGKILL mid-replication, a forger."""

import json
import subprocess

import pytest
import trio

from tanglenode.node.localnet import CONVERGE_SECONDS, REQUEST_SECONDS, TANGLED, Node
from tanglenode.node.net.transport import client_handshake
from tanglenode.pipeline.session import java_missing
from tanglenode.protocol.gossip import GossipConnection, PeerHello
from tanglenode.protocol.identity import Keypair, parse_feed
from tanglenode.protocol.message import sign_message
from tests.factories import break_signature
from tests.timeline_oracle import rank_order

PER_NODE = 100


async def publish_many(node: Node, count: int, tangles=None) -> list[dict]:
    with trio.fail_after(CONVERGE_SECONDS):
        async with await node.client() as client:
            return [
                await client.publish({"from": node.name, "n": n}, tangles) for n in range(count)
            ]


async def all_messages(node: Node) -> list[dict]:
    """Every message the node holds, fetched through IPC by the spacetime's ids."""
    with trio.fail_after(CONVERGE_SECONDS):
        async with await node.client() as client:
            entries = await node.timeline(spacetime=True)
            return [await client.get(msg_id) for _rank, msg_id in entries]


@pytest.mark.slow  # 22-30 s; tests/integration/test_chaos.py's three nodes run in `make test`
async def test_four_nodes_partitioned_then_healed_converge_on_one_order(tmp_path):
    a, b, c, d = (Node(tmp_path, name) for name in "abcd")
    # Everyone learns the tangle's root first: a ring through all four.
    await a.start()
    await b.start([a])
    await c.start([b])
    await d.start([c])
    root = (await a.publish({"type": "chat"}, {"chat": None}))["id"]
    chat = {"tangle": "chat", "root": root}
    for node in (a, b, c, d):
        await node.wait_for_size(1, **chat)
    for node in (a, b, c, d):
        assert await node.stop() == 0

    # Partition: {a, c} and {b, d}; each node writes 100 messages into the tangle.
    await a.start()
    await c.start([a])
    await b.start()
    await d.start([b])
    async with trio.open_nursery() as nursery:
        for node in (a, b, c, d):
            nursery.start_soon(publish_many, node, PER_NODE, {"chat": root})
    for node in (a, c, b, d):
        await node.wait_for_size(1 + 2 * PER_NODE, **chat)
    assert len(await a.timeline(**chat)) == 1 + 2 * PER_NODE  # the partition held

    # Heal: a dials b, c dials d.
    with trio.fail_after(REQUEST_SECONDS):
        async with await a.client() as client:
            await client.connect_peer(b.listen, b.key)
        async with await c.client() as client:
            await client.connect_peer(d.listen, d.key)
    total = 1 + 4 * PER_NODE
    for node in (a, b, c, d):
        await node.wait_for_size(total, **chat)
        await node.wait_for_size(total, spacetime=True)

    tangles = [await node.timeline(**chat) for node in (a, b, c, d)]
    spacetimes = [await node.timeline(spacetime=True) for node in (a, b, c, d)]
    assert all(timeline == tangles[0] for timeline in tangles)
    assert all(timeline == spacetimes[0] for timeline in spacetimes)
    messages = await all_messages(a)
    tangle_events = [
        (m["id"], m["tangles"]["chat"]["previous"]) for m in messages if "chat" in m["tangles"]
    ]
    assert [msg_id for _rank, msg_id in tangles[0]] == rank_order(tangle_events)
    assert len(tangles[0]) == total
    for node in (a, b, c, d):
        assert await node.stop() == 0

    # The batch pipeline agrees with a's incremental timelines, position for position.
    if (no_java := java_missing()) is not None:  # converged; the audit needs Spark's JVM
        pytest.skip(f"the batch audit at the end: {no_java}")
    archive = tmp_path / "archive-a"
    tangled = [str(TANGLED), "--data-dir", str(a.data_dir)]
    subprocess.run([*tangled, "export", "--out", str(archive)], check=True, timeout=120)
    done = subprocess.run(
        [*tangled, "pipeline", "audit", "--in", str(archive), "--out", str(tmp_path / "audit")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1])["rows"] == 0


async def test_a_node_killed_during_replication_converges_after_restart(tmp_path):
    source, sink = Node(tmp_path, "source"), Node(tmp_path, "sink")
    await source.start()
    await publish_many(source, 600)
    await sink.start([source])
    await sink.wait_for_size(100, spacetime=True)  # mid-replication
    await sink.kill()
    await sink.start([source])
    await sink.wait_for_size(600, spacetime=True)
    assert await sink.timeline(spacetime=True) == await source.timeline(spacetime=True)
    await sink.stop()
    await source.stop()
    check = subprocess.run(
        [str(TANGLED), "--data-dir", str(sink.data_dir), "check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert check.returncode == 0, check.stdout + check.stderr


async def send_forgery(target: Node, forger: Keypair) -> None:
    """Handshake with `target` as a peer and push one message with a broken signature."""
    host, port = target.listen.rsplit(":", 1)
    network = bytes.fromhex(_network_key_hex(target))
    with trio.fail_after(REQUEST_SECONDS):
        stream = await trio.open_tcp_stream(host, int(port))
        secure = await client_handshake(stream, network, forger, target.key)
        gossip = GossipConnection(window=16)
        await secure.send_all(gossip.hello({}))
        while not any(
            isinstance(e, PeerHello) for e in gossip.receive_data(await secure.receive_some())
        ):
            pass
        message = sign_message(
            forger, seq=1, prev=None, timestamp=1, timeframe={}, tangles={}, content="forged"
        )
        await secure.send_all(gossip.messages([break_signature(message.raw)]))
        while await secure.receive_some():  # the node hangs up on us
            pass
        await secure.aclose()


def _network_key_hex(node: Node) -> str:
    import base64

    from tanglenode.config.settings import load_settings

    settings = load_settings(node.data_dir / "tangled.toml")
    return base64.b64decode(settings.network_key).hex()


async def test_a_forging_peer_is_dropped_and_the_others_converge(tmp_path):
    a, b = Node(tmp_path, "a"), Node(tmp_path, "b")
    await a.start()
    await b.start([a])
    forger = Keypair.generate()
    await send_forgery(a, forger)
    await publish_many(b, 5)
    await publish_many(a, 5)
    await a.wait_for_size(10, spacetime=True)
    await b.wait_for_size(10, spacetime=True)
    assert await a.timeline(spacetime=True) == await b.timeline(spacetime=True)
    with trio.fail_after(REQUEST_SECONDS):
        async with await a.client() as client:
            peers = {peer["key"]: peer for peer in (await client.status())["peers"]}
    assert "bad-signature" in peers[forger.public]["last_error"]
    assert not peers[forger.public]["connected"]
    assert peers[b.key]["connected"] and peers[b.key]["caught_up"]
    assert all(entry[1] for entry in await a.timeline(spacetime=True))
    dropped = [line for line in a.log_lines() if line.get("event") == "peer dropped"]
    assert dropped and "bad-signature" in dropped[0]["reason"]
    await a.stop()
    await b.stop()
    assert parse_feed(forger.feed_id) not in {m["author"] for m in await _offline_authors(a)}


async def _offline_authors(node: Node) -> list[dict]:
    await node.start()
    try:
        return await all_messages(node)
    finally:
        await node.stop()
