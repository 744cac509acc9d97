"""Concurrent publishes against a running node (`tangled run`), over its Unix socket."""

import itertools
from contextlib import aclosing

import trio

from tanglenode.node.localnet import CONVERGE_SECONDS, REQUEST_SECONDS, Node

CLIENTS, EACH = 8, 25


async def test_eight_concurrent_clients_each_get_replies_on_one_feed_seen_in_order(tmp_path):
    node = Node(tmp_path, "solo")
    await node.start()
    root = (await node.publish("root", {"chat": None}))["id"]
    total = CLIENTS * EACH
    seen: list[list[bytes]] = [[], []]
    replies: list[dict] = []

    async def follow(ids: list[bytes], task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with (
            await node.client() as client,
            aclosing(client.subscribe(since=None, tangle="chat", root=root)) as events,
        ):
            async for event in events:
                if "started" in event:
                    task_status.started()
                for command in event.get("commands", ()):
                    assert "ins" in command and command["ins"] == len(ids) + 1  # appended
                    ids.append(command["message"]["id"])
                if len(ids) == total:
                    return

    async def publish(client_no: int) -> None:
        async with await node.client() as client:
            for n in range(EACH):  # one at a time: each waits for its reply
                with trio.fail_after(REQUEST_SECONDS):
                    replies.append(await client.publish([client_no, n], {"chat": root}))

    with trio.fail_after(CONVERGE_SECONDS):
        async with trio.open_nursery() as nursery:
            for ids in seen:
                await nursery.start(follow, ids)
            async with trio.open_nursery() as clients:
                for client_no in range(CLIENTS):
                    clients.start_soon(publish, client_no)
    assert len(replies) == total
    by_seq = sorted(replies, key=lambda reply: reply["seq"])
    assert [reply["seq"] for reply in by_seq] == list(range(2, 2 + total))  # consecutive
    assert {reply["author"] for reply in replies} == {node.key}  # one feed
    for before, after in itertools.pairwise(by_seq):
        assert after["prev"] == before["id"]
        assert after["tangles"]["chat"]["previous"] == [before["id"]]
    for client_no in range(CLIENTS):  # each client's messages in the order it sent them
        mine = [reply["content"][1] for reply in by_seq if reply["content"][0] == client_no]
        assert mine == list(range(EACH))
    in_order = [reply["id"] for reply in by_seq]
    assert seen == [in_order, in_order]  # every subscriber saw every one, in seq order
    timeline = [msg_id for _rank, msg_id in await node.timeline(tangle="chat", root=root)]
    assert timeline == [root, *in_order]
    assert await node.stop() == 0
