"""Each message received once: one connected peer streams each feed, the others only tell its
heads (node/gossip/stream_plan.py). Real stores, services and `gossip()` over trio's memory streams
(the harness of tests/node/test_gossip_session.py), on the real clock: the plan's timers must
not fire while a store call runs in a worker thread, which trio's autojump clock would let
them do."""

from __future__ import annotations

import itertools

import pytest
import trio
import trio.testing

from tanglenode.node.gossip.stream_plan import STOP_AFTER, StreamPlan
from tanglenode.protocol.gossip import FrameKind, GossipConnection, tag_of
from tests.node.test_gossip_session import Wire, chain, open_side, raw_peer, start

pytestmark = pytest.mark.timeout(60)
__all__ = ["open_side"]  # the fixture, used by name


def received_by(wires: dict[tuple[str, str], Wire], name: str) -> int:
    """Messages the node `name` was sent over all its links."""
    total = 0
    for (a, b), wire in wires.items():
        if name in (a, b):
            other = b if name == a else a
            total += len(wire.raws_from(other))
    return total


async def test_in_a_full_mesh_of_five_each_new_message_arrives_about_once(open_side):
    names = ["n0", "n1", "n2", "n3", "n4"]
    sides = {name: open_side(name) for name in names}
    wires: dict[tuple[str, str], Wire] = {}
    rounds = 4
    async with trio.open_nursery() as nursery:
        for a, b in itertools.combinations(names, 2):
            wires[(a, b)] = Wire()
            start(nursery, sides[a], sides[b], wires[(a, b)])
        published = 0
        for _round in range(rounds):
            for name in names:
                message = await sides[name].service.publish({"from": name}, None)
                published += 1
                for other in names:
                    side = sides[other]
                    await side.until(
                        lambda s=side, m=message: s.service.clock.get(m.author) == m.seq
                    )
        nursery.cancel_scope.cancel()
    copies = sum(received_by(wires, name) for name in names) / (published * (len(names) - 1))
    print(f"copies per message: {copies:.2f}")
    assert copies <= 1.1, copies  # every peer pushing every message would make it 4.0
    for name in names:
        assert sides[name].service.clock == sides[names[0]].service.clock


async def test_a_peer_that_advertises_a_feed_and_never_streams_it_is_switched_from(open_side):
    carol = chain("carol", 6)
    a = open_side("a")
    honest = open_side("honest", carol)
    a.service.shared(StreamPlan).switch_after = 0.2
    session, their_end = raw_peer(a)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: session.run(window=64))
        theirs = GossipConnection(window=64)
        # It claims carol's six messages, first: a asks it for them, and waits in vain.
        await their_end.send_all(theirs.hello({carol[0].author: (6, tag_of(carol[-1].id))}))
        wants = []
        while not wants:
            for event in theirs.receive_data(await their_end.receive_some()):
                if type(event).__name__ == "PeerWants":
                    wants.append(event.wants)
        assert wants == [{carol[0].author: 0}]
        wire = Wire()
        start(nursery, a, honest, wire)
        await a.until(lambda: a.service.clock.get(carol[0].author) == 6)
        assert len(wire.raws_from("honest")) == 6  # from the honest peer, once
        stopped = []
        while not stopped:  # and the silent one is told to stop
            for event in theirs.receive_data(await their_end.receive_some()):
                if type(event).__name__ == "PeerWants":
                    stopped.append(event.wants)
        assert stopped == [{carol[0].author: STOP_AFTER}]
        nursery.cancel_scope.cancel()


async def test_a_peer_claiming_every_feed_far_ahead_costs_each_feed_one_wait_once(open_side):
    feeds = [chain(f"far-{n}", 3) for n in range(20)]
    a = open_side("a")
    honest = open_side("honest", *feeds)
    plan = a.service.shared(StreamPlan)
    plan.switch_after = 0.2
    session, their_end = raw_peer(a)
    liar = {feed[0].author: (1_000_000, bytes(16)) for feed in feeds}  # heads it never sends
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: session.run(window=64))
        theirs = GossipConnection(window=64)
        await their_end.send_all(theirs.hello(liar))
        asked: dict[bytes, int] = {}
        while len(asked) < len(liar):  # a asks the liar for every feed: it claimed them first
            for event in theirs.receive_data(await their_end.receive_some()):
                asked.update(getattr(event, "wants", {}))
        assert asked == {feed: 0 for feed in liar}
        nursery.start_soon(_drain, their_end, theirs)  # it reads what a says, and sends nothing
        wire = Wire()
        start(nursery, a, honest, wire)
        for feed in feeds:
            await a.until(lambda f=feed: a.service.clock.get(f[0].author) == 3)
        taken = {feed: plan.streamer(feed) for feed in liar}
        # Time for the liar, still far "ahead", to win the feeds back if it could: what is
        # awaited is that nothing happens, so only time can show it.
        await trio.sleep(plan.switch_after * 3)
        assert {feed: plan.streamer(feed) for feed in liar} == taken
        # Later messages come from the honest peer at once: the liar never wins a feed back.
        more = [chain(f"far-{n}", 4)[3] for n in range(20)]
        await honest.service.ingest([message.raw for message in more])
        for message in more:
            await a.until(lambda m=message: a.service.clock.get(m.author) == 4)
        assert {feed: plan.streamer(feed) for feed in liar} == taken
        assert all(
            streamer is not None and streamer is not plan.streamer(b"")
            for streamer in taken.values()
        )
        assert len(wire.raws_from("honest")) == 20 * 4  # each message once
        nursery.cancel_scope.cancel()


async def _drain(stream, connection: GossipConnection) -> None:
    while data := await stream.receive_some():
        connection.receive_data(data)


async def test_when_the_streaming_peer_leaves_another_streams_from_where_we_are(open_side):
    carol = chain("carol", 3)
    a = open_side("a")
    first, second = open_side("first", carol), open_side("second", carol)
    wires = {"first": Wire(), "second": Wire()}
    async with trio.open_nursery() as outer:
        async with trio.open_nursery() as inner:
            start(inner, a, first, wires["first"])
            await a.until(lambda: a.service.clock.get(carol[0].author) == 3)
            start(outer, a, second, wires["second"])
            await second.until(lambda: second.service.clock.get(a.keypair.public) is None)
            inner.cancel_scope.cancel()  # the streamer leaves
        for message in chain("carol", 5)[3:]:  # the same feed, two messages further
            await second.service.ingest([message.raw])
        await a.until(lambda: a.service.clock.get(carol[0].author) == 5)
        outer.cancel_scope.cancel()
    # from where a was (by key, or by position among the feeds a's walk with second found
    # alike): nothing asked twice, nothing lost
    wanted = [frame[1] for frame in wires["second"].of("a", FrameKind.WANT)]
    assert {carol[0].author: 3} in wanted or wires["second"].of("a", FrameKind.WANT_AGREED)
    assert wires["second"].raws_from("second") == [m.raw for m in chain("carol", 5)[3:]]
