"""`tanglenode.client` against a real `tangled run`, over its Unix socket: what a newcomer
meets when a connection streams, or when the node goes away, is a `NodeError` of a kind,
never a trio exception."""

from contextlib import aclosing

import pytest
import trio
import trio.testing

from tanglenode.client import ErrorKind, NodeError
from tanglenode.node.localnet import REQUEST_SECONDS, Node


def message_ids(event: dict) -> list[bytes]:
    """The ids a `commands` event inserts."""
    return [command["message"]["id"] for command in event.get("commands", ()) if "ins" in command]


async def test_a_call_on_a_streaming_connection_says_to_open_a_second_one(tmp_path):
    node = Node(tmp_path, "solo")
    await node.start()
    root = (await node.publish("root", {"chat": None}))["id"]
    with trio.fail_after(REQUEST_SECONDS):
        # In the same task, between two events: refused before a byte is sent.
        async with (
            await node.client() as streaming,
            await node.client() as second,
            aclosing(streaming.subscribe(spacetime=True)) as events,
        ):
            assert (await events.__anext__())["started"]["snapshot"] is True
            assert [i for _rank, i in (await events.__anext__())["snapshot"]] == [root]
            for call in (
                streaming.get(root),
                streaming.request("status"),
                streaming.subscribe(spacetime=True).__anext__(),
            ):
                with pytest.raises(NodeError) as refused:
                    await call
                assert refused.value.kind == ErrorKind.STREAMING
                assert "open a second connection" in str(refused.value)
            # The stream goes on, and the second connection serves requests.
            reply = (await second.publish("reply", {"chat": root}))["id"]
            assert (await second.get(reply))["id"] == reply
            assert message_ids(await events.__anext__()) == [reply]

    with trio.fail_after(REQUEST_SECONDS):
        async with await node.client() as streaming, await node.client() as second:
            # From another task while the stream's reader waits on the socket.
            seen_send, seen = trio.open_memory_channel(16)

            async def read(events) -> None:
                async for event in events:
                    await seen_send.send(event)

            subscription = streaming.subscribe(tangle="chat", root=root, since=2)
            async with aclosing(subscription) as events, trio.open_nursery() as nursery:
                nursery.start_soon(read, events)
                assert (await seen.receive())["started"] == {"version": 2, "snapshot": False}
                await trio.testing.wait_all_tasks_blocked()  # the reader waits in receive
                with pytest.raises(NodeError) as refused:
                    await streaming.get(root)
                assert refused.value.kind == ErrorKind.STREAMING
                third = (await second.publish("third", {"chat": root}))["id"]
                assert message_ids(await seen.receive()) == [third]
                nursery.cancel_scope.cancel()
    assert await node.stop() == 0


async def test_a_refused_stream_leaves_the_connection_to_requests_and_a_gone_node_disconnects(
    tmp_path,
):
    node = Node(tmp_path, "solo")
    await node.start()
    root = (await node.publish("root", {"chat": None}))["id"]
    with trio.fail_after(REQUEST_SECONDS):
        async with await node.client() as client:
            with pytest.raises(NodeError) as refused:  # a tangle without its root
                await client.subscribe(tangle="chat").__anext__()
            assert refused.value.kind == ErrorKind.BAD_REQUEST
            assert (await client.get(root))["id"] == root  # no stream: requests as before
            assert await node.stop() == 0
            for _twice in range(2):  # the first meets the hang-up, the second a closed socket
                with pytest.raises(NodeError) as gone:
                    await client.get(root)
                assert gone.value.kind == ErrorKind.DISCONNECTED
