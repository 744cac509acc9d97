"""Forgetting content: authors' erase requests carried out, operators' purges, and what is
remembered of both.

Theory of operation
-------------------
A message's id is the hash of its header (docs/FORMAT.md), so its content
can leave the store without breaking a chain, a link or a proof. Two things
drop a content:

- an **erase request** (protocol/erase.py) of the message's own author,
  carried out by every node when it *processes* the request (`carry_out`,
  called by the writes after every processing pass, in the pass's
  transaction): judged from the request and its author's own feed alone,
  so every node decides the same;
- an operator's **purge** (`purge`), local to this node, never asked of
  peers.

Either way the message's body is rewritten as its header alone
(`Bodies.drop_content`: the header's bytes stay as they were), every
derived view forgets what it drew from the content (`forget`), and one
table remembers it:

    erasure   b"t" + id  -> erasing request id (32), or b"" for a purge
              b"r" + request id -> reason code (b"" when carried out)

so a content once dropped is never stored again (ingest keeps the header of
a message it meets again, `erased_ids`), `show` and every view say
`erased` with the request that did it, and `tangled check` accepts the
missing content. All of it commits in the transaction of the change.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any

import lmdb

from tanglenode.protocol.erase import EraseReason, erase_request, is_erase, judge
from tanglenode.protocol.message import Message
from tanglenode.storage.feeds.derived import DerivedView, ProcessedStep, WriteScope
from tanglenode.storage.feeds.layout import feed_key

ERASURE_DB = b"erasure"
_TARGET, _REQUEST = b"t", b"r"
PURGED = b""  # the value of a target purged by this node's operator


def erasure_db(env: lmdb.Environment) -> Any:
    with env.begin(write=True) as txn:
        return env.open_db(ERASURE_DB, txn=txn)


def erased_by(txn: Any, db: Any, msg_id: bytes) -> bytes | None:
    """The id of the request that erased `msg_id` (`PURGED` for a purge), None if not."""
    found = txn.get(_TARGET + msg_id, db=db)
    return None if found is None else bytes(found)


def erased_ids(txn: Any, db: Any, ids: Iterable[bytes]) -> set[bytes]:
    """Which of `ids` had their content dropped."""
    return {msg_id for msg_id in ids if txn.get(_TARGET + msg_id, db=db) is not None}


def request_outcome(txn: Any, db: Any, request: bytes) -> str | None:
    """An erase request's outcome: "" carried out, an `EraseReason` refused, None unknown."""
    found = txn.get(_REQUEST + request, db=db)
    return None if found is None else bytes(found).decode()


def drop(
    scope: WriteScope,
    db: Any,
    views: Sequence[DerivedView],
    message: Message,
    by: bytes,
) -> bool:
    """Drop `message`'s content (keep its header), have every view forget it, and remember
    `by` (a request id, or `PURGED`); False if it held no content (remembered all the same)."""
    txn = scope.txn
    txn.put(_TARGET + message.id, by, db=db)
    held = scope.ctx.tables.bodies.drop_content(txn, feed_key(message.author, message.seq))
    if held is None:
        return False
    for view in views:
        view.forget(scope, held)
    return True


def carry_out(
    scope: WriteScope, db: Any, views: Sequence[DerivedView], step: ProcessedStep
) -> list[bytes]:
    """Carry out every erase request this processing pass processed, in processed order;
    the ids whose content went."""
    gone = []
    bodies, txn = scope.ctx.tables.bodies, scope.txn
    for position in step.order:
        request = step.message(scope, position)
        if request is None or not is_erase(request.content):
            continue
        said = erase_request(request.content)
        if isinstance(said, EraseReason):
            txn.put(_REQUEST + request.id, said.encode(), db=db)
            continue
        target = bodies.message(txn, feed_key(request.author, said.seq))
        held_id = None if target is None else target.id
        held_content = None if target is None else target.content
        held_tangles = () if target is None else tuple(target.tangles)
        refusal = judge(said, request.seq, held_id, held_content, held_tangles)
        if refusal is not None:
            txn.put(_REQUEST + request.id, refusal.encode(), db=db)
            continue
        txn.put(_REQUEST + request.id, b"", db=db)
        assert target is not None
        if drop(scope, db, views, target, request.id):
            gone.append(target.id)
    return gone


def purge(
    scope: WriteScope, db: Any, views: Sequence[DerivedView], messages: Collection[Message]
) -> list[bytes]:
    """The operator's purge of `messages`' contents (local only); the ids whose content
    went."""
    return [m.id for m in messages if drop(scope, db, views, m, PURGED)]
