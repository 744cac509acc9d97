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

from collections.abc import Collection, Iterable, Mapping

from tanglenode.protocol.errors import LocalProtocolError
from tanglenode.protocol.identity import message_id, tag_of
from tanglenode.protocol.limits import TIMEFRAME_CAP
from tanglenode.protocol.message import Named, TangleLink
from tanglenode.storage.feeds.invalidation import invalid_from
from tanglenode.storage.feeds.layout import Tables, feed_key, split_feed_key
from tanglenode.storage.feeds.processor import ProcessorTables, newest_heads, processed_seq

Candidate = tuple[bytes, Named] | None  # a feed and the entry naming it; None: nothing to name


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
    linked = [link.root for link in links.values() if link.root is not None]
    linked += [previous for link in links.values() for previous in link.previous or ()]
    ends = _ProcessedEnds(txn, tables, processor_tables, me)
    heads = (
        (feed, Named(seq, tag))
        for feed, seq, tag in newest_heads(txn, processor_tables, me, cap, named_before)
    )
    cited = map(ends.candidate, sorted(set(cites)))
    return choose_entries(me, cited, map(ends.candidate, linked), heads, cap)


class _ProcessedEnds:
    """A message's candidate for a place: its feed at our processed end, if that reaches it
    (none for our own feed or a message we do not hold); each feed's end read once."""

    def __init__(self, txn, tables: Tables, processor_tables: ProcessorTables, me: bytes) -> None:
        self._txn, self._me = txn, me
        self._tables, self._processor_tables = tables, processor_tables
        self._ends: dict[bytes, Named] = {}

    def candidate(self, msg_id: bytes) -> Candidate:
        position = self._tables.ids.position(self._txn, msg_id)
        if position is None:
            return None
        author, seq = split_feed_key(bytes(position))
        if author == self._me:
            return None
        end = self._ends.get(author)
        if end is None:
            end = self._ends[author] = self._end(author)
        return (author, end) if end.seq >= seq else None

    def _end(self, feed: bytes) -> Named:
        seq = _processed_end(self._txn, self._tables, self._processor_tables, feed)
        if not seq:
            return Named(0, b"")
        raw = self._tables.bodies.raw(self._txn, feed_key(feed, seq))
        return Named(seq, tag_of(message_id(raw)))  # type: ignore[arg-type]  # processed: held


def choose_entries(
    me: bytes,
    cited: Iterable[Candidate],
    linked: Iterable[Candidate],
    heads: Iterable[tuple[bytes, Named]],
    cap: int = TIMEFRAME_CAP,
) -> dict[bytes, Named]:
    """The rule of the module's docstring, on candidates however they were found: a node's
    from its store (`new_timeframe`), a trace replay's from the clocks it keeps
    (storage.clients.trace_replay), so both name the same heads the same way.

    `cited` gives, for each message the new one cites, its feed at our processed end (None
    for one we cannot name); `linked` the same for each tangle link's root, then each id
    in its `previous`; `heads` our heads, newest processed first. Each feed is named once,
    by the first candidate for it; ours never. `TooManyCited` when a cited message comes
    with every place taken. Iterables are read only as far as places remain.
    """
    named: dict[bytes, Named] = {}
    for candidate in cited:
        if len(named) >= cap:
            raise TooManyCited(f"an edit may cite the messages of at most {cap} feeds")
        _take(named, me, candidate)
    for candidate in linked:
        if len(named) >= cap:
            break
        _take(named, me, candidate)
    for candidate in heads:
        if len(named) >= cap:
            break
        _take(named, me, candidate)
    return named


def _take(named: dict[bytes, Named], me: bytes, candidate: Candidate) -> None:
    if candidate is not None and candidate[0] != me and candidate[0] not in named:
        named[candidate[0]] = candidate[1]


class TooManyCited(LocalProtocolError):
    """One message would cite the messages of more feeds than a timeframe may name."""


def _processed_end(txn, tables: Tables, processor_tables: ProcessorTables, feed: bytes) -> int:
    """How far `feed` is processed, never past the end of a feed proven invalid."""
    seq = processed_seq(txn, processor_tables, feed)
    boundary = invalid_from(txn, tables, feed)
    return seq if boundary is None else min(seq, boundary - 1)
