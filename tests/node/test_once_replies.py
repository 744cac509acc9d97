"""Writes done once (node/ipc/once_replies.py; docs/IPC.md, "Writes done once"): a write sent
again with its `once` key, while it runs or after, is done once, over a real socket and store."""

import pytest
import trio

from tanglenode.node.gossip.network import Network
from tanglenode.node.ipc.client import NodeError, connect
from tanglenode.node.ipc.once_replies import OnceReplies
from tanglenode.node.ipc.server import IpcServer
from tanglenode.node.net.peers import PeerRegistry
from tanglenode.node.service.store_service import StoreService
from tanglenode.protocol.errors import TanglenodeError
from tanglenode.storage.store import FeedStore
from tests.factories import keypair

ME = keypair("once-replies")


async def test_a_repeat_while_the_first_runs_waits_for_it_and_gets_its_reply():
    once = OnceReplies()
    runs = []
    release = trio.Event()

    async def write():
        runs.append(1)
        await release.wait()
        return {"n": len(runs)}

    replies = []

    async def send():
        replies.append(await once.run("publish", "k1", write))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(send)
        nursery.start_soon(send)
        await trio.testing.wait_all_tasks_blocked()
        assert runs == [1]  # the second waits, it does not run
        release.set()
    assert replies == [{"n": 1}, {"n": 1}] and runs == [1]
    assert await once.run("publish", "k1", write) == {"n": 1}  # after: the kept reply
    assert await once.run("doc-edit", "k1", write) == {"n": 2}  # another op: another key


async def test_a_failed_first_try_is_not_kept_and_the_oldest_keys_are_forgotten():
    once = OnceReplies(keep=2, keep_bytes=1000)
    calls = []

    async def failing():
        calls.append("fail")
        raise TanglenodeError("store full")

    async def succeeding():
        calls.append("ok")
        return len(calls)

    with pytest.raises(TanglenodeError):
        await once.run("publish", "a", failing)
    assert await once.run("publish", "a", succeeding) == 2  # the repeat ran
    await once.run("publish", "b", succeeding)
    await once.run("publish", "c", succeeding)
    assert len(once) == 2
    assert await once.run("publish", "a", succeeding) == 5  # forgotten: it ran again

    async def large():
        return "x" * 2000

    await once.run("publish", "big", large)  # larger than all it may keep: not kept
    assert len(once) == 2


@pytest.fixture
async def client(tmp_path, nursery):
    store = FeedStore(tmp_path / "store", keypair=ME, map_size=2**28)
    service = StoreService(store)
    registry = PeerRegistry()
    server = IpcServer(service, registry, Network(bytes(32), ME, service, registry), ME)
    path = await nursery.start(server.serve, tmp_path / "ipc.sock")
    async with await connect(path) as client:
        yield client, store
    nursery.cancel_scope.cancel()
    store.close()


async def test_a_publish_and_a_document_edit_sent_twice_are_done_once(client):
    client, store = client
    first = await client.request("publish", content="hello", tangles={}, once="p-1")
    again = await client.request("publish", content="hello", tangles={}, once="p-1")
    assert again == first
    other = await client.request("publish", content="hello", tangles={}, once="p-2")
    assert other["id"] != first["id"]
    assert store.feeds.frontier()[ME.public] == 2  # two messages, not three

    doc = (await client.request("doc-create", title="t", once="d-1"))["doc"]
    assert await client.request("doc-create", title="t", once="d-1") == {"doc": doc}
    assert len((await client.request("doc-list"))["documents"]) == 1
    await client.request("doc-edit", doc=doc, splices=[["ins", 0, "ab"]])
    edit = {"doc": doc, "splices": [["ins", 1, "X"]], "base": None, "once": "e-1"}
    done = await client.request("doc-edit", **edit)
    assert await client.request("doc-edit", **edit) == done
    assert (await client.request("doc-show", doc=doc))["text"] == "aXb"  # inserted once


@pytest.mark.parametrize("once", ["", "a" * 65, "a b", "é", 7, True, b"key"])
async def test_a_once_key_is_checked(client, once):
    client, _store = client
    with pytest.raises(NodeError, match=r"bad-request.*once is 1-64"):
        await client.request("publish", content="x", tangles={}, once=once)


async def test_once_on_an_op_that_writes_nothing_is_refused(client):
    client, _store = client
    with pytest.raises(NodeError, match=r"bad-request.*once is for writes"):
        await client.request("doc-list", once="k")


async def test_once_on_a_stream_is_refused(client):
    client, _store = client
    with pytest.raises(NodeError, match=r"bad-request.*once is for writes"):
        await client.request("watch-processed", start=0, once="k")
