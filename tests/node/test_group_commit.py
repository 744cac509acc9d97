"""Group commit over a real Unix socket and a real store, in process.

Holding the store's write limiter stands in for a transaction that is
committing: every publish that arrives meanwhile must wait, and then they
must share the next transaction.
"""

import itertools
from contextlib import aclosing

import pytest
import trio
import trio.testing

from tanglenode.node.gossip.network import Network
from tanglenode.node.ipc.client import NodeError, connect
from tanglenode.node.ipc.server import IpcServer
from tanglenode.node.net.peers import PeerRegistry
from tanglenode.node.service.store_service import StoreService
from tanglenode.protocol.ipc import ErrorKind
from tanglenode.storage.engine.timeline import Insert, apply_commands
from tanglenode.storage.store import FeedStore
from tests.factories import keypair

ME = keypair("group-commit")
WAIT = 30  # bounds every wait; nothing here is timed


@pytest.fixture
async def served(tmp_path, nursery):
    store = FeedStore(tmp_path / "store", keypair=ME, map_size=2**28)
    service = StoreService(store)
    server = IpcServer(service, PeerRegistry(), Network(bytes(32), ME, service, PeerRegistry()), ME)
    path = await nursery.start(server.serve, tmp_path / "ipc.sock")
    yield service, path
    nursery.cancel_scope.cancel()
    store.close()


async def held_while(service: StoreService, *publishes) -> list:
    """Run `publishes` (async callables) while a transaction "commits" (the write limiter
    is held): the first leads and waits for the limiter with its batch of one, the
    others queue behind it; then the limiter is let go. Their outcomes, in order: a
    reply, or the NodeError it raised."""
    outcomes: list = [None] * len(publishes)
    committing = object()

    async def run(index):
        try:
            outcomes[index] = await publishes[index]()
        except NodeError as error:
            outcomes[index] = error

    with trio.fail_after(WAIT):
        await service._writer.acquire_on_behalf_of(committing)
        async with trio.open_nursery() as clients:
            clients.start_soon(run, 0)
            while not service.publishing._leading:
                await trio.testing.wait_all_tasks_blocked()
            for index in range(1, len(publishes)):
                clients.start_soon(run, index)
            while len(service.publishing._pending) < len(publishes) - 1:
                await trio.testing.wait_all_tasks_blocked()
            service._writer.release_on_behalf_of(committing)
    return outcomes


async def publish_on_own_connection(path, content, tangles):
    async with await connect(path) as client:
        return await client.publish(content, tangles)


async def follow(path, root, count, seen: list, task_status=trio.TASK_STATUS_IGNORED):
    """A subscriber of tangle `chat` at `root`: its commands, until `count` inserts."""
    async with (
        await connect(path) as client,
        aclosing(client.subscribe(since=0, tangle="chat", root=root)) as events,
    ):
        async for event in events:
            if "started" in event:
                task_status.started()
            for command in event.get("commands", ()):
                assert "ins" in command  # a chain of replies only ever appends
                seen.append(Insert(command["ins"], command["message"]["id"]))
            if len(seen) >= count:
                return


async def test_concurrent_clients_share_transactions_and_every_subscriber_sees_each_in_order(
    served, nursery
):
    service, path = served
    async with await connect(path) as client:
        root = (await client.publish("root", {"chat": None}))["id"]
    clients = 8
    seen: list[list[Insert]] = [[], []]
    async with trio.open_nursery() as subscribers:
        for commands in seen:
            await subscribers.start(follow, path, root, clients + 1, commands)
        replies = await held_while(
            service,
            *(
                lambda n=n: publish_on_own_connection(path, {"n": n}, {"chat": root})
                for n in range(clients)
            ),
        )
    assert all(isinstance(reply, dict) for reply in replies)  # every client got its reply
    assert sorted(reply["seq"] for reply in replies) == list(range(2, 2 + clients))
    assert service.publishing.batches == 3  # the root, the first alone, then the other seven
    assert service.publishing.largest == clients - 1
    by_seq = sorted(replies, key=lambda reply: reply["seq"])
    assert all(reply["author"] == ME.public for reply in replies)  # one feed
    for before, after in itertools.pairwise(by_seq):
        assert after["prev"] == before["id"]
        assert after["tangles"]["chat"]["previous"] == [before["id"]]  # a chain, in seq order
    async with await connect(path) as client:
        timeline = [e[1] for e in (await client.timeline(tangle="chat", root=root))["entries"]]
    assert timeline == [root, *(reply["id"] for reply in by_seq)]
    for commands in seen:  # each subscriber: every message, in seq order, nothing else
        assert [command.id for command in commands] == timeline
        assert apply_commands([], commands) == timeline


async def test_a_refused_request_in_a_batch_gets_its_own_error_and_the_others_commit(served):
    service, path = served
    async with await connect(path) as client:
        root = (await client.publish("root", {"chat": None}))["id"]

    def publishing(content, tangles):
        return lambda: publish_on_own_connection(path, content, tangles)

    first, good, unknown, too_large, bad_content, last = await held_while(
        service,
        publishing("first", {"chat": root}),
        publishing("good", {"chat": root}),
        publishing("lost", {"chat": bytes(32)}),
        publishing("x" * 20_000, {"chat": root}),
        publishing(
            {
                "deep": [
                    [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]
                ]
            },
            None,
        ),
        publishing("last", {"chat": root}),
    )
    assert service.publishing.largest == 5  # the five behind the first shared one transaction
    assert unknown.kind is ErrorKind.UNKNOWN_TANGLE
    assert too_large.kind is ErrorKind.INVALID_MESSAGE and too_large.reason == "too-large"
    assert bad_content.kind is ErrorKind.INVALID_MESSAGE and bad_content.reason == "too-deep"
    committed = sorted((first, good, last), key=lambda reply: reply["seq"])
    assert [reply["seq"] for reply in committed] == [2, 3, 4]  # no seq lost to a refusal
    for before, after in itertools.pairwise(committed):
        assert after["prev"] == before["id"]
        assert after["tangles"]["chat"]["previous"] == [before["id"]]
    assert service.clock[ME.public] == 4
    assert [m.id for m in service.store.feeds.read_feed(ME.public)[1:]] == [
        r["id"] for r in committed
    ]


async def test_a_publish_cancelled_while_it_waits_is_never_published(served):
    service, _path = served
    store = service.store
    outcomes: dict[str, object] = {}
    committing = object()

    async def publish(name, task_status=trio.TASK_STATUS_IGNORED):
        with trio.CancelScope() as scope:
            task_status.started(scope)
            outcomes[name] = await service.publish(name, None)

    with trio.fail_after(WAIT):
        await service._writer.acquire_on_behalf_of(committing)
        async with trio.open_nursery() as tasks:
            await tasks.start(publish, "leader")
            await trio.testing.wait_all_tasks_blocked()
            withdrawn = await tasks.start(publish, "withdrawn")
            await tasks.start(publish, "kept")
            await trio.testing.wait_all_tasks_blocked()
            withdrawn.cancel()
            await trio.testing.wait_all_tasks_blocked()
            assert len(service.publishing._pending) == 1
            service._writer.release_on_behalf_of(committing)
    assert set(outcomes) == {"leader", "kept"}
    assert [m.content for m in store.feeds.read_feed(ME.public)] == ["leader", "kept"]
    assert not service.publishing._leading  # the next publish leads again
    assert (await service.publish("after", None)).seq == 3


async def test_concurrent_document_edits_share_commits_with_publishes(served):
    """Three editors' edits (two documents) and a publish, arriving while a transaction
    commits, go in one transaction, each merged against the text in it."""
    service, _path = served
    notes = (await service.create_document("notes")).id
    plans = (await service.create_document("plans")).id
    before = service.publishing.batches

    def edit(doc, text):
        return lambda: service.edit_document(doc, [("ins", 0, text)])

    async def publish():
        return await service.publish({"type": "post", "text": "meanwhile"}, {"chat": None})

    outcomes = await held_while(
        service, edit(notes, "a"), edit(notes, "b"), edit(plans, "c"), publish
    )
    assert not any(isinstance(outcome, Exception) for outcome in outcomes)
    assert service.publishing.batches - before == 2  # the leader's own, then the rest
    store = service.store
    assert sorted(store.documents.document_text(notes)) == ["a", "b"]
    assert store.documents.document_text(plans) == "c"
    for messages, numbers in outcomes[:3]:
        assert [numbers[m.id] for m in messages] == [  # each its version, read back
            store.documents.versions_of(m.tangles["doc"].root, [m])[m.id] for m in messages
        ]
