"""Erased document messages: woven from their skeleton, their characters out of every row.

Theory of operation
-------------------
An author erases one of its messages by an erase request in its own feed
(protocol/erase.py); a document message's request carries its *skeleton*
(`weave`: protocol/document.py, `skeleton`), the message without its
characters. Decision 10 of the design: an erased edit keeps its atoms'
places in the weave, without characters, on every node, whether or not the
node ever saw the content. Three moments meet it (docs/DOCUMENTS.md,
"Erased edits"):

- **A message held as its header alone** (it was erased, or its content
  dropped in transit, before this node got it) is woven from the skeleton
  kept for it in `doc-erased`. With none kept yet it *waits* (the engine,
  `DocumentEngine.apply`: `doc-waiting` under its own id, as a sealed
  message waits under its epoch), and so does every message of its
  document that cites it (`wait_if_sealed`).
- **The erase request is processed** (`weave_request`, in processed order
  with the document messages, through the backlog when there is one): a
  request that every node carries out (protocol/erase.py's `judge`, the
  rule storage/erasure.py applies) keeps its target's skeleton in
  `doc-erased`, under the request's id. If the target waited for it, or
  this node wove the target from a content whose skeleton is not the
  request's, the target's document is woven again from all it holds, in
  processed order (storage/documents/reweave.py), the target from the
  request's skeleton: **the skeleton wins**, so every node ends with the
  same weave whatever content it saw. A request without `weave` makes its
  target no document message, on every node (a node without the content
  cannot tell an edit from anything else).
- **The content leaves the store** (`forget`, called by every view's
  `forget` hook, for an erase request carried out or an operator's purge):
  the skeleton of the content is kept if none is (a purge brings none; a
  request still in the backlog will replace it), and the engine takes the
  message's characters out of the weave and the splice log
  (`DocumentEngine.erase`); a comment loses its text, an init its title.

`doc-erased` is not the view's own table: `tangled reindex` keeps it (a
purged message's skeleton came from a content no longer held).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tanglenode.protocol.document import TANGLE, DocumentError, skeleton
from tanglenode.protocol.erase import EraseReason, erase_request, is_erase, judge
from tanglenode.protocol.groups import seal_value
from tanglenode.protocol.message import Message
from tanglenode.storage.documents.backlog import MESSAGE_COST
from tanglenode.storage.documents.rows import (
    C_TEXT,
    docno_of,
    kept_weave,
    pack,
    unpack,
)
from tanglenode.storage.documents.sealed import (
    SealedMessages,
    Waiting,
    is_document_message,
    is_sealed,
)
from tanglenode.storage.feeds.layout import U32, feed_key

if TYPE_CHECKING:
    from tanglenode.storage.documents.reweave import DocumentWeaver

PURGED = b""  # the `doc-erased` request id of a content this node's operator purged
UNKNOWN = object()  # a skeleton this node cannot read (a sealed one without its key)


def concerns_documents(message: Message) -> bool:
    """Whether the documents weave anything for `message`: a document message (valid or
    not), a message of a `doc` tangle held as its header alone, or an erase request."""
    if is_document_message(message) or is_erase(message.content):
        return True
    return TANGLE in message.tangles and not message.has_content


def weave_one(weaver: DocumentWeaver, message: Message) -> int:
    """Weave processed `message` (an erase request: `weave_request`); the work it took."""
    if is_erase(message.content):
        return weave_request(weaver, message)
    return weaver.engine.apply(message)


def weave_request(weaver: DocumentWeaver, request: Message) -> int:
    """Keep the skeleton a processed erase request gives its document message, and weave
    its document again where the weave must follow it (see the module docstring)."""
    said = erase_request(request.content)
    if isinstance(said, EraseReason):
        return 0
    txn, tables = weaver.txn, weaver.tables
    target = weaver.messages.message(txn, feed_key(request.author, said.seq))
    held_id = None if target is None else target.id
    if judge(said, request.seq, held_id, None if target is None else target.content) is not None:
        return 0  # refused on every node alike: nothing is erased
    assert target is not None
    link = target.tangles.get(TANGLE)
    if link is None:
        return 0  # no document's message
    kept = kept_weave(txn, tables, target.id)
    if kept is not None:
        before: Any = _plain(weaver, kept[1])
    elif target.has_content:
        before = _plain(weaver, _skeleton_of(weaver, target.content))
    else:
        before = UNKNOWN
    txn.put(target.id, pack([request.id, said.weave]), db=tables.erased)
    after = _plain(weaver, said.weave)
    roots: dict[bytes, list[bytes]] = {}
    for root, msg_id in weaver.engine.sealed.take(target.id):
        roots.setdefault(root, []).append(msg_id)
    if before is UNKNOWN or after is UNKNOWN or before != after:
        roots.setdefault(target.id if link.root is None else link.root, [])
    for root in sorted(roots):
        weaver.reweave(root, roots[root])
    return MESSAGE_COST + (MESSAGE_COST * len(roots))


def forget(weaver: DocumentWeaver, message: Message) -> None:
    """`message`'s content left the store (`message` still holds it): keep its skeleton if
    none is kept, and take its characters out of every document row."""
    link = message.tangles.get(TANGLE)
    if link is None:
        return
    txn, tables = weaver.txn, weaver.tables
    if kept_weave(txn, tables, message.id) is None:
        weave = _skeleton_of(weaver, message.content)
        if weave is UNKNOWN:
            return  # sealed, no key here: never woven; its request's skeleton will be
        txn.put(message.id, pack([PURGED, weave]), db=tables.erased)
    if weaver.engine.erase(message.id):
        return
    root = message.id if link.root is None else link.root
    docno = docno_of(txn, tables, root)
    if docno is None:
        return
    key = U32.pack(docno) + message.id
    raw = txn.get(key, db=tables.comments)
    if raw is not None:  # a comment keeps its place in its thread, without its text
        row = unpack(raw)
        row[C_TEXT] = ""
        txn.put(key, pack(row), db=tables.comments)


def _skeleton_of(weaver: DocumentWeaver, content: Any) -> Any:
    return skeleton_for(weaver.engine.sealed, content)


def skeleton_for(sealed: SealedMessages, content: Any) -> Any:
    """The skeleton of a document message's content (None for any other content); a
    sealed one's is sealed again under the epoch key that opens it, so that it is woven
    as the content was and read by the group alone (`UNKNOWN` without that key)."""
    if not is_sealed(content):
        return skeleton(content)
    try:
        envelope = sealed.envelope(content)
        opened, _group = sealed.open(envelope)
    except (DocumentError, Waiting):
        return UNKNOWN
    assert envelope.epoch is not None
    found = sealed.key(envelope.epoch)
    assert found is not None
    plain = skeleton(opened)
    return None if plain is None else seal_value(plain, found[1], envelope.epoch)


def _plain(weaver: DocumentWeaver, weave: Any) -> Any:
    """A skeleton as a comparable value: a sealed one opened (`UNKNOWN` without its key,
    or when it does not open)."""
    if not is_sealed(weave):
        return weave
    sealed = weaver.engine.sealed
    try:
        opened, _group = sealed.open(sealed.envelope(weave))
    except (DocumentError, Waiting):
        return UNKNOWN
    return opened
