"""What a new message of ours names as its timeframe: the heads, capped (docs/PROCESSING.md).

Theory of operation
-------------------
A timeframe names messages the author processed, each by (feed, seq, tag).
Naming a message claims everything it had processed too, so only the
*heads* need naming: the processed messages no processed message names
(docs/PROCESSING.md, "What a timeframe names: the heads"), which the processor keeps (`proc-heads`,
storage.feeds.processor). Their closure is everything processed, and every
final rank is what the whole frontier would give: a head outranks all it
implies.

At most `TIMEFRAME_CAP` entries are named, chosen in this order, the first
met winning a place, each feed at its processed end:

1. the feed of each message the new message cites (a document edit's
   causes and targets): a document edit's weft is read through its
   timeframe (storage.documents.engine), so this keeps every atom it cites inside
   it; more cited feeds than the cap refuse the edit (`TooManyCited`)
   rather than sign one every node would set aside;
2. the feed of each tangle link's root, then of each `previous` id, that
   we processed: a tangle link then lies inside the timeframe's closure,
   and an edit's weft holds its document's root and all it builds on;
3. the heads, newest processed first.

A head left out stays a head and is named by a later message; naming
fewer claims less, which is always safe. Our own feed is never named (its
`prev` covers it). A feed proven invalid is named at most up to its end.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from tanglenode.protocol.errors import LocalProtocolError
from tanglenode.protocol.identity import message_id, tag_of
from tanglenode.protocol.limits import TIMEFRAME_CAP
from tanglenode.protocol.message import Named, TangleLink
from tanglenode.storage.feeds.invalidation import invalid_from
from tanglenode.storage.feeds.layout import Tables, feed_key, split_feed_key
from tanglenode.storage.feeds.processor import ProcessorTables, newest_heads, processed_seq


def new_timeframe(
    txn,
    tables: Tables,
    processor_tables: ProcessorTables,
    me: bytes,
    links: Mapping[str, TangleLink],
    cap: int = TIMEFRAME_CAP,
    named_before: Collection[bytes] = (),
    cites: Collection[bytes] = (),
) -> dict[bytes, Named]:
    """The timeframe of our next message with tangle `links` (see the module's rules).

    `named_before` holds the positions (feed + seq) that our messages signed since the
    last processing named: they are heads no more once those are processed.
    """
    named: dict[bytes, Named] = {}
    cited = sorted(set(cites))
    linked = [link.root for link in links.values() if link.root is not None]
    linked += [previous for link in links.values() for previous in link.previous or ()]
    for order, msg_id in enumerate([*cited, *linked]):
        if len(named) >= cap:
            if order < len(cited):
                raise TooManyCited(f"an edit may cite the messages of at most {cap} feeds")
            break
        position = txn.get(msg_id, db=tables.message_ids)
        if position is None:
            continue
        author, seq = split_feed_key(bytes(position))
        if author == me or author in named:
            continue
        end = _processed_end(txn, tables, processor_tables, author)
        if end >= seq:
            raw = tables.bodies.raw(txn, feed_key(author, end))
            named[author] = Named(end, tag_of(message_id(raw)))
    for feed, seq, tag in newest_heads(txn, processor_tables, me, cap, named_before):
        if len(named) >= cap:
            break
        if feed not in named:
            named[feed] = Named(seq, tag)
    return named


class TooManyCited(LocalProtocolError):
    """One message would cite the messages of more feeds than a timeframe may name."""


def _processed_end(txn, tables: Tables, processor_tables: ProcessorTables, feed: bytes) -> int:
    """How far `feed` is processed, never past the end of a feed proven invalid."""
    seq = processed_seq(txn, processor_tables, feed)
    boundary = invalid_from(txn, tables, feed)
    return seq if boundary is None else min(seq, boundary - 1)
