"""`tangled export`: a store as a Parquet archive, for the Spark pipeline.

The archive's schema: docs/PIPELINE.md, "The archive"; its format,
`ARCHIVE_FORMAT` (pipeline/schema.py), goes into every Parquet file's schema
metadata and into `archive.json`.

The store is read in short read transactions, a chunk at a time, so a
running node keeps writing meanwhile (LMDB readers never block its writer);
each chunk becomes one Parquet file, in row groups of at most about
`ROW_GROUP_BYTES` of headers and contents (`tangled import` bounds what one
row group may decode to: docs/BACKUP.md, "Restoring"). A message the store
holds without its content (erased, or never received) is written as its
header with a null `content`. Messages come first, then fork
evidence, then every timeline's order, so an archive can be audited against
the batch linearization. Several nodes' archives combine by reading their
`messages/` folders together: the pipeline drops duplicate ids.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tanglenode.pipeline.schema import ARCHIVE_FORMAT, MESSAGE_SCHEMA, TIMELINE_SCHEMA
from tanglenode.protocol.identity import feed_text
from tanglenode.protocol.message import Message
from tanglenode.storage.feeds.stored_form import parse_stored
from tanglenode.storage.store import FeedStore

CHUNK = 20_000
ROW_GROUP_BYTES = 16 * 2**20  # a row group's `header` and `content` at most (or one row more)


def message_row(message: Message, evidence: bool = False) -> dict:
    return {
        "id": message.id,
        "author": message.author,
        "seq": message.seq,
        "prev": message.prev,
        "timestamp": message.timestamp,
        "timeframe": [
            {"feed": feed, "seq": entry.seq, "tag": entry.tag}
            for feed, entry in sorted(message.named().items())
        ],
        "tangles": [
            {"name": name, "root": link.root, "previous": list(link.previous or [])}
            for name, link in sorted(message.tangles.items())
        ],
        "content_hash": message.content_hash,
        "content_size": message.content_size,
        "signature": message.signature,
        "header": message.header,
        "content": message.content_bytes,  # None where the store holds the header alone
        "evidence": evidence,
    }


def _chunks(rows: Iterator[dict], size: int) -> Iterator[list[dict]]:
    chunk: list[dict] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _row_group_rows(chunk: list[dict]) -> int:
    """Rows a row group of `chunk` holds so its `header` and `content` stay near
    `ROW_GROUP_BYTES`: `tangled import` refuses one that decodes to more than its bound
    (docs/BACKUP.md)."""
    largest = max(len(row["header"]) + len(row["content"] or b"") for row in chunk)
    return max(1, ROW_GROUP_BYTES // largest)


def export(
    store: FeedStore,
    out: Path,
    progress: Callable[[int], None] = lambda n: None,
    feed: bytes | None = None,
) -> dict[str, int]:
    """Write the archive; `progress(n)` is told of every n messages written.

    `archive.json` names the node's feed: `feed`, else the store's keypair's; it is left
    out when neither is known (a store exported without its secret key).
    """
    (out / "messages").mkdir(parents=True, exist_ok=True)
    (out / "timelines").mkdir(parents=True, exist_ok=True)
    counts = {"messages": 0, "evidence": 0, "timeline_rows": 0}
    rows = (message_row(parse_stored(raw)) for raw in store.feeds.iter_raw(CHUNK))
    evidence = (message_row(message, evidence=True) for message in store.feeds.evidence_messages())
    for number, chunk in enumerate(_chunks(_chain(rows, evidence), CHUNK)):
        table = pa.Table.from_pylist(chunk, schema=MESSAGE_SCHEMA)
        pq.write_table(
            table,
            out / "messages" / f"part-{number:05d}.parquet",
            row_group_size=_row_group_rows(chunk),
        )
        for row in chunk:
            counts["evidence" if row["evidence"] else "messages"] += 1
        progress(len(chunk))
    timeline_rows = _timeline_rows(store)
    for number, chunk in enumerate(_chunks(timeline_rows, CHUNK * 5)):
        table = pa.Table.from_pylist(chunk, schema=TIMELINE_SCHEMA)
        pq.write_table(table, out / "timelines" / f"part-{number:05d}.parquet")
        counts["timeline_rows"] += len(chunk)
    about: dict[str, object] = {
        "format": ARCHIVE_FORMAT,
        "exported_at_ms": int(time.time() * 1000),
        **counts,
    }
    if feed is None and store.keypair is not None:
        feed = store.keypair.public
    if feed is not None:
        about["feed"] = feed_text(feed)
    (out / "archive.json").write_text(json.dumps(about, indent=1))
    return counts


def _chain(*iterators):
    for iterator in iterators:
        yield from iterator


def _timeline_rows(store: FeedStore) -> Iterator[dict]:
    for name, root, tangle in store.timelines.held():
        label = "spacetime" if tangle is None else f"tangle:{tangle}"
        for position, (rank, msg_id) in enumerate(store.timelines.timeline(name)):
            yield {
                "timeline": label,
                "root": root,
                "position": position,
                "rank": rank,
                "id": msg_id,
            }
