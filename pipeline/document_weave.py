"""One document woven from an archive's rows, by the node's own engine, in one task.

Theory of operation
-------------------
`pipeline/documents.py` groups an archive's document messages (those of a
`doc` tangle) by document and hands each group here, in one Python worker.
Nothing of the weave is written again: the group is decoded and checked by
the node's `decode_message` (signature included), put in an order the
node's causal processor could have processed it in, and driven through the
node's `DocumentEngine` (storage/documents/engine.py) over the document
tables in a scratch LMDB; the text, the authors and the blame are then read
with the same functions `tangled doc show` and `doc blame` read a store with
(`storage.documents.revisions.revision` and `.blame`, `rows.frontier`). So
the result is the node's, byte for byte, for every document whose messages
the archive holds (docs/PIPELINE.md, "Documents").

**What the engine needs of the feed store.** Two questions only: where a
message is (`position`: author + seq, for `covers` and `inside`,
storage/documents/wefts.py) and the message at a position. `_Held` answers
both from the group, so a cited message that is no message of this
document is "not held" here: the edit citing it is set aside as on the node
(there `unknown-atom` or `outside-weft`; here `outside-weft`), the text
alike.

**The order.** The weave does not depend on the order messages are
processed in, only on each edit's weft, read through its timeframe from the
messages of the document woven before it (storage/documents/wefts.py). So
any order in which each message comes after its author's earlier document
messages and, for each timeframe entry (feed F, seq s), after F's last
document message at or below s, weaves what the node wove. `_causal_order`
is Kahn's pass over those edges (ties by timestamp, author, seq: the same
order on every run).

**Pending.** A message the node held but never processed (its timeframe
names a message the archive lacks, directly or through its feed's earlier
messages) is not woven by the node; the Spark side marks those it can see
(`pending`), and the pass here carries it along the document's edges: a
message after a pending one of its feed, or naming such a feed at or past
it, is pending too. A message that waits only through other feeds' messages
two removes away is woven here, not on the node: a node at rest holds none.

**What cannot be read** gives the row a typed `unreadable` reason, never a
traceback: `no-init` (the archive holds edits, not their doc/init), `sealed`
(a private document: the archive holds the group's envelopes, the pipeline
no key), `pending`, `header-only` (the init's content erased), `set-aside`
(the init breaks a rule: the engine's reason in `detail`), `failed` (the
engine refused the rows: `detail` says how).
"""

from __future__ import annotations

import heapq
import shutil
import tempfile
from bisect import bisect_right
from collections import Counter, defaultdict
from typing import Any

from tanglenode.protocol.document import TANGLE
from tanglenode.protocol.message import Message

# Bounds of one document, one task: refused before the group is read (pipeline/documents.py).
MAX_DOCUMENT_MESSAGES = 50_000
MAX_DOCUMENT_BYTES = 64 * 2**20  # headers and contents
SCRATCH_MAP_BYTES = 8 * 2**30  # the scratch LMDB's map: address space, not disk (sparse)
DETAIL_CHARS = 300


class Unreadable(Exception):
    """A document this job cannot weave: `reason` a stable word, `detail` one line."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail[:DETAIL_CHARS]


class _Held:
    """The feed store's two answers the engine asks for, from one document's messages."""

    def __init__(self, messages: list[Message]) -> None:
        from tanglenode.storage.feeds.layout import feed_key

        self._positions = {m.id: feed_key(m.author, m.seq) for m in messages}
        self._messages = {feed_key(m.author, m.seq): m for m in messages}

    def position(self, txn, msg_id: bytes) -> bytes | None:  # storage.feeds.message_ids
        return self._positions.get(bytes(msg_id))

    def message(self, txn, position: bytes) -> Message | None:  # storage.feeds.bodies
        return self._messages.get(bytes(position))


def decode_rows(root: bytes, rows) -> tuple[list[Message], set[bytes], Counter]:
    """(messages, ids marked pending, rejected counts by reason) of one document's rows:
    (id, header, content, pending) each. A row is rejected whose header does not decode
    and verify, whose id is not its header's hash, that is not in document `root`'s tangle,
    or that holds a place (author, seq) another row holds."""
    from tanglenode.protocol.errors import InvalidMessage
    from tanglenode.protocol.limits import UNLIMITED
    from tanglenode.protocol.message import decode_message
    from tanglenode.protocol.wire import wire

    messages: dict[tuple[bytes, int], Message] = {}
    pending: set[bytes] = set()
    rejected: Counter = Counter()
    for msg_id, header, content, marked in rows:
        if header is None:
            rejected["malformed"] += 1
            continue
        try:
            message = decode_message(wire(bytes(header), content), UNLIMITED)
        except InvalidMessage as error:
            rejected[str(error.reason)] += 1
            continue
        except Exception:  # hostile bytes: whatever the decoder meets, one count
            rejected["malformed"] += 1
            continue
        link = message.tangles.get(TANGLE)
        if message.id != bytes(msg_id):
            rejected["id-mismatch"] += 1
        elif link is None or (message.id if link.root is None else link.root) != root:
            rejected["column-mismatch"] += 1
        elif (message.author, message.seq) in messages:
            rejected["fork"] += 1
        else:
            messages[(message.author, message.seq)] = message
            if marked:
                pending.add(message.id)
    return list(messages.values()), pending, rejected


def causal_order(messages: list[Message], pending: set[bytes]) -> tuple[list[Message], int]:
    """(the messages to weave in an order the node could process them in, how many are
    pending): Kahn's pass over each message's edges (the module's docstring). Messages
    left in a loop (columns edited: signed links cannot loop) count as pending."""
    by_feed: dict[bytes, list[Message]] = defaultdict(list)
    for message in messages:
        by_feed[message.author].append(message)
    seqs = {}
    for feed, mine in by_feed.items():
        mine.sort(key=lambda m: m.seq)
        seqs[feed] = [m.seq for m in mine]

    def last_at_or_below(feed: bytes, seq: int) -> Message | None:
        at = bisect_right(seqs.get(feed, []), seq)
        return by_feed[feed][at - 1] if at else None

    waits_on: dict[bytes, int] = {}
    followers: dict[bytes, list[Message]] = defaultdict(list)
    for message in messages:
        before = {message.author: last_at_or_below(message.author, message.seq - 1)}
        for feed, seq in message.timeframe.items():
            if feed != message.author:
                before[feed] = last_at_or_below(feed, seq)
        earlier = [m for m in before.values() if m is not None]
        waits_on[message.id] = len(earlier)
        for one in earlier:
            followers[one.id].append(message)

    def key(m: Message) -> tuple:
        return (m.timestamp, m.author, m.seq, m.id)

    ready = [(key(m), m) for m in messages if waits_on[m.id] == 0]
    heapq.heapify(ready)
    stuck_at: dict[bytes, int] = {}  # feed -> its first pending document message's seq
    order: list[Message] = []
    pending_count = 0
    while ready:
        _key, message = heapq.heappop(ready)
        named = [message.author, *message.timeframe]
        limits = [message.seq, *message.timeframe.values()]
        if message.id in pending or any(
            seq >= stuck_at.get(feed, seq + 1) for feed, seq in zip(named, limits, strict=True)
        ):
            stuck_at[message.author] = min(stuck_at.get(message.author, message.seq), message.seq)
            pending_count += 1
        else:
            order.append(message)
        for follower in followers[message.id]:
            waits_on[follower.id] -= 1
            if waits_on[follower.id] == 0:
                heapq.heappush(ready, (key(follower), follower))
    looped = sum(1 for count in waits_on.values() if count > 0)
    return order, pending_count + looped


def weave_document(root: bytes, rows) -> dict[str, Any]:
    """One output row (pipeline/documents.py, `DOCUMENT_SCHEMA`) for document `root`."""
    messages, marked, rejected = decode_rows(root, rows)
    order, pending = causal_order(messages, marked)
    row: dict[str, Any] = {
        "root": root,
        "messages": len(rows),
        "pending": pending,
        "rejected": sum(rejected.values()),
    }
    init = next((m for m in messages if m.id == root), None)
    if init is not None:  # who created it and when: the header's, public as any header
        row |= {"author": init.author, "created": init.timestamp}
    try:
        _check_readable(root, init, order)
        row |= _woven(root, messages, order)
    except Unreadable as why:
        row |= {"unreadable": why.reason, "detail": why.detail}
    if rejected and row.get("detail") is None:
        counts = ", ".join(f"{reason} {n}" for reason, n in sorted(rejected.items()))
        row["detail"] = f"rows rejected: {counts}"[:DETAIL_CHARS]
    return row


def _check_readable(root: bytes, init: Message | None, order: list[Message]) -> None:
    """`Unreadable` unless document `root`'s init can be woven here."""
    from tanglenode.storage.documents.sealed import is_sealed

    if init is None:
        raise Unreadable("no-init", "the archive holds edits of it, not a valid doc/init")
    if not any(m.id == root for m in order):
        raise Unreadable("pending", "its doc/init names a message the archive does not hold")
    if not init.has_content:
        raise Unreadable("header-only", "its doc/init is held as its header alone (erased)")
    if is_sealed(init.content):
        raise Unreadable("sealed", "private to a group: the archive holds its sealed envelopes")


def _woven(root: bytes, messages: list[Message], order: list[Message]) -> dict[str, Any]:
    """Weave `order` in a scratch LMDB with the node's engine; read what `doc show` reads."""
    import lmdb

    from tanglenode.storage.documents.rows import DocumentTables

    scratch = tempfile.mkdtemp(prefix="tanglenode-doc-")
    try:
        env = lmdb.open(
            scratch,
            map_size=SCRATCH_MAP_BYTES,
            max_dbs=len(DocumentTables.NAMES) + 1,
            sync=False,
            metasync=False,
            lock=False,
        )
        try:
            tables = DocumentTables.open(env)
            _apply_all(env, tables, _Held(messages), order)
            with env.begin() as txn:
                return _read(txn, tables, root)
        finally:
            env.close()
    except Unreadable:
        raise
    except lmdb.MapFullError:
        raise Unreadable("failed", "the weave outgrew the task's scratch store") from None
    except Exception as error:  # the engine met rows it refuses: typed, not a traceback
        raise Unreadable("failed", f"{type(error).__name__}: {error}") from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _apply_all(env, tables, held: _Held, order: list[Message]) -> None:
    """The node's engine over `order`, one slice of work a transaction as the node weaves
    (storage/documents/backlog.py), so memory stays flat however long the history."""
    from tanglenode.protocol.limits import DEFAULT_LIMITS
    from tanglenode.storage.documents.backlog import SLICE
    from tanglenode.storage.documents.engine import DocumentEngine

    at = 0
    while at < len(order):
        with env.begin(write=True) as txn:
            engine = DocumentEngine(txn, tables, held, held, DEFAULT_LIMITS.max_content_depth)
            spent = 0
            while at < len(order) and spent < SLICE:
                spent += engine.apply(order[at])
                at += 1
            engine.finish()


def _read(txn, tables, root: bytes) -> dict[str, Any]:
    """Text, authors, blame and counts of woven document `root`, read as a node reads them
    (storage/documents/ops.py: `document_checkout`, `document_blame`, `held`)."""
    from tanglenode.storage.documents import revisions
    from tanglenode.storage.documents.rows import (
        M_NEXT_MNO,
        M_TITLE,
        docno_of,
        frontier,
        read_meta,
        unpack,
    )

    docno = docno_of(txn, tables, root)
    if docno is None:
        reason, detail = unpack(txn.get(root + root, db=tables.aside) or b"\x92\xa0\xa0")
        raise Unreadable("set-aside", f"its doc/init is set aside: {reason} {detail}".strip())
    meta = read_meta(txn, tables, docno)
    text = revisions.revision(txn, tables, docno, None)
    spans = revisions.blame(txn, tables, docno, None)
    chars: Counter = Counter()
    for span in spans:
        chars[span.author] += len(span.text)
    weft = frontier(txn, tables, docno, meta)
    authors = sorted(weft.items(), key=lambda item: (-chars[item[0]], item[0]))
    aside = 0
    cursor = txn.cursor(db=tables.aside)
    if cursor.set_range(root):
        for key in cursor.iternext(values=False):
            if key[:32] != root:
                break
            aside += 1
    return {
        "title": meta[M_TITLE],
        "text": text,
        "length": len(text),
        "authors": [{"author": a, "seq": seq, "chars": chars[a]} for a, seq in authors],
        "blame": [
            {
                "text": span.text,
                "author": span.author,
                "msg": span.msg_id,
                "erased": span.erased,
                "erased_atoms": span.erased_atoms,
            }
            for span in spans
        ],
        "versions": meta[M_NEXT_MNO] - 1,
        "set_aside": aside,
    }
