"""A scope you can see (node/ipc/scope_notes.py): what a peer shows that we do not follow is
"not followed" (or "blocked"), never "behind"; `connect` says what of the peer the scope will
carry; `follow` of a feed never shown says so; a publish into a thread whose root is not
held says whose it is and what to do.

Each node is a real store with the default scope (`hops = 2`, kept by `keep_scope` as the
daemon does), the real `Network` on a TCP port of 127.0.0.1 and the real IPC server on a
Unix socket, asked through the real client."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import trio

from tanglenode.node.cli.daemon import _peer_lines, _standing_line
from tanglenode.node.cli.names import Names
from tanglenode.node.gossip.network import Network
from tanglenode.node.ipc.client import NodeError, connect
from tanglenode.node.ipc.server import IpcServer
from tanglenode.node.net.peers import PeerRegistry
from tanglenode.node.service.store_service import StoreService
from tanglenode.node.web.peers import peer_fields
from tanglenode.node.web.people import NOT_FOLLOWING
from tanglenode.node.web.status_page import render_status
from tanglenode.protocol.identity import Keypair, feed_text
from tanglenode.protocol.ipc import BEHIND_SHOWN
from tanglenode.protocol.message import TangleLink
from tanglenode.storage.store import FeedStore
from tests.factories import Feed, keypair

pytestmark = pytest.mark.timeout(60)

NETWORK_KEY = bytes(range(32))
WAIT = 20
FOLLOWS = {"following": True, "blocking": False}  # of a contact message's content


@dataclass
class Running:
    """One node: its store, service, peers, network (on `port`) and IPC socket."""

    keypair: Keypair
    store: FeedStore
    service: StoreService
    registry: PeerRegistry
    network: Network
    port: int
    socket: Path

    @property
    def key(self) -> bytes:
        return self.keypair.public

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def ask(self, op: str, **arguments):
        with trio.fail_after(WAIT):
            async with await connect(self.socket) as client:
                return await client.request(op, **arguments)

    async def until(self, condition: Callable[[], bool]) -> None:
        """Wait (bounded) until `condition()` holds, woken by every store change."""
        with trio.fail_after(WAIT):
            while not condition():
                seen = self.service.version
                with trio.move_on_after(0.2):  # peers' clocks change without a store write
                    await self.service.wait_changed(seen)

    def shows(self, peer: Running) -> bool:
        """Whether `peer` is connected and its HELLO came: it named some feed."""
        state = self.registry.peers.get(peer.key)
        return state is not None and state.connected and bool(state.clock)


@pytest.fixture
async def nodes(tmp_path):
    """Start nodes on demand: `await nodes("a", hops=2, held=[...])`. Their stores close once
    every task of theirs has ended (a read in a worker thread outlives a cancel)."""
    stores = []
    async with trio.open_nursery() as nursery:
        yield _starter(tmp_path, nursery, stores)
        nursery.cancel_scope.cancel()
    for store in stores:
        store.close()


def _starter(tmp_path: Path, nursery: trio.Nursery, stores: list[FeedStore]):
    async def start(name: str, hops: int | None = 2, held=()) -> Running:
        me = keypair(f"scope-notes-{name}")
        store = FeedStore(tmp_path / name, keypair=me, map_size=2**28)
        stores.append(store)
        if held:
            store.writes.ingest([message.raw for message in held])
        service = StoreService(store, hops)
        await nursery.start(service.keep_scope)  # as the daemon: the scope kept from the start
        registry = PeerRegistry()
        network = Network(NETWORK_KEY, me, service, registry)
        _host, port = await nursery.start(network.serve, "127.0.0.1", 0)
        server = IpcServer(
            service, registry, network, me, status_extra={"listen": f"127.0.0.1:{port}"}
        )
        path = await nursery.start(server.serve, tmp_path / f"{name}.sock")
        return Running(me, store, service, registry, network, port, path)

    return start


def chain(name: str, count: int) -> list:
    feed = Feed(name)
    return [feed.append({"n": n}) for n in range(count)]


async def test_a_peers_feeds_we_do_not_follow_are_not_followed_never_behind(nodes):
    carol = chain("scope-notes-carol", 3)
    a = await nodes("a")
    b = await nodes("b", hops=None, held=carol)  # b carries every feed: carol's too
    for n in range(2):
        await b.service.publish({"post": n}, None)
    await a.ask("block", feed=carol[0].author)

    reply = await a.ask("connect", address=b.address, key=b.key)
    assert reply == {"dialing": b.address, "standing": "not-followed"}
    await a.until(lambda: a.shows(b))
    (shown,) = (await a.ask("status"))["peers"]
    assert shown["connected"] and shown["caught_up"]  # nothing we carry is missing
    assert (shown["behind"], shown["behind_feeds"], shown["behind_messages"]) == ({}, 0, 0)
    assert shown["not_followed"] == {b.key: 2}
    assert (shown["not_followed_feeds"], shown["not_followed_messages"]) == (1, 2)
    assert shown["blocked"] == {carol[0].author: 3} and shown["blocked_feeds"] == 1
    (paged,) = (await a.ask("peers"))["peers"]
    assert paged["not_followed"] == {b.key: 2} and paged["blocked_feeds"] == 1
    carried = a.service.scope.carries
    assert sum(a.service.counters.lags(a.service.clock, set(), carried).values()) == 0

    label = feed_text  # what `status` prints, from the real reply
    lines = _peer_lines(shown, label)
    assert "connected, caught up" in lines[0]
    assert lines[1] == (
        f"  not followed: 1 feed, 2 messages ({feed_text(b.key)}), nothing of them carried;"
        f" carry one: tangled follow {feed_text(b.key)}"
    )
    assert lines[2] == f"  blocked: 1 feed ({feed_text(carol[0].author)})"
    assert not any("behind" in line for line in lines)
    page = render_status(await a.ask("status"), Names())
    assert "not followed: 1 feeds" in page and f"tangled follow {feed_text(b.key)}" in page
    assert "blocked: 1 feeds" in page and "behind by" not in page
    short_b = Names().label(b.key)  # a short id: no name given
    assert peer_fields(shown, Names(), NOT_FOLLOWING)["outside"] == (
        f"1: {short_b} (tangled follow {feed_text(b.key)}); 1 blocked"
    )

    followed = await a.ask("follow", feed=b.key)
    assert followed["carried"] and followed["seen"]  # a connected peer's key
    await a.until(lambda: a.service.clock.get(b.key) == 2)
    (shown,) = (await a.ask("status"))["peers"]
    assert shown["not_followed"] == {} and shown["not_followed_feeds"] == 0
    assert shown["caught_up"] and shown["blocked_feeds"] == 1
    again = await a.ask("connect", address=b.address, key=b.key)
    assert again["standing"] == "followed"
    assert _standing_line(b.key, "followed", feed_text).endswith("their feed will be replicated")


async def test_behind_counts_only_what_we_carry_and_the_peers_own_feed_is_shown_first(nodes):
    many = [chain(f"scope-notes-many-{n}", 1) for n in range(BEHIND_SHOWN + 4)]
    a = await nodes("a")
    b = await nodes("b", hops=None, held=[m for feed in many for m in feed])
    await b.service.publish({"post": 1}, None)
    followed = many[0][0].author  # a follows one of b's feeds: that one is carried, and lags
    await a.ask("follow", feed=followed)
    await a.ask("connect", address=b.address, key=b.key)
    await a.until(lambda: a.service.clock.get(followed) == 1)
    await a.until(lambda: a.shows(b) and len(a.registry.peers[b.key].clock) >= len(many) + 1)
    (shown,) = (await a.ask("status"))["peers"]
    assert shown["behind_feeds"] == 0 and shown["caught_up"]
    outside = shown["not_followed"]
    assert len(outside) == BEHIND_SHOWN and shown["not_followed_feeds"] == len(many)  # b, 19
    assert next(iter(outside)) == b.key  # the peer's own first: follow it, most likely
    assert followed not in outside
    lines = _peer_lines(shown, feed_text)
    assert lines[1].startswith(f"  not followed: {len(many)} feeds, {len(many)} messages (")
    assert f"and {len(many) - 3} more), nothing of them carried" in lines[1]


async def test_connect_says_a_blocked_peer_brings_nothing(nodes):
    a = await nodes("a")
    b = await nodes("b")
    await a.ask("block", feed=b.key)
    reply = await a.ask("connect", address=b.address, key=b.key)
    assert reply["standing"] == "blocked"
    assert _standing_line(b.key, "blocked", feed_text) == (
        f"{feed_text(b.key)} is blocked: nothing of theirs will be carried;"
        f" tangled unblock {feed_text(b.key)}"
    )
    assert _standing_line(b.key, "not-followed", feed_text).endswith(
        f"nothing of theirs will be carried; tangled follow {feed_text(b.key)}"
    )


async def test_follow_says_whether_the_feed_was_ever_shown(nodes):
    george = chain("scope-notes-seen-george", 2)  # b carries it: b's clock names it
    dave, erin, frank = Feed("scope-notes-dave"), Feed("scope-notes-erin"), Feed("scope-notes-f")
    names_erin = dave.append({"type": "contact", "contact": feed_text(erin.public)} | FOLLOWS)
    a = await nodes("a", held=[names_erin])  # held from before: dave's contact names erin
    b = await nodes("b", hops=None, held=george)
    stranger = keypair("scope-notes-never-seen").public

    assert (await a.ask("follow", feed=stranger))["seen"] is False
    assert (await a.ask("follow", feed=stranger))["seen"] is True  # our own follow names it now
    assert (await a.ask("follow", feed=erin.public))["seen"] is True  # a contact held names it
    assert (await a.ask("follow", feed=dave.public))["seen"] is True  # a message of it held
    assert (await a.ask("block", feed=frank.public))["seen"] is False  # every contact op says

    await a.ask("connect", address=b.address, key=b.key)
    await a.until(lambda: a.shows(b) and george[0].author in a.registry.peers[b.key].clock)
    assert a.store.feeds.seen(george[0].author) is False  # the store holds no sign of it...
    assert (await a.ask("follow", feed=george[0].author))["seen"] is True  # ...b's clock does
    assert a.store.feeds.seen(b.key) is False
    assert (await a.ask("follow", feed=b.key))["seen"] is True  # a peer's key


async def test_a_publish_into_a_root_not_held_says_whose_it_is_and_what_to_do(nodes):
    bob, dave = Feed("scope-notes-root-bob"), Feed("scope-notes-root-dave")
    root = bob.root("thread", {"text": "dinner?"})
    # dave read bob's root and replied: his timeframe names it (bob's seq 1, its tag)
    reply = dave.append(
        {"text": "yes"},
        tangles={"thread": TangleLink(root.id, (root.id,))},
        timeframe={bob.public: root},
    )
    a = await nodes("a")
    await a.ask("follow", feed=dave.public)
    await a.service.ingest([reply.raw])  # dave carried, bob not: the reply waits for a witness

    async def refused(tangle_root: bytes, name: str = "thread") -> NodeError:
        with pytest.raises(NodeError) as caught:
            await a.ask("publish", content={"text": "me too"}, tangles={name: tangle_root})
        assert caught.value.kind == "unknown-tangle"
        return caught.value

    unknown = await refused(keypair("scope-notes-no-root").public)  # 32 bytes no one wrote
    assert unknown.reason == "author-unknown" and unknown.feed is None
    assert "nor is its author known: follow whoever wrote or shared it" in unknown.message

    named = await refused(root.id)
    assert (named.reason, named.feed) == ("author-not-followed", bob.public)
    assert (
        f"its author {feed_text(bob.public)} (as a reply held names it) is not followed"
        in named.message
    )
    assert f"tangled follow {feed_text(bob.public)}" in named.message

    asked = a.store.feeds.witnesses_wanted()  # dave's reply waits for bob's root as a witness
    assert (bob.public, 1) in [(feed, seq) for feed, seq, _tag in asked]
    assert await a.service.add_witnesses([root.raw])
    witnessed = await refused(root.id)
    assert (witnessed.reason, witnessed.feed) == ("author-not-followed", bob.public)
    assert "(as a reply held names it)" not in witnessed.message  # the witness says it

    await a.ask("block", feed=bob.public)
    blocked = await refused(root.id)
    assert (blocked.reason, blocked.feed) == ("author-blocked", bob.public)
    assert f"is blocked, so nothing of theirs is held: tangled unblock {feed_text(bob.public)}" in (
        blocked.message
    )

    await a.ask("unblock", feed=bob.public)
    await a.ask("follow", feed=bob.public)
    waiting = await refused(root.id)
    assert waiting.reason == "root-not-arrived" and "has not arrived yet" in waiting.message

    await a.service.ingest([root.raw])
    wrong_name = await refused(root.id, "chat")
    assert (wrong_name.reason, wrong_name.feed) == ("root-not-a-root", bob.public)
    assert "the message is held, by" in wrong_name.message and "roots no tangle 'chat'" in (
        wrong_name.message
    )
    published = await a.ask("publish", content={"text": "me too"}, tangles={"thread": root.id})
    assert published["tangles"]["thread"]["root"] == root.id
