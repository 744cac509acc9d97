"""Attackers speaking the real gossip protocol to honest nodes in this process.

Each honest node is a real store, the real `Network` on a real TCP port of
127.0.0.1; each attacker does the real handshake and writes frames by hand.
Every test asserts the honest side's outcome: the same state on every
honest node, the evidence held, memory bounded, the node still serving.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

import pytest
import trio

from tanglenode.node.gossip.network import Network
from tanglenode.node.net.peers import RECENT, PeerRegistry
from tanglenode.node.net.transport import SecureStream, client_handshake
from tanglenode.node.service.store_service import StoreService
from tanglenode.protocol.framing import FrameDecoder, encode_frame
from tanglenode.protocol.gossip import VERSION, FrameKind, GossipConnection, PeerHello, tag_of
from tanglenode.protocol.identity import Keypair
from tanglenode.protocol.message import Message
from tanglenode.storage.store import FeedStore
from tests.factories import Feed, keypair, sign_raw, unsigned_fields
from tests.storage.test_invalidation import state

NETWORK_KEY = bytes(range(32))
WAIT = 20


@dataclass
class Honest:
    name: str
    keypair: Keypair
    store: FeedStore
    service: StoreService
    registry: PeerRegistry
    network: Network
    port: int = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def until(self, condition: Callable[[], bool]) -> None:
        """Wait (bounded) until `condition()` holds, woken by every store change."""
        with trio.fail_after(WAIT):
            while not condition():
                seen = self.service.version
                with trio.move_on_after(0.2):  # peers' states change without a store write
                    await self.service.wait_changed(seen)


@pytest.fixture
async def honest(tmp_path, nursery):
    """Start honest nodes on demand: `await honest("a", max_peer_feeds=...)`."""
    stores = []

    async def start(name: str, **network_options) -> Honest:
        me = keypair(f"honest-{name}")
        store = FeedStore(tmp_path / name, keypair=me, map_size=2**28)
        stores.append(store)
        service = StoreService(store)
        registry = PeerRegistry()
        network = Network(NETWORK_KEY, me, service, registry, **network_options)
        node = Honest(name, me, store, service, registry, network)
        _host, node.port = await nursery.start(network.serve, "127.0.0.1", 0)
        return node

    yield start
    nursery.cancel_scope.cancel()
    for store in stores:
        store.close()


def link(nursery, dialer: Honest, target: Honest) -> None:
    nursery.start_soon(dialer.network.dial_forever, target.address, target.keypair.public)


@asynccontextmanager
async def gossip_to(
    address: str, network_key: bytes, target: bytes, me: Keypair, clock=None, window: int = 64
):
    """A handshaken gossip connection to the node at `address` (key `target`), HELLO exchanged."""
    host, port = address.rsplit(":", 1)
    with trio.fail_after(WAIT):
        stream = await trio.open_tcp_stream(host, int(port))
        secure = await client_handshake(stream, network_key, me, target)
        gossip = GossipConnection(window=window)
        await secure.send_all(gossip.hello(clock or {}))
        while not any(isinstance(e, PeerHello) for e in await receive(secure, gossip)):
            pass
    try:
        yield secure, gossip
    finally:
        with trio.CancelScope(shield=True):
            await secure.aclose()


def attacker(target: Honest, me: Keypair | None = None, clock=None, window: int = 64):
    """`gossip_to` an in-process honest node."""
    me = me or Keypair.generate()
    return gossip_to(target.address, NETWORK_KEY, target.keypair.public, me, clock, window)


async def receive(secure: SecureStream, gossip: GossipConnection) -> list:
    data = await secure.receive_some()
    if not data:
        raise trio.BrokenResourceError("the node hung up")
    return gossip.receive_data(data)


async def push(secure: SecureStream, gossip: GossipConnection, messages: list[Message]) -> None:
    """Send messages as the credit allows, reading the node's grants as they come."""
    raws = [message.raw for message in messages]
    with trio.fail_after(WAIT):
        while raws:
            if gossip.send_credit == 0:
                await receive(secure, gossip)
                continue
            batch, raws = raws[: gossip.send_credit], raws[gossip.send_credit :]
            await secure.send_all(gossip.messages(batch))


async def until_hung_up(secure: SecureStream, gossip: GossipConnection) -> None:
    with trio.fail_after(WAIT):
        try:
            while await secure.receive_some():
                pass
        except trio.BrokenResourceError:
            pass


def last_error(node: Honest, peer: Keypair) -> str:
    return node.registry.peers[peer.public].last_error or ""


async def test_a_peer_of_the_older_gossip_version_is_refused_with_both_versions_named(honest):
    x = await honest("x")
    old = Keypair.generate()
    host, port = x.address.rsplit(":", 1)
    with trio.fail_after(WAIT):
        stream = await trio.open_tcp_stream(host, int(port))
        secure = await client_handshake(stream, NETWORK_KEY, old, x.keypair.public)
    try:
        # The previous version's HELLO (a node without witnesses): the same shape, another
        # number.
        await secure.send_all(encode_frame([FrameKind.HELLO, VERSION - 1, {}, 64]))
        decoder = FrameDecoder()  # the node's own HELLO came first: our version, which the
        with trio.fail_after(WAIT):  # old node refuses in turn
            while (frame := decoder.next_frame()) is None:
                data = await secure.receive_some()
                assert data, "the node hung up before its HELLO"
                decoder.receive_data(data)
        assert frame[:2] == [FrameKind.HELLO, VERSION]
        await until_hung_up(secure, GossipConnection(window=64))
    finally:
        with trio.CancelScope(shield=True):
            await secure.aclose()
    said = f"gossip version {VERSION - 1}; we speak {VERSION}"
    await x.until(lambda: said in last_error(x, old))
    assert last_error(x, old) == f"gossip-version: the peer speaks {said}"
    assert x.registry.peers[old.public].clock == {} and not x.service.invalid


@pytest.mark.parametrize("count", [1, 3])
async def test_evidence_that_is_not_a_fork_proof_drops_the_sender(honest, count):
    x = await honest("x")
    liar = Feed("three-of-a-kind")
    raws = [liar.append({"n": n}).raw for n in range(count)]
    sender = Keypair.generate()
    async with attacker(x, sender) as (secure, gossip):
        await secure.send_all(encode_frame([FrameKind.EVIDENCE, raws]))
        await until_hung_up(secure, gossip)
    await x.until(
        lambda: f"bad-evidence: EVIDENCE carries {count} messages" in last_error(x, sender)
    )
    assert x.service.invalid == {} and x.store.feeds.evidence() == []


def fork(label: str, shared: int, length: int) -> tuple[Feed, Feed]:
    """Two branches of one key: equal for `shared` messages, `length` long each."""
    one = Feed(f"fork-{label}")
    for n in range(length):
        one.append({"branch": 1, "n": n})
    two = Feed(one.keypair)
    two.messages = one.messages[:shared]
    for n in range(shared, length):
        two.append({"branch": 2, "n": n})
    return one, two


@pytest.mark.parametrize("shared", [1, 3], ids=["fork-at-2", "fork-at-4"])
async def test_two_branches_at_the_same_moment_are_found_and_the_evidence_travels(
    honest, nursery, shared
):
    x, y = await honest("x"), await honest("y")
    link(nursery, x, y)
    await x.until(lambda: x.registry.is_connected(y.keypair.public))
    one, two = fork("same-moment", shared, 6)
    async with attacker(x) as (to_x, gx), attacker(y) as (to_y, gy), trio.open_nursery() as both:
        both.start_soon(push, to_x, gx, one.messages)
        both.start_soon(push, to_y, gy, two.messages)
    author = one.public
    # Heads at one seq with different tags are compared, the branches walked
    # back to where they part, the proof sent on: both end cut before it.
    await x.until(lambda: x.service.invalid.get(author) == shared + 1)
    await y.until(lambda: y.service.invalid.get(author) == shared + 1)
    await x.until(lambda: x.service.clock.get(author) == shared)
    await y.until(lambda: y.service.clock.get(author) == shared)
    assert state(x.store) == state(y.store)
    (proof,) = x.store.feeds.evidence()
    assert {m.seq for m in proof.messages} == {shared + 1}
    assert x.registry.is_connected(y.keypair.public)
    assert x.registry.peers[y.keypair.public].last_error is None


async def test_a_peer_sending_variants_of_one_seq_is_dropped_and_one_pair_is_kept(honest):
    x = await honest("x")
    original = Feed("variants")
    original.append({"n": 1})
    original.append({"n": 2})
    variants = []
    for n in range(2000):
        variant = Feed(original.keypair)
        variant.messages = original.messages[:1]
        variants.append(variant.append({"variant": n}))
    sender = Keypair.generate()
    async with attacker(x, sender, window=512) as (secure, gossip):
        await push(secure, gossip, original.messages)
        await x.until(lambda: x.service.clock.get(original.public) == 2)
        try:
            await push(secure, gossip, variants)
            await until_hung_up(secure, gossip)
        except trio.BrokenResourceError:
            pass  # it hung up on us mid-push
    await x.until(lambda: "two messages" in last_error(x, sender))
    assert x.store.feeds.statistics()["evidence"] == 2
    assert x.service.invalid == {original.public: 2}
    assert not x.registry.is_connected(sender.public)


async def test_huge_clocks_are_refused_and_peer_state_is_freed(honest):
    x = await honest("x", max_peer_feeds=1000)
    fake = {index.to_bytes(32, "big"): (1, tag_of(bytes(32))) for index in range(2800)}
    senders = [Keypair.generate() for _ in range(5)]
    for sender in senders:
        async with attacker(x, sender, clock={}) as (secure, gossip):
            # Frames each under the cap, together past it.
            entries = list(fake.items())
            for start in range(0, len(entries), 900):
                await secure.send_all(gossip.clock(dict(entries[start : start + 900])))
            await until_hung_up(secure, gossip)
        await x.until(lambda s=sender: "more than 1000 feeds" in last_error(x, s))
    # One frame naming more feeds than the cap is refused by the protocol itself.
    sender = Keypair.generate()
    async with attacker(x, sender) as (secure, gossip):
        await secure.send_all(gossip.clock(dict(list(fake.items())[:1001])))
        await until_hung_up(secure, gossip)
    await x.until(lambda: "names 1001 feeds, the limit is 1000" in last_error(x, sender))
    assert all(not peer.clock for peer in x.registry.peers.values() if not peer.connected)
    # Peers we do not dial are forgotten beyond the most recent few.
    many = PeerRegistry(recent=3)
    for index in range(10):
        key = index.to_bytes(32, "big")
        many.connected(key, "in", None).clock = {key: 1}
        many.disconnected(key, "gone")
    assert len(many.peers) == 3 and RECENT >= 3
    # A peer under the cap is served; its clock is dropped when it leaves.
    small = dict(list(fake.items())[:500])
    sender = Keypair.generate()
    async with attacker(x, sender, clock=small):
        await x.until(lambda: len(x.registry.peers[sender.public].clock) == 500)
    await x.until(lambda: not x.registry.is_connected(sender.public))
    assert x.registry.peers[sender.public].clock == {}


async def test_a_malformed_proof_drops_the_sender_only(honest):
    x = await honest("x")
    honest_feed = Feed("bystander")
    alice, bob = Feed("liar-a"), Feed("liar-b")
    a1, b1 = alice.append({"n": 1}), bob.append({"n": 1})  # two authors: no fork
    sender = Keypair.generate()
    async with attacker(x, sender) as (secure, gossip):
        await secure.send_all(gossip.evidence([a1.raw, b1.raw]))
        await until_hung_up(secure, gossip)
    await x.until(lambda: "proves nothing" in last_error(x, sender))
    assert x.service.invalid == {}
    async with attacker(x) as (secure, gossip):  # the node still serves
        await push(secure, gossip, [honest_feed.append({"still": "up"})])
        await x.until(lambda: x.service.clock.get(honest_feed.public) == 1)


async def test_content_nested_too_deep_from_a_peer_is_refused_and_the_node_serves_on(honest):
    x = await honest("x")
    deep: list = []
    for _ in range(500):
        deep = [deep]
    liar = keypair("deep-liar")
    raw = sign_raw(liar, unsigned_fields(liar, content=deep), canonical=False)
    assert len(raw) < 16 * 1024
    sender = Keypair.generate()
    async with attacker(x, sender) as (secure, gossip):
        await secure.send_all(gossip.messages([raw]))
        await until_hung_up(secure, gossip)
    await x.until(lambda: "too-deep" in last_error(x, sender))
    assert x.store.feeds.frontier() == {}
    bystander = Feed("after-deep")
    async with attacker(x) as (secure, gossip):
        await push(secure, gossip, [bystander.append({"still": "up"})])
        await x.until(lambda: x.service.clock.get(bystander.public) == 1)
