"""Private groups across real nodes: membership converges, exclusion locks out the new epoch."""

import trio

from tanglenode.node.localnet import REQUEST_SECONDS, Node
from tanglenode.protocol.groups import Kind, Private, new_epoch_key, seal_message


async def show(node: Node, group: bytes) -> dict:
    return await call(node, "group-show", group=group)


async def group_rows(node: Node, group: bytes) -> list[dict]:
    return (await call(node, "group-timeline", group=group))["entries"]


async def call(node: Node, op: str, **arguments):
    with trio.fail_after(REQUEST_SECONDS):
        async with await node.client() as client:
            return await client.request(op, **arguments)


async def test_a_group_session_across_three_nodes(tmp_path):
    alice, bob, carol = (Node(tmp_path, name) for name in ("alice", "bob", "carol"))
    await alice.start()
    await bob.start([alice])
    await carol.start([alice])
    group = (await call(alice, "group-create", name="book club"))["group"]
    await call(alice, "group-add", group=group, members=[bob.key, carol.key])
    chat = {"tangle": "group", "root": group}
    await bob.wait_for_size(2, **chat)
    await call(bob, "group-post", group=group, content={"text": "hello from bob"})
    for node in (alice, bob, carol):
        await node.wait_for_size(3, **chat)
        assert set((await show(node, group))["members"]) == {alice.key, bob.key, carol.key}

    # A non-member's forged add is left out everywhere (it cannot even open the group).
    mallory = Node(tmp_path, "mallory")
    await mallory.start([alice])
    await mallory.wait_for_size(3, **chat)
    assert (await show(mallory, group))["readable"] is False

    done = await call(alice, "group-exclude", group=group, members=[carol.key])
    await call(alice, "group-post", group=group, content={"text": "carol cannot read this"})
    for node in (alice, bob, carol, mallory):
        await node.wait_for_size(6, **chat)
    for node in (alice, bob):
        state = await show(node, group)
        assert state["current_epoch"] == done["epoch"]
        assert set(state["members"]) == {alice.key, bob.key}
        texts = [row["content"] for row in await group_rows(node, group)]
        assert {"text": "carol cannot read this"} in texts
    carol_rows = await group_rows(carol, group)
    assert {"text": "hello from bob"} in [row["content"] for row in carol_rows]  # kept
    assert carol_rows[-1]["type"] is None  # the new epoch's post does not open for carol
    mallory_rows = await group_rows(mallory, group)
    assert all(row["type"] is None for row in mallory_rows)

    # Mallory forges an add-member of herself under a key of her own making.
    forged = seal_message(
        Private(Kind.ADD, (mallory.key,)), new_epoch_key(), group, key_for=(mallory.key,)
    )
    with trio.fail_after(REQUEST_SECONDS):
        async with await mallory.client() as client:
            await client.publish(forged, {"group": group, "members": group})
    for node in (alice, bob):
        await node.wait_for_size(7, **chat)
        state = await show(node, group)
        assert mallory.key not in state["members"]
        assert set(state["members"]) == {alice.key, bob.key}
    for node in (alice, bob, carol, mallory):
        assert await node.stop() == 0


async def test_concurrent_adds_during_a_partition_converge(tmp_path):
    alice, bob, carol, dave = (Node(tmp_path, name) for name in ("alice", "bob", "carol", "dave"))
    await alice.start()
    await bob.start([alice])
    group = (await call(alice, "group-create", name="split"))["group"]
    await call(alice, "group-add", group=group, members=[bob.key])
    chat = {"tangle": "group", "root": group}
    await bob.wait_for_size(2, **chat)
    await alice.stop()
    await bob.stop()

    await alice.start()  # partitioned: nobody dials anybody
    await bob.start()
    await call(alice, "group-add", group=group, members=[carol.key])
    await call(bob, "group-add", group=group, members=[dave.key])
    await call(bob, "group-post", group=group, content="bob, alone")
    with trio.fail_after(REQUEST_SECONDS):
        async with await alice.client() as client:
            await client.connect_peer(bob.listen, bob.key)
    await carol.start([alice])
    await dave.start([bob])
    everyone = {alice.key, bob.key, carol.key, dave.key}
    for node in (alice, bob, carol, dave):
        await node.wait_for_size(5, **chat)
    states = [await show(node, group) for node in (alice, bob, carol, dave)]
    assert all(set(state["members"]) == everyone for state in states)
    timelines = [await node.timeline(**chat) for node in (alice, bob, carol, dave)]
    assert all(timeline == timelines[0] for timeline in timelines)
    for node in (alice, bob, carol, dave):
        assert await node.stop() == 0
