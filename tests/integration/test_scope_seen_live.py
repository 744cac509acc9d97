"""The newcomer's first minutes with the default scope (issue 42, section 2): two real
`tangled run` processes with the config `tangled init` writes (`hops = 2`), one dialing
each way, nothing followed. Each step says why nothing replicates and what to do, through
the real CLI: `connect`, `status`, `peers`, `publish` into the other's thread, `follow`."""

from __future__ import annotations

import json
from collections.abc import Callable

import trio

from tanglenode.node.localnet import REQUEST_SECONDS, Node
from tanglenode.protocol.identity import message_text
from tests.integration.test_cli_live import cli


async def shown_by(node: Node, peer: Node, until: Callable[[dict], bool]) -> dict:
    """`peer` as `node`'s status shows it, once connected and `until` it holds (polled: a
    peer's clock arriving is no event a client can wait on)."""
    with trio.fail_after(REQUEST_SECONDS):
        while True:
            for each in (await node.request("status"))["peers"]:
                if each["key"] == peer.key and each["connected"] and until(each):
                    return each
            await trio.sleep(0.1)


async def test_two_default_nodes_say_why_nothing_replicates_and_what_to_do(tmp_path):
    a, b = Node(tmp_path, "a"), Node(tmp_path, "b")
    await a.start(hops=None)  # the config's scope: what `tangled init` wrote
    await b.start(peers=[a], hops=None)
    root = (await b.publish({"type": "post", "text": "dinner?"}, {"thread": None}))["id"]
    await b.publish({"type": "post", "text": "Friday?"}, {"thread": root})

    dialed = await cli(a, "connect", b.listen, b.feed_id)
    assert dialed.returncode == 0, dialed.stderr.decode()
    said = dialed.stdout.decode().splitlines()
    assert said[1] == (
        f"{b.feed_id} is not followed: nothing of theirs will be carried;"
        f" tangled follow {b.feed_id}"
    )

    peer = await shown_by(a, b, lambda each: each["not_followed_messages"] == 2)
    assert peer["not_followed"] == {b.key: 2} and peer["not_followed_feeds"] == 1
    assert peer["behind_feeds"] == 0 and peer["caught_up"]  # a choice, not a lag
    status = (await cli(a, "status")).stdout.decode()
    assert "behind on" not in status
    assert (
        f"not followed: 1 feed, 2 messages ({b.feed_id}), nothing of them carried;"
        f" carry one: tangled follow {b.feed_id}"
    ) in status
    peers = (await cli(a, "peers")).stdout.decode()
    assert f"carry one: tangled follow {b.feed_id}" in peers
    listed = json.loads((await cli(a, "peers", "--json")).stdout)
    (b_listed,) = [each for each in listed if each["key"] == b.feed_id]
    assert b_listed["not_followed"] == {b.feed_id: 2}

    thread = f"thread={message_text(root)}"
    refused = await cli(a, "publish", '{"text": "me too"}', "--tangle", thread)
    assert refused.returncode == 3
    error = refused.stderr.decode()
    assert "unknown-tangle" in error and "nor is its author known" in error
    assert "follow whoever wrote or shared it (tangled follow @FEED)" in error

    followed = await cli(a, "follow", b.feed_id)
    assert followed.stdout.decode().strip().endswith("(carried now)")  # a peer: seen
    await a.wait_for_size(2, tangle="thread", root=root, seconds=REQUEST_SECONDS)
    published = await cli(a, "publish", '{"text": "me too"}', "--tangle", thread)
    assert published.returncode == 0, published.stderr.decode()
    await b.request("follow", feed=a.key)  # b carries a's feed: a's reply reaches it
    await b.wait_for_size(3, tangle="thread", root=root, seconds=REQUEST_SECONDS)

    peer = await shown_by(a, b, lambda each: each["caught_up"])
    assert peer["not_followed_feeds"] == 0 and peer["behind_feeds"] == 0
    assert "not followed" not in (await cli(a, "status")).stdout.decode()
    for node in (a, b):
        assert await node.stop() == 0
