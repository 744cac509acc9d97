"""What to send a peer next: its wanted feeds' messages, in our processed order.

Theory of operation
-------------------
A peer subscribes to feeds, each from a seq on. Sending feed by feed would
hand it messages whose timeframes name messages of other feeds it does not
have yet: every such reference is provisional in its spacetime timeline and
costs a correction (a wave of raised ranks) when the message arrives. So
the sender walks its own processed order (`proc-log`), which is causal, and
takes, in that order, each message that is the next one a subscription
needs. The walk remembers where it stopped; a new subscription moves the
start back to the first of its messages (found through `proc-position`).
Messages stored but not processed (a stalled feed) come last, feed by feed,
once the walk has reached the end of the log.

These functions read inside a transaction their caller holds; the public
calls are `store.feeds.replication_start` and `store.feeds.next_batch`, one
read transaction each.
"""

from __future__ import annotations

from dataclasses import dataclass

from tanglenode.storage.feeds.layout import feed_key
from tanglenode.storage.feeds.processor import (
    ProcessorTables,
    processed_count,
    processed_entries,
    processed_index,
)


@dataclass(frozen=True, slots=True)
class Batch:
    raws: list[bytes]
    sent: dict[bytes, int]  # feed -> the highest seq now sent
    resume: int  # processed index where the next walk starts


def start_of(txn, tables: ProcessorTables, wants: dict[bytes, int]) -> int:
    """The first processed index holding a message some subscription still needs."""
    found = [processed_index(txn, tables, feed, seq + 1) for feed, seq in wants.items()]
    known = [index for index in found if index is not None]
    return min(known) if known else processed_count(txn, tables)


def next_batch(
    txn,
    tables: ProcessorTables,
    messages_db,
    wants: dict[bytes, int],
    resume: int,
    limit: int,
    max_bytes: int,
) -> Batch:
    """Up to `limit` messages (and `max_bytes`) that `wants` (feed -> seq sent) lacks."""
    sent = dict(wants)
    raws: list[bytes] = []
    budget = max_bytes
    position = resume
    walked_to_end = True
    for index, feed, seq in processed_entries(txn, tables, resume):
        position = index + 1
        if feed is None:
            continue  # a blocked feed's message, purged (storage.feeds.processor)
        if sent.get(feed, -1) + 1 != seq:
            continue  # not subscribed, or already sent
        raw = messages_db.raw(txn, feed_key(feed, seq))  # a storage.feeds.bodies.Bodies
        if raw is None:
            continue  # processed, then cut away with its invalid feed
        if len(raws) >= limit or len(raw) + 8 > budget:
            position -= 1  # this one opens the next batch
            walked_to_end = False
            break
        raws.append(raw)
        budget -= len(raw) + 8
        sent[feed] = seq
    if walked_to_end:
        _unprocessed(txn, messages_db, sent, raws, limit, budget)
    return Batch(raws, {f: s for f, s in sent.items() if s != wants[f]}, position)


def _unprocessed(txn, messages_db, sent, raws, limit, budget) -> None:
    """Stored messages the processed order does not hold yet, feed by feed."""
    for feed in sorted(sent):
        while len(raws) < limit:
            raw = messages_db.raw(txn, feed_key(feed, sent[feed] + 1))
            if raw is None or len(raw) + 8 > budget:
                break
            raws.append(raw)
            budget -= len(raw) + 8
            sent[feed] += 1
