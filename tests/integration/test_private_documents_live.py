"""A private document across real nodes (docs/DOCUMENTS.md, "Private documents"): members
write it together, a replicating non-member holds every message and reads nothing, an
excluded member stops receiving new edits."""

from typing import Any

import trio

from tanglenode.client import ErrorKind, NodeError
from tanglenode.node.localnet import REQUEST_SECONDS, Node


async def call(node: Node, op: str, **arguments: Any) -> Any:
    with trio.fail_after(REQUEST_SECONDS):
        async with await node.client() as client:
            return await client.request(op, **arguments)


async def refused(node: Node, op: str, **arguments: Any) -> str:
    try:
        await call(node, op, **arguments)
    except NodeError as error:
        return error.kind
    raise AssertionError(f"{op} was answered")


async def text_on(node: Node, doc: bytes, size: int) -> str:
    """The document's text once `node` holds `size` messages of it (its `doc` tangle)."""
    await node.wait_for_size(size, tangle="doc", root=doc)
    return (await call(node, "doc-show", doc=doc))["text"]


async def test_members_write_together_and_no_one_else_reads_it(tmp_path):
    alice, bob, carol, mallory = (Node(tmp_path, n) for n in ("alice", "bob", "carol", "mallory"))
    await alice.start()
    for node in (bob, carol, mallory):
        await node.start([alice])
    group = (await call(alice, "group-create", name="editors"))["group"]
    await call(alice, "group-add", group=group, members=[bob.key, carol.key])
    doc = (await call(alice, "doc-create", title="Secret plan", group=group))["doc"]
    await call(alice, "doc-edit", doc=doc, splices=[["ins", 0, "Meet at the mill."]])
    assert await text_on(bob, doc, 2) == "Meet at the mill."
    await call(bob, "doc-edit", doc=doc, splices=[["ins", 17, " Bring rope."]])
    for node in (alice, bob, carol):
        assert await text_on(node, doc, 3) == "Meet at the mill. Bring rope."
    [listed] = (await call(carol, "doc-list"))["documents"]
    assert (listed["title"], listed["group"]) == ("Secret plan", group)

    await mallory.wait_for_size(3, tangle="doc", root=doc)  # it holds every message
    assert await refused(mallory, "doc-show", doc=doc) == ErrorKind.SEALED
    assert (await call(mallory, "doc-list"))["documents"] == []
    assert await refused(mallory, "doc-edit", doc=doc, splices=[["ins", 0, "x"]]) == "sealed"
    assert await refused(mallory, "doc-create", title="t", group=group) == ErrorKind.GROUP

    await call(alice, "group-exclude", group=group, members=[carol.key])
    await call(alice, "doc-edit", doc=doc, splices=[["ins", 0, "Carol is out. "]])
    assert await text_on(bob, doc, 4) == "Carol is out. Meet at the mill. Bring rope."
    await carol.wait_for_size(4, tangle="doc", root=doc)
    assert (await call(carol, "doc-show", doc=doc))["text"] == "Meet at the mill. Bring rope."
    assert await refused(carol, "doc-edit", doc=doc, splices=[["ins", 0, "x"]]) == ErrorKind.GROUP
    for node in (alice, bob, carol, mallory):
        assert await node.stop() == 0
