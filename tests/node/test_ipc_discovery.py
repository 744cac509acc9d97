"""The discovery ops over a real Unix socket: `tangles` and `group-list`, pages and refusals."""

import pytest

from tanglenode.node.ipc.client import NodeError, connect
from tanglenode.protocol.ipc import ErrorKind
from tanglenode.protocol.message import TangleLink
from tanglenode.storage.groups import state as groups
from tests.factories import Feed
from tests.node.test_ipc_hostile import ID, ME, serve


@pytest.fixture
async def node(tmp_path, nursery):
    store, served = await serve(tmp_path, nursery)
    yield store, served[0]
    nursery.cancel_scope.cancel()
    store.close()


async def every_page(client, op, key, **arguments):
    rows, after, pages = [], None, 0
    while True:
        page = await client.request(op, after=after, **arguments)
        rows.extend(page[key])
        pages += 1
        after = page["next"]
        if after is None:
            return rows, pages


async def test_tangles_are_listed_a_page_at_a_time_with_their_counts(node):
    store, path = node
    alice = Feed("disc-alice")
    roots = [alice.root("chat") for _ in range(5)]
    reply = alice.append("re", tangles={"chat": TangleLink(roots[0].id, (roots[0].id,))})
    store.writes.ingest([m.raw for m in (*roots, reply)])
    async with await connect(path) as client:
        rows, pages = await every_page(client, "tangles", "tangles", limit=2)
        assert pages == 3 and sorted(row["root"] for row in rows) == sorted(r.id for r in roots)
        first = next(row for row in rows if row["root"] == roots[0].id)
        assert first == {
            "root": roots[0].id,
            "tangle": "chat",
            "author": alice.public,
            "messages": 2,
            "joined": 2,
            "pending": 0,
            "version": 2,
            "last": reply.timestamp,
        }
        named = await client.request("tangles", name="nothing-so-named")
        assert named == {"tangles": [], "next": None}


@pytest.mark.parametrize(
    "op, fields",
    [
        ("tangles", {"limit": 0}),
        ("tangles", {"limit": "ten"}),
        ("tangles", {"name": ""}),
        ("tangles", {"name": "n" * 65}),
        ("tangles", {"name": 7}),
        ("tangles", {"after": "chat"}),
        ("tangles", {"after": {"root": ID}}),
        ("tangles", {"after": {"root": b"short", "tangle": "chat"}}),
        ("group-list", {"limit": -1}),
        ("group-list", {"after": {"root": ID, "tangle": ["chat"]}}),
    ],
)
async def test_a_bad_discovery_request_is_refused_and_the_node_serves_on(node, op, fields):
    _store, path = node
    async with await connect(path) as client:
        with pytest.raises(NodeError) as refused:
            await client.request(op, **fields)
        assert refused.value.kind == ErrorKind.BAD_REQUEST
        assert (await client.request("tangles"))["next"] is None


async def test_group_list_names_our_groups_and_not_the_others(node):
    store, path = node
    stranger = Feed("disc-stranger")
    other = groups.create(stranger.keypair, "theirs")  # a group we only replicate
    theirs = stranger.append(other[0], tangles={k: TangleLink(None, None) for k in other[1]})
    store.writes.ingest([theirs.raw])
    async with await connect(path) as client:
        ours = (await client.request("group-create", name="book club"))["group"]
        view = groups.read_group(store, ME, ours)
        await client.request("group-add", group=ours, members=[stranger.public])
        rows, _pages = await every_page(client, "group-list", "groups", limit=1)
    assert view.state.members == {ME.public}
    (row,) = rows
    assert row["group"] == ours and row["name"] == "book club" and row["author"] == ME.public
    assert (row["members"], row["member"], row["epoch"], row["epochs"]) == (2, True, ours, 1)
    assert row["messages"] == 2
