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

from collections.abc import Sequence
from dataclasses import dataclass

from tanglenode.protocol.errors import InvalidMessage
from tanglenode.protocol.identity import message_id
from tanglenode.protocol.limits import Limits
from tanglenode.protocol.message import Message, decode_message
from tanglenode.storage.ingest import BatchWriter, IngestResult, Outcome, is_known
from tanglenode.storage.store import FeedStore, feed_ordered


@dataclass(frozen=True, slots=True)
class PreparedBatch:
    """Each message's id and its decoded, verified `Message` or why it is invalid."""

    ids: list[bytes]
    decoded: list[Message | InvalidMessage]


def prepare(raws: Sequence[bytes], limits: Limits) -> PreparedBatch:
    """Decode and verify `raws` without the store (STAND-IN for `storage.ingest.prepare`)."""
    ids: list[bytes] = []
    decoded: list[Message | InvalidMessage] = []
    for raw in raws:
        raw = bytes(raw)
        msg_id = message_id(raw)
        ids.append(msg_id)
        try:
            decoded.append(decode_message(raw, limits, known_id=msg_id))
        except InvalidMessage as error:
            decoded.append(error)
    return PreparedBatch(ids, decoded)


def ingest_prepared(store: FeedStore, batch: PreparedBatch) -> list[IngestResult]:
    """Store a prepared batch atomically (STAND-IN for `FeedStore.ingest_prepared`)."""
    tables = store._tables  # private: this stands in for a FeedStore method
    with store._env.begin() as txn:
        known = [is_known(txn, tables, msg_id) for msg_id in batch.ids]
    results: list[IngestResult | None] = [None] * len(batch.ids)
    candidates: list[tuple[int, Message]] = []
    seen: set[bytes] = set()
    for index, (msg_id, decoded) in enumerate(zip(batch.ids, batch.decoded, strict=True)):
        if known[index] or msg_id in seen:
            results[index] = IngestResult(Outcome.DUPLICATE, msg_id)
            continue
        seen.add(msg_id)
        if isinstance(decoded, InvalidMessage):
            results[index] = IngestResult(Outcome.REJECTED, msg_id, decoded.reason, decoded.detail)
        else:
            candidates.append((index, decoded))
    candidates = feed_ordered(candidates)
    with store._write() as txn:
        writer = BatchWriter(txn, tables, store._timeline_tables)
        for index, message in candidates:
            results[index] = writer.apply(message)
        writer.finish()
        store._process(txn, {m.author for _i, m in candidates}, writer.invalidated, writer.stored)
    return results  # type: ignore[return-value]  # every slot is filled above
