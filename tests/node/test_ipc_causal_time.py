"""The causal-time order over a real Unix socket: reads, the time window, a live subscription.

Messages come from feeds with skewed clocks (timestamps that fall along a chain), ingested
through the node's own service while clients read; every answer is checked against the
one-shot causal-time order (storage.engine.causal_time) on the messages present.
"""

from contextlib import aclosing

import pytest
import trio

from tanglenode.node.gossip.network import Network
from tanglenode.node.ipc.client import NodeError, connect
from tanglenode.node.ipc.server import IpcServer
from tanglenode.node.net.peers import PeerRegistry
from tanglenode.node.service.store_service import StoreService
from tanglenode.protocol.ipc import ErrorKind
from tanglenode.protocol.message import TangleLink
from tanglenode.storage.engine.causal_time import causal_time_order
from tanglenode.storage.engine.timeline import Delete, Insert, Move, apply_commands
from tanglenode.storage.store import FeedStore
from tests.factories import ALL_VIEWS, Feed, keypair

ME = keypair("ipc-causal")


@pytest.fixture
async def running(tmp_path, nursery):
    store = FeedStore(tmp_path / "store", keypair=ME, map_size=2**28, views=ALL_VIEWS)
    service = StoreService(store)
    registry = PeerRegistry()
    server = IpcServer(
        service, registry, Network(bytes(32), ME, service, registry), ME, status_extra={}
    )
    await nursery.start(server.serve, tmp_path / "ipc.sock")
    yield service, tmp_path / "ipc.sock"
    nursery.cancel_scope.cancel()
    store.close()


def chat_history():
    """A chat tangle over three feeds whose clocks disagree; the times fall along chains."""
    alice, bob, carol = Feed("alice"), Feed("bob"), Feed("carol")
    root = alice.root("chat", "root")
    messages, tips = [root], [root.id]
    plan = [(bob, 900), (carol, 500), (alice, 700), (bob, 100), (carol, 950), (alice, 300)]
    for round_ in range(3):
        for feed, offset in plan:
            message = feed.append(
                f"{round_}",
                tangles={"chat": TangleLink(root.id, tuple(tips))},
                timestamp=1_000_000 + offset - 50 * round_,
            )
            messages.append(message)
            tips = [message.id]
    return root, messages


def expected_order(messages, within=lambda m: True):
    members = [m for m in messages if within(m)]
    ids = {m.id for m in members}
    return causal_time_order(
        [
            (m.id, [p for p in m.tangles["chat"].previous or () if p in ids], m.timestamp)
            for m in members
        ]
    )


async def test_causal_time_reads_windows_and_subscription_follow_the_one_shot(running):
    service, path = running
    root, messages = chat_history()
    alice = root.author
    late = [m for m in messages if m.author != alice]
    early = [m for m in messages if m.author == alice]
    # Bob's and Carol's feeds first (their links to Alice's messages dangle), then Alice's.
    await service.ingest([m.raw for m in late])
    which = {"tangle": "chat", "root": root.id, "order": "causal-time"}
    async with await connect(path) as client:
        first = await client.timeline(**which)
        assert [i for _time, i, *_state in first["entries"]] == expected_order(late)

        commands = await follow(path, which, 0, first["version"])
        assert apply_commands([], commands) == [i for _t, i, *_s in first["entries"]]

        async with trio.open_nursery() as nursery:  # a subscription keeps its connection
            live = []

            async def subscriber(task_status=trio.TASK_STATUS_IGNORED):
                live.extend(await follow(path, which, first["version"], None, task_status))

            await nursery.start(subscriber)
            await service.ingest([m.raw for m in early])
        commands.extend(live)
        final = await client.timeline(**which)
        order = [i for _t, i, *_s in final["entries"]]
        assert order == expected_order(messages)
        assert apply_commands([], commands) == order
        assert [t for t, *_rest in final["entries"]] == [
            next(m.timestamp for m in messages if m.id == i) for i in order
        ]

        low, high = 1_000_300, 1_000_800
        in_window = [m for m in messages if low <= m.timestamp <= high]
        strict = await client.timeline(
            **which, from_time=low, to_time=high, window="strict", limit=1000
        )
        assert [i for _t, i, *_s in strict["entries"]] == expected_order(
            messages, lambda m: low <= m.timestamp <= high
        )
        implied = await client.timeline(**which, from_time=low, to_time=high, limit=1000)
        positions = [order.index(m.id) for m in in_window]
        assert [i for _t, i, *_s in implied["entries"]] == order[
            min(positions) : max(positions) + 1
        ]
        assert len(implied["entries"]) > len(in_window)  # causally implied ones included

        with pytest.raises(NodeError) as refused:
            await client.timeline(tangle="chat", root=root.id, from_time=low, to_time=high)
        assert refused.value.kind == ErrorKind.BAD_REQUEST
        with pytest.raises(NodeError) as missing:
            await client.timeline(tangle="nope", root=root.id, order="causal-time")
        assert missing.value.kind == ErrorKind.NOT_FOUND
        assert "no timeline nope/%" in str(missing.value)
        assert str(missing.value).endswith("(causal-time)")


async def follow(path, which, since, until, task_status=trio.TASK_STATUS_IGNORED):
    """Commands after `since` up to version `until` on a connection of their own; with
    `until` None, up to the timeline's version when the first live command arrives (the
    caller ingests in one batch, so that is the batch's last)."""
    commands, version = [], since
    async with (
        await connect(path) as client,
        aclosing(client.subscribe(since=since, **which)) as events,
    ):
        task_status.started()
        async for event in events:
            commands.extend(_commands(event))
            for command in event.get("commands", ()):
                version = command["v"]
            if until is None and version > since:
                async with await connect(path) as reader:
                    until = (await reader.timeline(**which, limit=0))["version"]
            if until is not None and version >= until:
                return commands


def _commands(event):
    for command in event.get("commands", ()):
        if "ins" in command:
            body = command["message"]
            yield Insert(command["ins"], body["id"] if isinstance(body, dict) else body)
        elif "del" in command:
            yield Delete(command["del"])
        else:
            yield Move(*command["mov"])
