"""Backups as bundles, and restoring from bundles or Parquet archives (docs/BACKUP.md).

A bundle is `MAGIC` (4 bytes: "TNB" and the format, 2), then the store's
messages as signed bytes, each preceded by its length as 4 bytes
big-endian, nothing else: every accepted message, feed by
feed in seq order (`store.feeds.iter_raw`), then every message held as fork
evidence (`store.feeds.evidence_messages`). Replaying a bundle in that order
reproduces the feeds and the evidence: each feed's chain arrives in order,
and an evidence message arrives after the message it conflicts with.

Bundles concatenate: `cat a.bundle b.bundle` is one bundle, whose records
are a's then b's. Where a record's length prefix would be, the reader meets
b's header and goes on with b's records, numbered on from a's (a header is
no record). The two cannot be confused: a header's four bytes read as a
length are over 1.3 GiB (`HEADER_MARK` is "TNB", 0x544E42..), beyond any
message size limit (the config allows at most 1 MiB), so no length ever
starts with them. Replaying a concatenation is replaying each part in turn:
each part's feeds arrive in seq order and its evidence after what it
conflicts with, and a message the first part already gave is a duplicate.

Reading trusts nothing: a bundle that does not start with `MAGIC` is
refused at once (one written before format 2 starts with a length: its
messages carry timeframes of bare seqs, which this build refuses), and a
header of another format, first or later in a concatenation, is refused
as `OtherFormat` (a `BadRecord` naming the format) where it stands: a
bundle of format 3 holds messages this build cannot judge, so nothing of
it is read as format 2. (A format-1 bundle appended to a format-2 one has
no header to tell it by: its records read as records, and `ingest`
rejects each as `unknown-version`.) A length of 0 or over the message size
limit, a record cut short, a length prefix cut short each raise
`BadRecord` naming the record (1-based) — the reader never allocates more
than one message's limit. An archive's Parquet files are checked a row group at a time from
their footers before anything is decoded (`read_archive`): a row group whose
`header` and `content` columns would decode to more than its rows can hold, or
to more than `ROW_GROUP_BYTES`, is a `BadRecord` too; each row is the message's
wire form `[header, content | nil]` (protocol/wire.py). What the records hold is validated
by `store.writes.ingest` like any message from a peer: garbage there is a
rejected message with its reason.
`import_messages` ingests in batches, counting each outcome; a `BadRecord`
stops it after every record before the bad one was ingested (ingest is
idempotent, so importing again after a fix is safe).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import msgpack

from tanglenode.protocol.errors import RemoteProtocolError
from tanglenode.protocol.framing import LENGTH_PREFIX
from tanglenode.protocol.wire import header_of, wire
from tanglenode.storage.feeds.ingest import Outcome
from tanglenode.storage.feeds.ingest_pipeline import Worker, ingest_batches
from tanglenode.storage.store import FeedStore

# Messages per write transaction of an import, and the bytes of their wire forms at most: a
# batch dirties each random-keyed table's leaves once (ids are hashes), so at 300K held,
# 5,000 a batch wrote 45 % fewer pages than 1,000 (docs/BENCHMARKS.md, issue 45).
BATCH = 5000
BATCH_BYTES = 16 << 20
HEADER_MARK = b"TNB"  # a bundle's header: these three bytes, then its format's number
FORMAT = 3  # the format of the messages this build writes and reads
MAGIC = HEADER_MARK + bytes([FORMAT])  # a bundle of format 3 messages; format 1 had no header


class BadRecord(RemoteProtocolError):
    """A bundle or archive record cannot be read; `record` is its 1-based number."""

    def __init__(self, record: int, detail: str) -> None:
        super().__init__(f"record {record}: {detail}")
        self.record = record
        self.detail = detail


class OtherFormat(BadRecord):
    """A bundle's header names a format other than `FORMAT`: the bundle at the start of the
    stream, or one appended to it (`record` is the number the next record would have)."""

    def __init__(self, record: int, format: int) -> None:
        super().__init__(
            record,
            f"a bundle of format {format} begins here (header {HEADER_MARK.decode()} "
            f"{format}); this build reads format {FORMAT} only",
        )
        self.format = format


# -- writing ------------------------------------------------------------------


def write_bundle(
    store: FeedStore, out: BinaryIO, progress: Callable[[int], None] = lambda n: None
) -> dict[str, int]:
    """Write every accepted message, then all fork evidence; returns the counts."""
    counts = {"messages": 0, "evidence": 0, "bytes": len(MAGIC)}
    out.write(MAGIC)
    for raw in store.feeds.iter_raw():
        counts["bytes"] += _write_record(out, raw)
        counts["messages"] += 1
        progress(1)
    for message in store.feeds.evidence_messages():
        counts["bytes"] += _write_record(out, message.raw)
        counts["evidence"] += 1
        progress(1)
    return counts


def _write_record(out: BinaryIO, raw: bytes) -> int:
    out.write(LENGTH_PREFIX.pack(len(raw)))
    out.write(raw)
    return LENGTH_PREFIX.size + len(raw)


# -- reading ------------------------------------------------------------------


def _read_up_to(source: BinaryIO, size: int) -> bytes:
    """Up to `size` bytes; fewer only at the end of the stream (pipes return short reads)."""
    chunks, missing = [], size
    while missing:
        chunk = source.read(missing)
        if not chunk:
            break
        chunks.append(chunk)
        missing -= len(chunk)
    return b"".join(chunks)


def read_bundle(source: BinaryIO, max_bytes: int) -> Iterator[bytes]:
    """The records of a bundle, or of bundles concatenated, each at most `max_bytes`;
    `BadRecord` at the first bad one (`OtherFormat` at a header of another format)."""
    head = _read_up_to(source, len(MAGIC))
    if not head:
        return
    if head[: len(HEADER_MARK)] == HEADER_MARK and len(head) == len(MAGIC):
        _check_header(head, 1)
    elif head != MAGIC:
        older = len(head) == LENGTH_PREFIX.size and 0 < LENGTH_PREFIX.unpack(head)[0] <= max_bytes
        raise BadRecord(
            1,
            "a bundle of format 1 (written before timeframes named messages by tag): this "
            "build refuses its messages"
            if older
            else "not a bundle: it does not start with a bundle's header",
        )
    record = 1  # the number of the next record
    while True:
        prefix = _read_up_to(source, LENGTH_PREFIX.size)
        if not prefix:
            return
        if len(prefix) < LENGTH_PREFIX.size:
            raise BadRecord(record, f"the length prefix is cut short ({len(prefix)} of 4 bytes)")
        if prefix[: len(HEADER_MARK)] == HEADER_MARK:  # the next bundle of a concatenation
            _check_header(prefix, record)
            continue
        (length,) = LENGTH_PREFIX.unpack(prefix)
        if length == 0:
            raise BadRecord(record, "length 0: not a message")
        if length > max_bytes:
            raise BadRecord(
                record,
                f"length {length} is over the message size limit ({max_bytes} bytes): "
                "not a bundle, or a damaged one",
            )
        body = _read_up_to(source, length)
        if len(body) < length:
            raise BadRecord(record, f"cut short: {len(body)} of {length} bytes")
        yield body
        record += 1


def _check_header(header: bytes, record: int) -> None:
    """`OtherFormat` unless `header` (`HEADER_MARK` and a format) is this build's `MAGIC`."""
    if header != MAGIC:
        raise OtherFormat(record, header[len(HEADER_MARK)])


def archive_parts(archive: Path) -> list[Path]:
    """The Parquet files of an archive's messages, in order; ValueError if it is none."""
    if not (archive / "messages").is_dir():
        raise ValueError(f"{archive} is not a `tangled export` archive (no messages/ folder)")
    return sorted((archive / "messages").glob("part-*.parquet"))


ARCHIVE_BATCH = 64  # rows decoded at once from an archive: at most this many messages' bytes
ROW_GROUP_BYTES = 256 * 2**20  # the most one row group's `header` and `content` may decode to
ARCHIVE_COLUMNS = ("header", "content")  # an archive's message, in its wire form
VALUE_OVERHEAD = 64  # per value on top of its bytes: length prefix, levels, page headers


def read_archive(parts: list[Path], max_bytes: int) -> Iterator[bytes]:
    """An archive's messages (accepted ones first, then evidence) in their wire form, from
    its `header` and `content` columns (a null content: the header alone), each at most
    `max_bytes`; `BadRecord` at the first bad one.

    A row group is checked against its footer before any of it is decoded
    (`_check_row_group`), then read `ARCHIVE_BATCH` rows at a time, so what is decoded at
    once stays within `ARCHIVE_BATCH * max_bytes` however small the file is on disk.
    """
    import pyarrow as pa  # only for archives
    import pyarrow.parquet as pq

    record = 0
    for part in parts:
        try:
            file = pq.ParquetFile(part)
            schema = file.schema_arrow
            for name in ARCHIVE_COLUMNS:
                column = schema.field(name) if name in schema.names else None
                if column is None or not pa.types.is_binary(column.type):
                    older = (
                        " (its `raw` column: an archive of format 2, whose messages this "
                        "build refuses)"
                        if "raw" in schema.names
                        else ""
                    )
                    raise BadRecord(record + 1, f"{part} has no binary `{name}` column{older}")
            for group in range(file.metadata.num_row_groups):
                _check_row_group(part, file.metadata.row_group(group), group, record, max_bytes)
                batches = file.iter_batches(
                    batch_size=ARCHIVE_BATCH, row_groups=[group], columns=list(ARCHIVE_COLUMNS)
                )
                for batch in batches:
                    rows = zip(
                        batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True
                    )
                    for header, content in rows:
                        record += 1
                        if header is None:
                            raise BadRecord(record, f"{part}: the row has no `header` bytes")
                        raw = wire(header, content)
                        if len(raw) > max_bytes:
                            raise BadRecord(
                                record,
                                f"{part}: {len(raw)} bytes, over the message size limit "
                                f"({max_bytes} bytes)",
                            )
                        yield raw
        except (pa.ArrowException, OSError) as error:
            raise BadRecord(record + 1, f"{part} is not a readable Parquet file: {error}") from None


def _check_row_group(part: Path, group, number: int, before: int, max_bytes: int) -> None:
    """BadRecord (naming the row group's first record) if its `header` and `content`
    columns, as the footer gives them, decode to more than its rows can hold within the
    message size limit, or to more than `ROW_GROUP_BYTES`: refused before a byte of them
    is decompressed."""
    rows = group.num_rows
    decoded = sum(
        group.column(index).total_uncompressed_size
        for index in range(group.num_columns)
        if group.column(index).path_in_schema in ARCHIVE_COLUMNS
    )
    most = min(rows * (max_bytes + len(ARCHIVE_COLUMNS) * VALUE_OVERHEAD) + 4096, ROW_GROUP_BYTES)
    if decoded > most or rows < 0 or decoded < 0:
        raise BadRecord(
            before + 1,
            f"{part}: row group {number} ({rows} rows) decodes to {decoded} bytes of messages, "
            f"over the {most} its rows can hold (messages of at most {max_bytes} bytes, "
            f"{ROW_GROUP_BYTES} bytes a row group)",
        )


def archive_rows(parts: list[Path]) -> int | None:
    """How many rows the parts hold, from their footers; None if one cannot be read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return sum(pq.ParquetFile(part).metadata.num_rows for part in parts)
    except (pa.ArrowException, OSError):
        return None


# -- importing ----------------------------------------------------------------


def _position(raw: bytes) -> tuple[bytes, int] | None:
    """(author, seq) read from the signed header without validating; None if not there."""
    try:
        fields = msgpack.unpackb(header_of(raw), raw=True, strict_map_key=False)
        author, seq = fields[1], fields[2]
    except Exception:  # anything at all: garbage is for `ingest` to reject, with its reason
        return None
    if isinstance(author, bytes) and type(seq) is int:  # msgpack's true is no seq
        return author, seq
    return None


@dataclass
class ImportSummary:
    records: int = 0
    outcomes: Counter = field(default_factory=Counter)
    rejected: Counter = field(default_factory=Counter)

    def as_dict(self) -> dict:
        return {
            "records": self.records,
            "accepted": self.outcomes[Outcome.ACCEPTED],
            "duplicate": self.outcomes[Outcome.DUPLICATE],
            "fork": self.outcomes[Outcome.FORK],
            "rejected": dict(sorted(self.rejected.items())),
        }

    def line(self) -> str:
        counts = self.as_dict()
        rejected = sum(self.rejected.values())
        text = (
            f"imported {self.records} records: {counts['accepted']} accepted, "
            f"{counts['duplicate']} duplicate, {counts['fork']} fork evidence, {rejected} rejected"
        )
        if rejected:
            text += " (" + ", ".join(f"{r}: {n}" for r, n in sorted(self.rejected.items())) + ")"
        return text


def import_messages(
    store: FeedStore,
    records: Iterable[bytes],
    summary: ImportSummary,
    progress: Callable[[bytes], None] = lambda raw: None,
    batch: int = BATCH,
    *,
    worker: Worker = Worker.PROCESS,
    committed: Callable[[ImportSummary], None] = lambda summary: None,
    on_fallback: Callable[[], None] = lambda: None,
) -> ImportSummary:
    """Ingest `records` in batches into `summary`; a BadRecord propagates once the records
    before it are ingested. `committed(summary)` follows each batch's transaction.

    A batch holds at most `batch` messages and `BATCH_BYTES` of them. It ends before a
    message whose author already has one at the same or a higher seq
    in it: `ingest` applies a batch in seq order per feed, so fork evidence sharing a batch
    with the later messages of its feed would mark the feed forked before they are stored
    and get them refused, which they were not when the store first took them.

    Batch N+1 is verified by `worker` (a second process by default) while batch N is
    stored (`storage.feeds.ingest_pipeline`); the outcome is the same whatever the worker
    (`on_fallback()` once if it dies and the rest is verified in-line, on one core).
    """
    stopped: list[BadRecord] = []
    batches = _batches(records, batch, progress, stopped)
    for results in ingest_batches(store, batches, worker=worker, on_fallback=on_fallback):
        for result in results:
            summary.outcomes[result.outcome] += 1
            if result.outcome is Outcome.REJECTED:
                summary.rejected[str(result.reason)] += 1
        summary.records += len(results)
        committed(summary)
    if stopped:
        raise stopped[0]
    return summary


def _batches(
    records: Iterable[bytes],
    batch: int,
    progress: Callable[[bytes], None],
    stopped: list[BadRecord],
) -> Iterator[list[bytes]]:
    """`records` cut into batches (see `import_messages`); a BadRecord ends them, kept in
    `stopped` after the records before it were yielded."""
    pending: list[bytes] = []
    highest: dict[bytes, int] = {}
    size = 0
    try:
        for raw in records:
            position = _position(raw)
            if position is not None:
                author, seq = position
                if seq <= highest.get(author, 0) and pending:
                    yield pending
                    pending, highest, size = [], {}, 0
                highest[author] = max(seq, highest.get(author, 0))
            pending.append(raw)
            size += len(raw)
            progress(raw)
            if len(pending) >= batch or size >= BATCH_BYTES:
                yield pending
                pending, highest, size = [], {}, 0
    except BadRecord as error:
        stopped.append(error)
    if pending:
        yield pending
