"""Streamers that hold a feed back, against real nodes (node/gossip/stream_plan.py): honest nodes on
real TCP ports of 127.0.0.1, an attacker that does the real handshake and writes its frames
by hand (the harness of tests/node/test_hostile_peers.py), on the real clock and the plan's
real timings."""

from __future__ import annotations

import pytest
import trio

from tanglenode.node.gossip.stream_plan import STOP_AFTER
from tanglenode.protocol.gossip import GossipConnection, PeerWants, tag_of
from tanglenode.protocol.message import Message
from tests.factories import Feed
from tests.node.test_hostile_peers import attacker, honest, link

pytestmark = pytest.mark.timeout(60)
__all__ = ["honest"]  # the fixture, used by name


def carol(length: int) -> Feed:
    feed = Feed("carol")
    for n in range(length):
        feed.append({"n": n})
    return feed


async def trickle(
    secure, gossip: GossipConnection, messages: list[Message], every: float, own: Feed | None = None
):
    """Answer the node's WANT of the feed with one message every `every` seconds, reading
    its frames (grants, wants) meanwhile; a WANT past the feed's end stops it. With `own`,
    it keeps the node busy meanwhile: a frame after another of its own feed's messages, each
    one new and the rest the node holds already."""
    author = messages[0].author
    wanted = trio.Event()
    after: list[int] = []

    async def read() -> None:
        while data := await secure.receive_some():
            for event in gossip.receive_data(data):
                if isinstance(event, PeerWants) and author in event.wants:
                    after.append(event.wants[author])
                    wanted.set()

    async def keep_busy(feed: Feed) -> None:
        for n in range(1, len(feed.messages)):
            frame = [feed.messages[n], *feed.messages[max(0, n - 200) : n]]
            while gossip.send_credit < len(frame):
                await trio.sleep(0.005)  # the credit comes back as the node stores
            await secure.send_all(gossip.messages([m.raw for m in frame]))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(read)
        if own is not None:
            nursery.start_soon(keep_busy, own)
        await wanted.wait()
        while after[-1] < len(messages):
            if gossip.send_credit and after[-1] != STOP_AFTER:
                await secure.send_all(gossip.messages([messages[after[-1]].raw]))
                after[-1] += 1
            await trio.sleep(every)
        nursery.cancel_scope.cancel()


def shown(feed: Feed, head: int) -> dict:
    return {feed.public: (head, tag_of(feed.messages[min(head, len(feed.messages)) - 1].id))}


async def test_a_streamer_sending_one_message_every_two_seconds_loses_the_feed(honest, nursery):
    """Before: the victim held 17 of 200 after 30 s, none from the honest peer."""
    victim, other = await honest("victim"), await honest("other")
    feed = carol(200)
    await other.service.ingest([m.raw for m in feed.messages])
    async with (
        attacker(victim, clock=shown(feed, 200)) as (secure, gossip),
        trio.open_nursery() as its,
    ):
        its.start_soon(trickle, secure, gossip, feed.messages, 1.9)
        await victim.until(lambda: victim.service.clock.get(feed.public, 0) >= 1)
        started = trio.current_time()
        link(nursery, victim, other)  # an honest peer holding it all joins
        await victim.until(lambda: victim.service.clock.get(feed.public) == 200)
        took = trio.current_time() - started
        its.cancel_scope.cancel()
    assert took < 5.0, took  # one grace (2 s), then the honest peer's catch-up


async def test_a_claim_far_ahead_on_a_quiet_feed_never_holds_its_new_messages_back(honest, nursery):
    """Before: the claimer took the quiet feed after 2 s and trickled it, 15 messages
    behind after 30 s."""
    victim, publisher = await honest("victim"), await honest("publisher")
    feed = carol(40)
    await publisher.service.ingest([m.raw for m in feed.messages[:10]])
    link(nursery, victim, publisher)
    await victim.until(lambda: victim.service.clock.get(feed.public) == 10)
    claim = shown(feed, 1_010)
    async with attacker(victim, clock=claim) as (secure, gossip), trio.open_nursery() as its:
        its.start_soon(trickle, secure, gossip, feed.messages, 1.9)
        # The feed stays quiet past the grace: the claim far ahead has time to win it (as
        # it did before) or to be refused; only time can show which.
        await trio.sleep(3.0)
        lags = []
        for message in feed.messages[10:30]:  # published on the honest side, two a second
            await publisher.service.ingest([message.raw])
            sent = trio.current_time()
            await victim.until(lambda m=message: victim.service.clock.get(m.author, 0) >= m.seq)
            lags.append(trio.current_time() - sent)
            await trio.sleep(0.5)  # the feed's pace, not a wait for an event
        its.cancel_scope.cancel()
    assert max(lags) < 1.0, lags


async def test_a_trickling_streamer_that_floods_us_with_its_own_new_messages_loses_the_feed(
    honest, nursery
):
    """Messages it mints itself (one new, the rest held already, frame after frame) buy it no
    time: only what other peers vouched for counts as work."""
    victim, other = await honest("victim"), await honest("other")
    feed, own = carol(200), Feed("mallory")
    for n in range(3_000):
        own.append({"n": n})
    await other.service.ingest([m.raw for m in feed.messages])
    claim = shown(feed, 200)
    async with (
        attacker(victim, me=own.keypair, clock=claim, window=8192) as (secure, gossip),
        trio.open_nursery() as its,
    ):
        its.start_soon(trickle, secure, gossip, feed.messages, 1.9, own)
        await victim.until(lambda: victim.service.clock.get(feed.public, 0) >= 1)
        started = trio.current_time()
        link(nursery, victim, other)
        await victim.until(lambda: victim.service.clock.get(feed.public) == 200)
        took = trio.current_time() - started
        its.cancel_scope.cancel()
    # Its session ends once what it sent is stored: the store is closed after that.
    await victim.until(lambda: not victim.registry.is_connected(own.public))
    assert took < 5.0, took
