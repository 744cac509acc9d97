"""The IPC ops that forget content: `delete` (an author's erase request) and `purge`.

Theory of operation
-------------------
Rows of `node.ipc.ops.OPS`, served by the running node or, stopped, on its
store (node/cli/backend.py). `delete` checks what the store can tell before
anything is signed: the message is held, it is ours, its content is still
here, it is not an erase request itself (protocol/erase.py's rules, which
every node applies again when it processes the request); then it publishes
our erase request, whose processing in the same transaction drops the
content here (storage/erasure.py); peers drop theirs as the request reaches
them. A document message's request carries its structure (`weave`:
`store.documents.erase_weave`, a private document's sealed again in its
epoch), so nodes that never saw its characters weave its atoms all the
same. `purge` drops the contents of the messages named, here only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tanglenode.protocol.erase import STRUCTURAL_TANGLES, EraseReason, erase_content, is_erase
from tanglenode.protocol.ipc import message_body
from tanglenode.protocol.ipc_erase import DeleteRequest, PurgeRequest
from tanglenode.protocol.ipc_fields import ErrorKind, RequestError
from tanglenode.storage.errors import NotInGroup

if TYPE_CHECKING:
    from tanglenode.node.ipc.area import Area


async def delete(area: Area, request: DeleteRequest) -> dict[str, Any]:
    service = area.service
    keypair = service.store.keypair or area.keypair
    if keypair is None:
        raise RequestError(ErrorKind.NO_IDENTITY, "the node has no feed of its own")

    def look(store) -> tuple[Any, bytes | None]:
        return store.feeds.get(request.message), store.feeds.erased_by(request.message)

    target, erased = await service.read(look)
    if target is None:
        raise RequestError(ErrorKind.NOT_FOUND, "no such message", str(EraseReason.UNKNOWN))
    if target.author != keypair.public:
        raise RequestError(
            ErrorKind.REFUSED,
            "only its author can erase a message (tangled purge drops it here only)",
            str(EraseReason.NOT_OWN),
        )
    if erased is not None:
        raise RequestError(ErrorKind.CONFLICT, "its content is erased already")
    if is_erase(target.content):
        raise RequestError(
            ErrorKind.REFUSED, "an erase request cannot be erased", str(EraseReason.ERASE)
        )
    if STRUCTURAL_TANGLES.intersection(target.tangles):
        raise RequestError(
            ErrorKind.REFUSED,
            "a group's membership and keys rest on it: it cannot be erased",
            str(EraseReason.STRUCTURE),
        )
    try:  # a document message's structure (a private one's sealed again in its epoch)
        weave = await service.read(lambda store: store.documents.erase_weave(target.id))
    except NotInGroup as error:
        raise RequestError(ErrorKind.SEALED, f"cannot erase it here: {error}") from None
    content = erase_content(target.seq, target.id, weave)
    message = await service.publish(content, None)
    dropped = await service.read(lambda store: store.feeds.erased_by(target.id))
    return {"message": message_body(message), "erased": target.id, "dropped": dropped is not None}


async def purge(area: Area, request: PurgeRequest) -> dict[str, Any]:
    gone = await area.service.keep(area.service.store.writes.purge, request.messages)
    return {"purged": gone, "asked": len(request.messages)}
