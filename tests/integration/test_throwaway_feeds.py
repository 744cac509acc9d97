"""A peer pushes a thousand throwaway feeds: every honest node keeps publishing.

Format 1 named the whole processed frontier in every timeframe, so one tiny
post from each of 480 fresh keys pushed every publish past the 16 KiB limit
on every node, for ever. Timeframes now name the heads, at most 32
(docs/PROCESSING.md, "The timeframe cap"): two real nodes, a hostile peer in
this process pushing 1,000 one-message feeds to one of them, then posts and
document edits on both: all accepted, each naming at most 32 messages, both
nodes holding the same spacetime at the end.
"""

from __future__ import annotations

from tanglenode.node.localnet import Node
from tanglenode.protocol.limits import TIMEFRAME_CAP
from tests.factories import Feed, keypair
from tests.integration.test_chaos import poll, send
from tests.integration.test_doc_live import request

THROWAWAYS = 1_000


async def test_a_thousand_throwaway_feeds_leave_every_honest_node_publishing(tmp_path):
    a, b = Node(tmp_path, "a"), Node(tmp_path, "b")
    await a.start()
    await b.start([a])
    try:
        strangers = [Feed(f"throwaway-{n}").append({"t": "hi"}) for n in range(THROWAWAYS)]
        await send(a, keypair("throwaway-pusher"), strangers, lambda s: s["feeds"] >= THROWAWAYS)
        await poll(b, lambda s: s["feeds"] >= THROWAWAYS)  # b has them too, through a
        published = []
        for node in (a, b):
            post = await request(node, "publish", content={"type": "post", "text": "still here"})
            doc = (await request(node, "doc-create", title=f"notes of {node.name}"))["doc"]
            edited = await request(node, "doc-edit", doc=doc, splices=[["ins", 0, "typed"]])
            assert (await request(node, "doc-show", doc=doc))["text"] == "typed"
            published += [post["id"], doc, *(m["msg"] for m in edited["messages"])]
        for msg in published:
            body = await request(a if msg in published[:3] else b, "get", message=msg)
            assert len(body["timeframe"]) <= TIMEFRAME_CAP
        total = THROWAWAYS + len(published)
        for node in (a, b):
            await node.wait_for_size(total, spacetime=True)
        assert await a.timeline(spacetime=True) == await b.timeline(spacetime=True)
    finally:
        for node in (a, b):
            await node.stop()
