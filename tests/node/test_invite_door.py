"""Redeeming invites against a real node in this process: its real `Network` with its
invite door on a real TCP port, the redeemer's real handshake (node/invites/use.py).

Every hostile redemption is refused with its reason and leaves the inviter's store as
it was; gossip still passes through the door; no log line carries a secret."""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass

import pytest
import structlog
import trio

from tanglenode.node.gossip.network import Network
from tanglenode.node.invites.door import InviteDoor, RedemptionRate
from tanglenode.node.invites.use import InviteFailed, redeem
from tanglenode.node.net.peers import PeerRegistry
from tanglenode.node.net.transport import client_handshake
from tanglenode.node.service.store_service import StoreService
from tanglenode.protocol.framing import FrameDecoder, encode_frame
from tanglenode.protocol.identity import Keypair
from tanglenode.protocol.invite import InviteCode, Refusal, network_tag, parse_answer, secret_hash
from tanglenode.storage.store import FeedStore
from tests.factories import keypair

NETWORK_KEY = bytes(range(32))
WAIT = 20


@dataclass
class Inviter:
    keypair: Keypair
    store: FeedStore
    service: StoreService
    network: Network
    door: InviteDoor
    port: int

    def code(self, secret: bytes, *, port: int | None = None, feed: bytes | None = None):
        address = f"127.0.0.1:{self.port if port is None else port}"
        return InviteCode((address,), feed or self.keypair.public, secret, network_tag(NETWORK_KEY))

    def invite(self, secret: bytes, uses: int = 1, expires: float | None = None, back=True):
        self.store.invites.create(
            secret_hash(secret), time.time(), uses=uses, expires=expires, follow_back=back
        )

    def state(self):
        """What a refusal must leave as it was: the invites, and our own feed."""
        invites = [(i.id, i.left, i.by, i.revoked) for i in self.store.invites.listing()]
        return invites, self.store.feeds.frontier().get(self.keypair.public, 0)

    def follows(self, feed: bytes) -> bool:
        stance = self.store.feeds.stances(self.keypair.public).get(feed)
        return stance is not None and stance.follows


@pytest.fixture
async def inviter(tmp_path, nursery):
    stores = []

    async def start(name="inviter", rate: RedemptionRate | None = None, **options) -> Inviter:
        me = keypair(name)
        store = FeedStore(tmp_path / name, keypair=me, map_size=2**27)
        stores.append(store)
        service = StoreService(store)
        door = InviteDoor(service, rate=rate)
        network = Network(NETWORK_KEY, me, service, PeerRegistry(), door=door, **options)
        _host, port = await nursery.start(network.serve, "127.0.0.1", 0)
        return Inviter(me, store, service, network, door, port)

    yield start
    nursery.cancel_scope.cancel()
    for store in stores:
        store.close()


async def redeem_as(code: InviteCode, who: Keypair | None = None):
    with trio.fail_after(WAIT):
        return await redeem(code, NETWORK_KEY, who or Keypair.generate(), seconds=WAIT)


async def refused(code: InviteCode, who: Keypair | None = None) -> Refusal:
    with pytest.raises(InviteFailed) as failed:
        await redeem_as(code, who)
    return failed.value.refusal


def test_the_rate_admits_so_many_per_address_and_in_all_within_the_window():
    rate = RedemptionRate(per_address=2, in_all=3, window=10)
    assert [rate.admit("a", 0), rate.admit("a", 1), rate.admit("a", 2)] == [True, True, False]
    assert rate.admit("b", 3) and not rate.admit("c", 4)  # 3 in all
    assert rate.admit("a", 10.5)  # the first two left the window


async def test_a_redemption_is_accepted_and_followed_back(inviter):
    node = await inviter()
    node.invite(b"a" * 32)
    newcomer = Keypair.generate()
    address, answer = await redeem_as(node.code(b"a" * 32), newcomer)
    assert address == f"127.0.0.1:{node.port}" and answer.follows_back
    assert node.follows(newcomer.public)
    assert node.store.invites.listing()[0].by == (newcomer.public,)


async def test_wrong_reused_expired_and_revoked_codes_are_refused_and_write_nothing(inviter):
    node = await inviter(rate=RedemptionRate(per_address=100))
    node.invite(b"u" * 32)
    await redeem_as(node.code(b"u" * 32))  # its one use
    node.invite(b"e" * 32, expires=time.time() - 1)
    node.invite(b"r" * 32)
    node.store.invites.revoke(
        next(i.id for i in node.store.invites.listing() if i.hashed == secret_hash(b"r" * 32)),
        time.time(),
    )
    before = node.state()
    assert await refused(node.code(b"w" * 32)) is Refusal.UNKNOWN
    assert await refused(node.code(b"u" * 32)) is Refusal.USED_UP
    assert await refused(node.code(b"e" * 32)) is Refusal.EXPIRED
    assert await refused(node.code(b"r" * 32)) is Refusal.REVOKED
    assert await refused(node.code(b"u" * 32), node.keypair) is Refusal.OWN
    assert node.state() == before
    assert node.door.refused == 5
    counted = node.service.counters.invites  # what /metrics shows, by outcome
    assert counted["redeemed"] == 1 and counted["invite-unknown"] == 1
    assert counted["invite-used-up"] == counted["invite-own"] == counted["invite-revoked"] == 1


async def test_a_flood_of_redemptions_is_rate_limited_before_the_store_is_asked(inviter):
    node = await inviter(rate=RedemptionRate(per_address=5, in_all=60, window=3600))
    node.invite(b"a" * 32)
    before = node.state()
    for n in range(5):
        assert await refused(node.code(bytes([n]) * 32)) is Refusal.UNKNOWN
    # the sixth, even with the right code, is not looked at
    assert await refused(node.code(b"a" * 32)) is Refusal.RATE_LIMITED
    assert node.state() == before


async def test_a_malformed_redemption_frame_is_refused_as_such(inviter):
    node = await inviter()
    host, port = "127.0.0.1", node.port
    with trio.fail_after(WAIT):
        stream = await trio.open_tcp_stream(host, port)
        secure = await client_handshake(
            stream, NETWORK_KEY, Keypair.generate(), node.keypair.public
        )
        await secure.send_all(encode_frame(["invite", 1, b"short secret"]))
        decoder = FrameDecoder()
        while (frame := decoder.next_frame()) is None:
            data = await secure.receive_some()
            assert data, "the door closed without an answer"
            decoder.receive_data(data)
        assert await secure.receive_some() == b""  # then it closes
        await secure.aclose()
    assert parse_answer(frame).refusal is Refusal.MALFORMED


async def test_a_code_naming_another_key_never_hands_over_the_secret(inviter):
    node = await inviter()
    node.invite(b"a" * 32)
    # a server at that address that is not the inviter: the handshake fails first
    assert await refused(node.code(b"a" * 32, feed=keypair("impostor").public)) is (
        Refusal.UNAVAILABLE
    )
    assert node.door.redeemed == node.door.refused == 0
    assert node.store.invites.listing()[0].left == 1


async def test_nobody_listening_is_unavailable_naming_the_address(inviter):
    node = await inviter()
    listener = trio.socket.socket()
    await listener.bind(("127.0.0.1", 0))
    closed_port = listener.getsockname()[1]
    listener.close()
    with pytest.raises(InviteFailed) as failed:
        await redeem_as(node.code(b"a" * 32, port=closed_port))
    assert failed.value.refusal is Refusal.UNAVAILABLE and str(closed_port) in str(failed.value)


async def test_gossip_passes_through_the_door_and_a_silent_peer_is_closed(inviter):
    one, two = await inviter("one"), await inviter("two", handshake_seconds=1)
    await one.service.publish({"type": "post", "text": "through the door"}, None)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(two.network.dial_forever, f"127.0.0.1:{one.port}", one.keypair.public)
        with trio.fail_after(WAIT):
            while two.store.feeds.frontier().get(one.keypair.public, 0) < 1:
                await two.service.wait_changed(two.service.version)
        # a peer that handshakes and says nothing holds no session past the deadline
        stream = await trio.open_tcp_stream("127.0.0.1", two.port)
        secure = await client_handshake(stream, NETWORK_KEY, Keypair.generate(), two.keypair.public)
        with trio.fail_after(WAIT):
            assert await secure.receive_some() == b""
        await secure.aclose()
        nursery.cancel_scope.cancel()


async def test_no_log_line_carries_the_secret(inviter):
    node = await inviter()
    node.invite(b"k" * 32)
    code = node.code(b"k" * 32)
    with structlog.testing.capture_logs() as logs:
        await redeem_as(code)
        await refused(code)  # used up
        await refused(node.code(b"x" * 32))
    assert [entry["event"] for entry in logs] == [
        "invite redeemed",
        "invite refused",
        "invite refused",
    ]
    text = repr(logs)
    for secret in (b"k" * 32, b"x" * 32):
        assert repr(secret) not in text
        assert base64.urlsafe_b64encode(secret).decode()[:20] not in text
    assert code.text() not in text and code.text()[5:25] not in text
