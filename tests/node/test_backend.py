"""The CLI's one way to ask (node/cli/backend.py): the running node over its socket, or the
node's own handlers on the store opened here, with the same replies and the same errors."""

import os

import pytest
import trio

from tanglenode.config.secret import write_secret
from tanglenode.node.cli.backend import Backend, call_store
from tanglenode.node.cli.support import BadInput, Context, NotFound
from tanglenode.node.gossip.network import Network
from tanglenode.node.ipc.oneshot import NodeError, NodeNotRunning, request
from tanglenode.node.ipc.ops import OPS
from tanglenode.node.ipc.server import IpcServer
from tanglenode.node.net.peers import PeerRegistry
from tanglenode.node.service.store_service import StoreService
from tanglenode.protocol import ipc
from tanglenode.protocol.identity import feed_text, message_text
from tanglenode.storage.errors import DataDirInUse
from tanglenode.storage.feeds.datalock import DataDirLock
from tanglenode.storage.store import FeedStore
from tests.factories import keypair

ME = keypair("backend")


def outcome(ask, op, arguments):
    """What asking gives: the reply's value, or the error's kind and text."""
    try:
        return ask(op, **arguments)
    except NodeError as error:
        return ("error", error.kind, error.message, error.reason)


async def test_the_store_here_answers_every_read_as_the_running_node_does(tmp_path, nursery):
    store = FeedStore(tmp_path / "store", keypair=ME, map_size=2**27)
    service = StoreService(store)
    registry = PeerRegistry()
    server = IpcServer(service, registry, Network(bytes(32), ME, service, registry), ME)
    path = await nursery.start(server.serve, tmp_path / "ipc.sock")

    root = (await service.publish("root", {"chat": None})).id
    reply = (await service.publish({"text": "reply"}, {"chat": root})).id
    group = await trio.to_thread.run_sync(lambda: request(path, "group-create", name="g")["group"])
    await trio.to_thread.run_sync(lambda: request(path, "group-post", group=group, content="s"))
    doc = await trio.to_thread.run_sync(lambda: request(path, "doc-create", title="t")["doc"])
    splices = [["ins", 0, "hello"]]
    await trio.to_thread.run_sync(lambda: request(path, "doc-edit", doc=doc, splices=splices))
    chat = {"tangle": "chat", "root": root}
    asked = [
        ("get", {"message": reply}),
        ("get", {"message": bytes(32)}),  # not-found
        ("get", {"message": b"short"}),  # bad-request
        ("frobnicate", {}),  # unknown-op
        ("timeline", {"spacetime": True}),
        ("timeline", {**chat, "start": 1}),
        ("timeline", {**chat, "digest": True}),
        ("timeline", {"tangle": "chat", "root": bytes(32)}),  # not-found
        ("timeline", {"spacetime": True, "order": "causal-time", "from_time": 0}),
        ("commands", {**chat, "since": 0}),
        ("placement", {**chat, "message": reply}),
        ("placement", {**chat, "message": bytes(32)}),
        ("tangles", {}),
        ("group-list", {}),
        ("group-show", {"group": group}),
        ("group-timeline", {"group": group}),
        ("group-show", {"group": bytes(32)}),
        ("doc-list", {}),
        ("doc-show", {"doc": doc}),
        ("doc-show", {"doc": doc, "at": 0}),
        ("doc-log", {"doc": doc}),
        ("doc-diff", {"doc": doc, "from": 0, "to": 1}),
        ("doc-blame", {"doc": doc}),
        ("doc-show", {"doc": bytes(32)}),
        ("doc-edit", {"doc": doc, "splices": [["del", 99, 1]]}),  # outside the text
        ("resolve", {"kind": "message", "text": message_text(reply)[1:9]}),
        ("resolve", {"kind": "feed", "text": feed_text(ME.public)[1:5]}),
        ("resolve", {"kind": "name", "text": "nobody"}),
        ("resolve", {"kind": "title", "text": "T"}),  # "t" but for case
        ("resolve", {"kind": "message", "text": "AbC"}),  # bad-request: too short
    ]
    here = StoreService(store)  # another service over the same store, as the CLI opens it

    def by_socket():
        return [outcome(lambda op, **a: request(path, op, **a), op, a) for op, a in asked]

    def by_store():
        return [outcome(lambda op, **a: call_store(here, ME, op, **a), op, a) for op, a in asked]

    over_socket = await trio.to_thread.run_sync(by_socket)
    on_store = await trio.to_thread.run_sync(by_store)
    for (op, arguments), remote, local in zip(asked, over_socket, on_store, strict=True):
        assert local == remote, (op, arguments)
    kinds = [found[1] for found in over_socket if isinstance(found, tuple)]
    assert {"not-found", "bad-request", "unknown-op"} <= {str(kind) for kind in kinds}
    nursery.cancel_scope.cancel()
    store.close()


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    for name in [name for name in os.environ if name.startswith("TANGLED_")]:
        monkeypatch.delenv(name)
    data_dir = tmp_path / "node"
    write_secret(data_dir / "secret", ME)
    FeedStore(data_dir / "store", keypair=ME, map_size=2**26).close()
    return data_dir


def context(data_dir):
    return Context(None, data_dir)


def test_what_only_a_running_node_answers_says_it_is_not_running(data_dir):
    only_the_node = sorted(op for op, row in OPS.items() if row.node)
    running = {"status", "peers", "clock", "connect", "disconnect", "invite-create", "invite-use"}
    running.add("doc-presence")  # carets live in the running node's memory only
    assert running | ipc.STREAMING == set(only_the_node)
    with Backend(context(data_dir)) as node:
        for op in only_the_node:
            with pytest.raises(NodeNotRunning, match="the node is not running"):
                node.call(op)
        assert node.call("doc-list")["documents"] == []  # the rest: the store here
        assert not node.running


def test_errors_here_are_translated_as_the_nodes(data_dir):
    with Backend(context(data_dir)) as node:
        with pytest.raises(NotFound, match="no such message"):
            node.call("get", message=bytes(32))
        with pytest.raises(BadInput, match="bad-request: "):
            node.call("get", message=b"short")
        with pytest.raises(NodeError, match="unknown-op"):
            node.call("frobnicate")


def test_a_write_here_holds_the_data_directory_lock_and_reads_take_none(data_dir):
    with Backend(context(data_dir)) as node:
        assert node.call("doc-list")["total"] == 0  # a read: no lock
        DataDirLock(data_dir, "import").acquire().release()  # free for another process
        doc = node.call("doc-create", title="t")["doc"]  # a write: opened again, locked
        with pytest.raises(DataDirInUse):
            DataDirLock(data_dir, "import").acquire()
        shown = node.call("doc-show", doc=doc)
        assert (shown["version"], shown["text"]) == (0, "")
    DataDirLock(data_dir, "import").acquire().release()  # released with the backend


def test_a_write_beside_a_node_that_does_not_answer_is_refused(data_dir):
    running = rf"the node is running \(process {os.getpid()}\) but does not answer"
    # a node holds the data directory, its socket elsewhere (or not bound yet)
    with DataDirLock(data_dir, "run"), Backend(context(data_dir)) as node:
        assert node.call("tangles")["tangles"] == []  # reading beside it is fine
        with pytest.raises(DataDirInUse, match=running):
            node.call("publish", content="x", tangles={})
    another = pytest.raises(DataDirInUse, match=r"\(tangled import\)")
    with DataDirLock(data_dir, "import"), Backend(context(data_dir), writes=True) as node, another:
        node.call("publish", content="x", tangles={})


def test_no_data_directory_is_said_before_anything_is_asked(tmp_path):
    with pytest.raises(NotFound, match="no data directory here; `tangled init` makes one"):
        Backend(context(tmp_path / "typo"))
