"""STAND-IN, to be deleted at merge: INGEST's two-step ingest, as CATCHUP uses it (issue 14).

COORDINATOR: INGEST provides `storage.ingest.prepare(raws, limits) -> PreparedBatch`
and `FeedStore.ingest_prepared(batch) -> list[IngestResult]`. `node/service.py`
imports those first and falls back to this file only while they are missing;
once INGEST is merged, delete this file and the two fallbacks in
`node/service.py` (marked STAND-IN).

Here the two steps are `FeedStore.ingest` cut in two, unchanged otherwise:
`prepare` hashes, decodes and verifies every message with no store at all
(pure CPU, safe in any thread; PyNaCl releases the GIL while it verifies),
`ingest_prepared` does the rest in one write transaction (known ids,
each feed's messages in seq order, the feed rules, processing). The two
give exactly `FeedStore.ingest`'s results.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from tanglenode.protocol.errors import InvalidMessage
from tanglenode.protocol.identity import message_id
from tanglenode.protocol.limits import Limits
from tanglenode.protocol.message import Message, decode_message
from tanglenode.storage.ingest import BatchWriter, IngestResult, Outcome, is_known
from tanglenode.storage.store import FeedStore, feed_ordered


@dataclass(frozen=True, slots=True)
class PreparedBatch:
    """Slot i: the decoded `messages[i]` still to apply, or the decided `results[i]`."""

    ids: list[bytes]
    messages: list[Message | None]
    results: list[IngestResult | None]


def prepare(
    raws: Sequence[bytes], limits: Limits, known: Collection[bytes] = frozenset()
) -> PreparedBatch:
    """Hash, decode and verify `raws` without the store (STAND-IN for INGEST's)."""
    count = len(raws)
    ids: list[bytes] = [b""] * count
    messages: list[Message | None] = [None] * count
    results: list[IngestResult | None] = [None] * count
    seen: set[bytes] = set()
    for index, raw in enumerate(raws):
        raw = bytes(raw)
        msg_id = ids[index] = message_id(raw)
        if msg_id in seen or msg_id in known:
            results[index] = IngestResult(Outcome.DUPLICATE, msg_id)
            continue
        seen.add(msg_id)
        try:
            messages[index] = decode_message(raw, limits, known_id=msg_id)
        except InvalidMessage as error:
            results[index] = IngestResult(Outcome.REJECTED, msg_id, error.reason, error.detail)
    return PreparedBatch(ids, messages, results)


def ingest_prepared(store: FeedStore, batch: PreparedBatch) -> list[IngestResult]:
    """Store a prepared batch atomically (STAND-IN for `FeedStore.ingest_prepared`)."""
    tables = store._tables  # private: this stands in for a FeedStore method
    results = list(batch.results)
    with store._env.begin() as txn:
        for index, msg_id in enumerate(batch.ids):
            if batch.messages[index] is not None and is_known(txn, tables, msg_id):
                results[index] = IngestResult(Outcome.DUPLICATE, msg_id)
    candidates = feed_ordered(
        [(i, message) for i, message in enumerate(batch.messages) if message and not results[i]]
    )
    if not candidates:
        return results  # type: ignore[return-value]  # every slot is decided
    with store._write() as txn:
        writer = BatchWriter(txn, tables, store._timeline_tables)
        for index, message in candidates:
            results[index] = writer.apply(message)
        writer.finish()
        store._process(txn, {m.author for _i, m in candidates}, writer.invalidated, writer.stored)
    return results  # type: ignore[return-value]  # every slot is filled above
