"""`tangled check`: re-verify every stored message and rebuild every index to compare.

One read transaction over the whole store. Each stored message (each
`message-at` row and the body it names, storage.feeds.bodies) is decoded
and its signature verified again, its content (when held) must match its
header's hash and size, and every body must be named by exactly
one row; from the messages alone we rebuild what the feed store's own
tables should hold (ids, feed chains, heads, proofs), then each derived
view checks itself against the same messages (`DerivedView.check`, in the
registry's order: storage/registry.py), the processed order's two tables
must agree (storage.feeds.processor_rows), and each disagreement is reported
as one line. The parsed messages and rebuilt sets live in
memory: fine for an offline check of a node's store, proportional to its size.
"""

from __future__ import annotations

import struct
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import lmdb
import msgpack

from tanglenode.protocol.errors import InvalidMessage
from tanglenode.protocol.evidence import InvalidProof, check_proof
from tanglenode.protocol.identity import feed_text, message_text
from tanglenode.protocol.limits import UNLIMITED
from tanglenode.protocol.message import Message, decode_message
from tanglenode.storage.feeds.bodies import ARRIVAL
from tanglenode.storage.feeds.derived import DerivedView
from tanglenode.storage.feeds.layout import U64, Tables, split_feed_key, split_head_value
from tanglenode.storage.feeds.message_ids import split_row
from tanglenode.storage.feeds.processor_rows import split_log_value

if TYPE_CHECKING:
    from tanglenode.storage.context import StoreContext
    from tanglenode.storage.feeds.processor import ProcessorTables


@dataclass
class CheckReport:
    messages: int = 0
    feeds: int = 0
    evidence: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _verified(raw: bytes, what: str, report: CheckReport) -> Message | None:
    """The message `raw` holds, or None (a problem reported) if it fails to decode. Content
    that does not match its header is a problem too, the header still checked: the store
    keeps only content that matched (a reader drops it quietly, as it would a relay's)."""
    try:
        message = decode_message(bytes(raw), UNLIMITED)
    except InvalidMessage as error:
        report.problems.append(f"{what}: {error}")
        return None
    if message.content_refused is not None:
        report.problems.append(
            f"{what}: its content does not match its header's hash and size "
            f"({message.content_refused}): the stored content is damaged"
        )
    return message


def check_store(ctx: StoreContext, views: Sequence[DerivedView]) -> CheckReport:
    """The report; LMDB's own errors (a page that fails to read, MDB_CORRUPTED) are findings."""
    report = CheckReport()
    try:
        _check_all(ctx, views, report)
    except lmdb.Error as error:  # the scan cannot go on past a damaged page
        report.problems.append(f"the store is damaged, the check stopped: {error}")
    except (ValueError, LookupError, struct.error) as error:  # a row of impossible shape
        report.problems.append(f"the store holds a malformed row, the check stopped: {error}")
    return report


def _check_all(ctx: StoreContext, views: Sequence[DerivedView], report: CheckReport) -> None:
    tables = ctx.tables
    with ctx.read() as txn:
        by_position: dict[tuple[bytes, int], Message] = {}
        named_bodies: set[bytes] = set()
        for key, arrival in tables.bodies.positions(txn):
            report.messages += 1
            author, seq = split_feed_key(key)
            if arrival in named_bodies:
                report.problems.append(
                    f"message {feed_text(author)}:{seq} shares {_arrival(arrival)} with another"
                )
                continue
            named_bodies.add(arrival)
            value = txn.get(arrival, db=tables.messages)
            if value is None:
                missing = _arrival(arrival)
                report.problems.append(
                    f"message {feed_text(author)}:{seq} has no body ({missing} is missing)"
                )
                continue
            try:
                raw = tables.bodies.rebuild(txn, key, value)
            except (ValueError, KeyError, IndexError, struct.error) as error:
                report.problems.append(f"message {feed_text(author)}:{seq} is unreadable: {error}")
                continue
            message = _verified(raw, f"message {feed_text(author)}:{seq}", report)
            if message is None:
                continue
            if (message.author, message.seq) != (author, seq):
                report.problems.append(f"message {feed_text(author)}:{seq} is stored out of place")
                continue
            by_position[(author, seq)] = message
        _check_bodies(txn, tables, named_bodies, report)
        _check_ids(txn, tables, by_position, report)
        _check_feeds(txn, tables, by_position, report)
        _check_evidence(txn, tables, by_position, report)
        _check_processed(txn, ctx.processor_tables, report)
        for view in views:
            report.problems.extend(view.check(txn, by_position))


def _arrival(key: bytes) -> str:
    return f"body {ARRIVAL.unpack(key)[0]}" if len(key) == ARRIVAL.size else f"body {key.hex()}"


def _check_bodies(txn, tables: Tables, named: set[bytes], report: CheckReport) -> None:
    """Every body in `messages` is named by a `message-at` row (storage.feeds.bodies)."""
    for arrival in txn.cursor(db=tables.messages).iternext(values=False):
        if bytes(arrival) not in named:
            report.problems.append(f"{_arrival(bytes(arrival))} is in no message-at row")


def _check_ids(txn, tables: Tables, by_position, report: CheckReport) -> None:
    for msg_id, row in txn.cursor(db=tables.message_ids):
        msg_id = bytes(msg_id)
        try:
            where, _number = split_row(row)
        except ValueError:
            report.problems.append(f"message-ids row {message_text(msg_id)} is malformed")
            continue
        if where is None:
            continue  # a number alone: the timelines' check reads it (ref_numbers)
        try:
            position = tables.ids.position_of(txn, row)
        except KeyError:
            report.problems.append(f"message-ids row {message_text(msg_id)} names no feed")
            continue
        message = by_position.get(split_feed_key(position))
        if message is None or message.id != msg_id:
            report.problems.append(f"message-ids row {message_text(msg_id)} is wrong")
    for message in by_position.values():
        if not tables.ids.holds(txn, message.id):
            report.problems.append(
                f"message {message_text(message.id)} is missing from message-ids"
            )


def _check_feeds(txn, tables: Tables, by_position, report: CheckReport) -> None:
    seqs_of: dict[bytes, list[int]] = defaultdict(list)
    for author, seq in by_position:  # in key order: author, then seq
        seqs_of[author].append(seq)
    heads = {bytes(a): split_head_value(v) for a, v in txn.cursor(db=tables.heads)}
    report.feeds = len(heads)
    for author, seqs in seqs_of.items():
        if seqs != list(range(1, len(seqs) + 1)):
            report.problems.append(f"feed {feed_text(author)} has gaps in its seqs")
        last = by_position[(author, seqs[-1])]
        if heads.get(author) != (last.seq, last.id):
            report.problems.append(f"heads row of {feed_text(author)} is not its last message")
        for seq in seqs[1:]:
            before = by_position.get((author, seq - 1))
            if before and by_position[(author, seq)].prev != before.id:
                report.problems.append(f"{feed_text(author)}:{seq} does not chain to seq {seq - 1}")
    for author in heads.keys() - seqs_of.keys():
        report.problems.append(f"heads row of {feed_text(author)} has no messages")


def _check_evidence(txn, tables: Tables, by_position, report: CheckReport) -> None:
    """Every invalid feed names a kept proof that cuts it there and holds nothing past it."""
    held: set[bytes] = set()
    proofs: dict[bytes, dict[bytes, int] | None] = {}
    for proof_id, raw in txn.cursor(db=tables.proofs):
        kind, ids = msgpack.unpackb(raw)
        held.update(ids)
        messages = []
        for msg_id in ids:
            body = txn.get(msg_id, db=tables.evidence)
            message = body and _verified(body, f"evidence {message_text(msg_id)}", report)
            if not message or message.id != msg_id:
                report.problems.append(f"evidence {message_text(msg_id)} is missing or wrong")
                break
            messages.append(message)
        else:
            try:
                proof = check_proof(messages)
            except InvalidProof as error:
                report.problems.append(f"proof {message_text(bytes(proof_id))}: {error}")
                continue
            if proof.id != proof_id or proof.kind != kind:
                report.problems.append(f"proof {message_text(bytes(proof_id))} has another id")
                continue
            proofs[bytes(proof_id)] = proof.invalid_from()
    named: set[bytes] = set()
    for author, value in txn.cursor(db=tables.invalid):
        author, seq, proof_id = bytes(author), U64.unpack(value[:8])[0], bytes(value[8:])
        named.add(proof_id)
        boundaries = proofs.get(proof_id)
        if boundaries is None or boundaries.get(author) != seq:
            report.problems.append(f"feed {feed_text(author)} is invalid without its proof")
        if any((author, later) in by_position for later in (seq, seq + 1)):
            report.problems.append(f"feed {feed_text(author)} holds messages past its boundary")
    for proof_id in proofs.keys() - named:
        report.problems.append(f"proof {message_text(proof_id)} names no invalid feed")
    for key in txn.cursor(db=tables.evidence).iternext(values=False):
        report.evidence += 1
        if bytes(key) not in held:
            report.problems.append(f"evidence {message_text(bytes(key))} is in no proof")


def _check_processed(txn, tables: ProcessorTables, report: CheckReport) -> None:
    """`proc-log` and `proc-position` (storage.feeds.processor_rows) say the same order:
    each processed message has one index, named both ways, at or below its feed's
    processed frontier."""
    rows = tables.rows(txn)
    logged: dict[tuple[bytes, int], int] = {}
    for key, value in txn.cursor(db=tables.log):
        index = U64.unpack(key)[0]
        if not value:  # a blocked feed's message, purged
            continue
        try:
            number, seq = split_log_value(value)
            feed = rows.numbers.key(number)
        except (ValueError, KeyError) as error:
            report.problems.append(f"proc-log row {index} is unreadable: {error}")
            continue
        if (feed, seq) in logged:
            report.problems.append(
                f"proc-log rows {logged[(feed, seq)]} and {index} both name {feed_text(feed)}:{seq}"
            )
            continue
        logged[(feed, seq)] = index
    frontier = {bytes(k): U64.unpack(v)[0] for k, v in txn.cursor(db=tables.frontier)}
    for position, raw in rows.positions.entries(txn):
        feed, seq = split_feed_key(position)
        index = U64.unpack(raw)[0]
        if logged.pop((feed, seq), None) != index:
            report.problems.append(
                f"proc-position of {feed_text(feed)}:{seq} names index {index}, "
                "which proc-log does not give it"
            )
        if seq > frontier.get(feed, 0):
            report.problems.append(
                f"{feed_text(feed)}:{seq} has a processed index past its feed's processed frontier"
            )
    for (feed, seq), index in sorted(logged.items(), key=lambda item: item[1]):
        report.problems.append(
            f"proc-log row {index} names {feed_text(feed)}:{seq}, which has no proc-position"
        )
