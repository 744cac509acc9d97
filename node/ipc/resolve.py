"""The `resolve` op served: names people type (`%AbCd`, `@AbCdEfGh`, `~alice`, a title) to ids.

A handler `(area, request)`, a row of `node.ipc.ops.OPS`: the running node
answers it, and the CLI runs the same one on the store it opened while the
node is stopped (node/cli/backend.py). Each kind is one bounded read in a
worker thread (protocol/ipc_resolve.py says what each matches): the
prefixes a range scan of the index by id, stopping after one candidate
more than a reply lists; a name one pass over the self-chosen names; a
title one pass over the documents, read, as every document op's, once the
backlog is woven and the groups' keys are read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tanglenode.protocol.ipc_resolve import MAX_CANDIDATES, ResolveRequest

if TYPE_CHECKING:
    from tanglenode.node.ipc.area import Area


async def resolve(area: Area, request: ResolveRequest) -> dict[str, Any]:
    """`{found: [{id[, title]}], more}`: at most `MAX_CANDIDATES` ids `request` names."""
    wanted = MAX_CANDIDATES + 1  # one more says there are more
    kind, low, high, text = request.kind, request.low, request.high, request.text
    if kind == "message":
        ids = await area.service.read(lambda store: store.feeds.ids_between(low, high, wanted))
        found = [{"id": found} for found in ids]
    elif kind == "feed":
        ids = await area.service.read(lambda store: store.feeds.feeds_between(low, high, wanted))
        found = [{"id": found} for found in ids]
    elif kind == "name":
        ids = await area.service.read(lambda store: store.feeds.feeds_named(text, wanted))
        found = [{"id": found} for found in ids]
    else:
        await area.service.weave_backlog()
        await area.service.read_keys_if_stale()
        titled = await area.service.read(lambda store: store.documents.titled(text, wanted))
        found = [{"id": doc, "title": title} for doc, title in titled]
    return {"found": found[:MAX_CANDIDATES], "more": len(found) > MAX_CANDIDATES}
