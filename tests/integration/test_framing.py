"""The framing attack of format 1, run as an attacker would against two real nodes.

A throwaway key M sends its first message to honest carol's node; carol posts, and
her timeframe names M's message (a head she processed). The attacker fetches her
post over ordinary gossip, signs a second first message of M naming the post, and
sends [that message, carol's post] as EVIDENCE to the other node: under format 1
the pair was a cycle proof that cut carol. Now it proves nothing (the sender is
dropped), and the second message itself is only a fork of M: both nodes cut M from
seq 1, carol's feed stays whole and her node keeps publishing (docs/PROCESSING.md,
"The framing attack of format 1").
"""

from __future__ import annotations

import trio

from tanglenode.node.localnet import Node
from tanglenode.protocol.gossip import PeerMessages
from tanglenode.protocol.identity import tag_of
from tanglenode.protocol.message import decode_message
from tests.factories import Feed, keypair
from tests.integration.test_chaos import WAIT, hostile, poll, send, status
from tests.node.test_hostile_peers import receive, until_hung_up


async def fetch_feed(node: Node, feed: bytes, seq: int) -> bytes:
    """What any peer can do: connect, WANT `feed`, and take its message `seq` as sent."""
    async with hostile(node, keypair("framing-fetcher")) as (secure, gossip):
        await secure.send_all(gossip.want({feed: seq - 1}))
        with trio.fail_after(WAIT):
            while True:
                for event in await receive(secure, gossip):
                    if isinstance(event, PeerMessages):
                        for raw in event.raws:
                            message = decode_message(raw)
                            if (message.author, message.seq) == (feed, seq):
                                return raw


async def test_a_forger_frames_nobody_and_is_cut_alone(tmp_path):
    carol, other = Node(tmp_path, "carol"), Node(tmp_path, "other")
    await carol.start()
    await other.start([carol])
    try:
        attacker = keypair("framing-attacker")
        mallory = Feed("framing-mallory")
        m1 = mallory.append({"text": "first"})
        await send(carol, attacker, [m1], lambda s: s["clock"].get(mallory.public) == 1)
        post = await carol.publish({"type": "post", "text": "hello"})
        assert post["timeframe"][mallory.public] == [1, tag_of(m1.id)]  # she names it

        raw_post = await fetch_feed(carol, carol.key, post["seq"])
        twin = Feed(mallory.keypair)
        m1_twin = twin.append(
            {"text": "claims carol's post"}, timeframe={carol.key: decode_message(raw_post)}
        )
        await poll(other, lambda s: s["clock"].get(carol.key) == post["seq"])

        async with hostile(other, attacker) as (secure, gossip):  # format 1's cycle proof
            await secure.send_all(gossip.evidence([m1_twin.raw, raw_post]))
            await until_hung_up(secure, gossip)
        found = await status(other)
        assert found["forks"] == [] and carol.key in found["clock"]

        await send(other, keypair("framing-second"), [m1_twin], lambda s: s["forks"] != [])
        for node in (carol, other):  # the fork's proof travels; carol is whole everywhere
            found = await poll(node, lambda s: s["forks"] != [])
            assert found["forks"] == [[mallory.public, 1]]
            assert found["stalls_total"] == 0 and found["suspected_forks_total"] == 0
        after = await carol.publish({"type": "post", "text": "still here"})
        assert after["seq"] == post["seq"] + 1
        await poll(other, lambda s: s["clock"].get(carol.key) == after["seq"])
        assert await carol.timeline(spacetime=True) == await other.timeline(spacetime=True)
    finally:
        for node in (carol, other):
            await node.stop()
