"""The causal processor (docs/PROCESSING.md): every node processes all messages in one agreed order.

Theory of operation
-------------------
A stored message is *ready* when its feed's previous message is processed
and every message its timeframe names is processed *with the tag named*:
the entry (feed, seq, tag) is met when the message processed at (feed, seq)
has an id that starts with the tag. Among ready messages the lowest seq
goes first, then the lowest feed key (bytes). Only the next unprocessed
message of each feed can be a candidate, so the state is small:

    proc-frontier  feed -> processed seq (u64)             the processed frontier
    proc-log       index (u64) -> feed number (u32) + seq   the processed order, from 0
                   (u32, or u64 from 2**32)                (empty: a blocked feed's, purged)
    proc-position  feed + first seq of a run (u64)         the same, by message, in runs of
                   -> indexes (u64 each)                   64 seqs (storage.feeds.processor_rows)
    proc-wait      feed + seq + waiting feed -> ""         candidate of `waiting feed` needs
                                                           (feed, seq) processed first
    proc-waiting   feed -> needed feed + seq [+ tag]       the same, by the waiting feed
                                                           (with the tag: a suspect wait)
    proc-suspects  feed + seq + tag + waiting feed -> ""   a suspected fork: the candidate
                                                           of `waiting feed` names (feed,
                                                           seq) with a tag other than the
                                                           processed message's
    proc-heads     index (u64) -> feed + seq + tag          the heads: processed messages no
    proc-head-at   feed -> index (u64)                     processed message names (at most
                                                           one per feed), by when processed
    proc-witness-wait  feed + seq + tag + waiting feed -> ""  the candidate of `waiting feed`
                                                           waits for the witness of that
                                                           entry (its `waiting` value is the
                                                           entry and "w")

**Feeds not carried.** An entry naming a feed the node does not carry is
met once what its witness implies is (storage/feeds/witnesses.py): the
walk through witnesses adds the messages of carried feeds they name to the
candidate's checks, which wait for them like any entry; a witness not held
makes the candidate wait for it. An added entry whose (feed, seq) holds a
message with another tag is met, never a suspected fork: the stranger
named it, not the candidate's author, and whether the message came before
or after the witness must not decide anything.

**Suspected forks.** When the message processed at (feed, seq) has another
tag than an entry names, the feed signed two messages at that seq (or the
naming author invented one). The candidate then waits for a proof: only a
fork proof that cuts the feed at or below seq (`forget`) wakes it, and
until then `proc-suspects` records the suspicion, which `status`, `tangled
forks` and /metrics report, and gossip asks peers for the missing branch.

**Heads.** Processing a message makes it its feed's head and takes the head
of every feed whose head it names (an entry naming an older message of a
feed names nothing that is still a head). The heads are what a new message
of ours names (docs/PROCESSING.md, "What a timeframe names: the heads"); they are
kept in processed order, so the newest are found without a scan.

Ready candidates live in a heap for the length of one transaction: `advance`
runs until none is left, so none outlives it. Within a transaction the
`wait` rows of a needed feed move into a heap in memory when first touched
(and `waiting` into a dict), and `advance` writes back what still waits when
it ends: a batch's messages mostly wait on messages of the same batch, so
most waits never reach LMDB. The frontier rows are written once per feed.

A candidate is checked once when it appears (its feed got its next message,
or its previous one was processed) and again only when the one entry it
waits on is processed; so processing costs the candidate's timeframe size
per message, never a scan of all feeds. All of it happens in the write
transaction that stored the messages, so the processed order commits with
them, and a crash leaves both or neither.

A candidate waiting on a message the store does not have is *stalled*: the
report names the waiting feed and seq and the (feed, seq) it waits for.

A feed found invalid from seq b (storage.feeds.invalidation) will never have a
message at b or above, yet honest timeframes may name one (written before
the proof was known, on either branch of the fork). Such a need is met once
the feed is processed up to b - 1, its valid end, whatever its tag:
otherwise one liar could stall every honest feed that ever heard of it.
`forget` drops the invalid feed's own candidate, wakes whoever waited
beyond its end (suspect waits included), and moves its head back to its
last valid message if the cut reaches it; `restore_heads` makes the feeds
that only the removed messages named heads again. A head's seq is never
past its feed's valid end, so naming it unheads it.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import lmdb

from tanglenode.protocol.identity import TAG_BYTES, message_id, tag_of
from tanglenode.protocol.message import Message
from tanglenode.storage.feeds.layout import EMPTY, U64, Bodies, feed_key, split_feed_key
from tanglenode.storage.feeds.processor_rows import ProcessedRows
from tanglenode.storage.feeds.witnesses import ENTRY_BYTES, WitnessBook, entry_key

Entry = tuple[bytes, int, bytes]  # a timeframe entry: feed, seq, tag
_SUSPECT = 40 + TAG_BYTES  # a `waiting` value this long is a suspect wait
_WITNESS = b"w"  # a `waiting` value of an entry and this waits for a witness


@dataclass(frozen=True, slots=True)
class ProcessorTables:
    frontier: Any
    log: Any
    position: Any
    wait: Any
    waiting: Any
    suspects: Any
    heads: Any
    head_at: Any
    witness_wait: Any
    feeds: Any  # the feed store's `feeds` table: `proc-log` names feeds by number

    def rows(self, txn) -> ProcessedRows:
        """`proc-log` and `proc-position` in `txn` (storage.feeds.processor_rows)."""
        return ProcessedRows(txn, self.log, self.position, self.feeds)

    @classmethod
    def open(cls, env: lmdb.Environment) -> ProcessorTables:
        with env.begin(write=True) as txn:
            return cls(
                frontier=env.open_db(b"proc-frontier", txn=txn),
                log=env.open_db(b"proc-log", txn=txn),
                position=env.open_db(b"proc-position", txn=txn),
                wait=env.open_db(b"proc-wait", txn=txn),
                waiting=env.open_db(b"proc-waiting", txn=txn),
                suspects=env.open_db(b"proc-suspects", txn=txn),
                heads=env.open_db(b"proc-heads", txn=txn),
                head_at=env.open_db(b"proc-head-at", txn=txn),
                witness_wait=env.open_db(b"proc-witness-wait", txn=txn),
                feeds=env.open_db(b"feeds", txn=txn),
            )


@dataclass(frozen=True, slots=True)
class Stall:
    """Feed `feed`'s message `seq` waits for the message its timeframe names at
    (`needs_feed`, `needs_seq`) by `needs_tag`, which is not stored; or, `suspected`, which
    is stored with another tag (a suspected fork). `needs_tag` is None when the wait is for
    a feed proven invalid to reach its end, short of the seq named."""

    feed: bytes
    seq: int
    needs_feed: bytes
    needs_seq: int
    needs_tag: bytes | None = None
    suspected: bool = False
    witness: bool = False  # waits for a witness: the entry names a feed not carried


@dataclass(frozen=True, slots=True)
class SuspectedFork:
    """`feed` at `seq` is named with `named_tag` by `by_feed`'s next message, but the message
    processed there has `held_tag`: two messages at one seq, until a proof says so."""

    feed: bytes
    seq: int
    named_tag: bytes
    held_tag: bytes
    by_feed: bytes


def processed_seq(txn, tables: ProcessorTables, feed: bytes) -> int:
    raw = txn.get(feed, db=tables.frontier)
    return 0 if raw is None else U64.unpack(raw)[0]


def processed_frontier(txn, tables: ProcessorTables) -> dict[bytes, int]:
    return {bytes(k): U64.unpack(v)[0] for k, v in txn.cursor(db=tables.frontier)}


def processed_count(txn, tables: ProcessorTables) -> int:
    return tables.rows(txn).count()


def processed_index(txn, tables: ProcessorTables, feed: bytes, seq: int) -> int | None:
    """Where (feed, seq) stands in the processed order, None if not processed."""
    return tables.rows(txn).index_of(feed_key(feed, seq))


def processed_entries(
    txn, tables: ProcessorTables, start: int = 0
) -> Iterator[tuple[int, bytes | None, int]]:
    """(index, feed, seq) of the processed order from index `start` on, with (index, None,
    0) where a blocked feed's message was purged (`Processor.purge`)."""
    return tables.rows(txn).entries(start)


def read_processed(
    txn, tables: ProcessorTables, start: int, limit: int
) -> list[tuple[int, bytes, int]]:
    """(index, feed, seq) of processed messages from index `start` on."""
    found: list[tuple[int, bytes, int]] = []
    if limit <= 0:
        return found
    for index, feed, seq in processed_entries(txn, tables, start):
        if feed is None:  # its feed was blocked and purged (`Processor.purge`)
            continue
        found.append((index, feed, seq))
        if len(found) >= limit:
            break
    return found


def stalls(txn, tables: ProcessorTables, bodies: Bodies) -> list[Stall]:
    """Candidates waiting on a message the store does not hold (or holds with another tag),
    each with the tag its timeframe names."""
    found = []
    for feed, needed in txn.cursor(db=tables.waiting):
        needs_feed, needs_seq = split_feed_key(needed[:40])
        suspect, witness = len(needed) == _SUSPECT, len(needed) == _SUSPECT + 1
        if suspect or witness or not bodies.holds(txn, feed_key(needs_feed, needs_seq)):
            feed, seq = bytes(feed), processed_seq(txn, tables, bytes(feed)) + 1
            if suspect or witness:
                tag: bytes | None = bytes(needed[40:_SUSPECT])
            else:
                waiting = bodies.message(txn, feed_key(feed, seq))
                named = waiting.named().get(needs_feed) if waiting is not None else None
                tag = named.tag if named is not None and named.seq == needs_seq else None
            found.append(Stall(feed, seq, needs_feed, needs_seq, tag, suspect, witness))
    return found


def suspected_forks(txn, tables: ProcessorTables, bodies: Bodies) -> list[SuspectedFork]:
    """Every (feed, seq) named with a tag other than the processed message's."""
    found = []
    for key in txn.cursor(db=tables.suspects).iternext(values=False):
        feed, seq = split_feed_key(key[:40])
        raw = bodies.raw(txn, key[:40])
        held = b"" if raw is None else tag_of(message_id(raw))
        found.append(SuspectedFork(feed, seq, bytes(key[40:_SUSPECT]), held, bytes(key[_SUSPECT:])))
    return found


def newest_heads(
    txn, tables: ProcessorTables, skip: bytes, limit: int, named: Collection[bytes] = ()
) -> list[Entry]:
    """Up to `limit` heads, newest processed first, never feed `skip` nor a head whose
    position (feed + seq) is in `named` (a message not yet processed names it already)."""
    found: list[Entry] = []
    cursor = txn.cursor(db=tables.heads)
    if not cursor.last():
        return found
    for value in cursor.iterprev(keys=False):
        if len(found) >= limit:
            break
        if value[:32] != skip and value[:40] not in named:
            feed, seq = split_feed_key(value[:40])
            found.append((feed, seq, bytes(value[40:])))
    return found


class Processor:
    """Advances the processed order inside one write transaction."""

    def __init__(
        self,
        txn,
        tables: ProcessorTables,
        bodies: Bodies,
        invalid_db,
        spacetime_holds: Callable[[bytes], bool],
        batch: Mapping[tuple[bytes, int], Message] | None = None,
        carried: Callable[[bytes], bool] | None = None,
        witnesses: WitnessBook | None = None,
    ) -> None:
        self._txn = txn
        # Whether the node carries a feed (storage.scope); None: every feed. An entry naming
        # a feed not carried is met once what its witnesses imply is (`witnesses`; None:
        # at once): we never wait for what we chose not to hold.
        self._carried = carried
        self._witnesses = witnesses
        self._tables = tables
        self._rows = tables.rows(txn)  # the processed order (storage.feeds.processor_rows)
        self._bodies = bodies
        self._invalid = invalid_db
        self._spacetime_holds = spacetime_holds  # whether a spacetime ref is a member
        # The messages this transaction stored, (feed, seq) -> message, already decoded.
        self._batch = batch or {}
        # Caches for this transaction: processed seqs, candidates' sorted timeframes,
        # and how many leading entries of each are known processed (that only grows).
        self._processed: dict[bytes, int] = {}
        # candidate -> (its own tag, its timeframe as entries, its checks: the timeframe,
        # and what witnesses add once one is read)
        self._timeframes: dict[tuple[bytes, int], tuple[bytes, list[Entry], list[Entry]]] = {}
        self._checked: dict[tuple[bytes, int], int] = {}
        self._ready: list[tuple[int, bytes]] = []  # (seq, feed): the tie-break order
        # What processing a ready candidate needs: its own tag and its timeframe (for heads).
        self._readied: dict[tuple[bytes, int], tuple[bytes, list[Entry]]] = {}
        self._heads: dict[bytes, tuple[int, int, bytes] | None] = {}  # feed -> new head row
        self._ends: dict[bytes, int | None] = {}  # feed -> its valid end (None: valid)
        # `wait` and `waiting` for this transaction, written back by `_flush`: a needed feed's
        # rows move here (out of LMDB) when first touched, as a heap of (seq, waiting feed).
        self._waiters: dict[bytes, list[tuple[int, bytes]]] = {}
        self._needs: dict[bytes, bytes | None] = {}  # waiting feed -> needed feed + seq
        self.order: list[tuple[bytes, int]] = []  # (feed, seq) processed here, in order

    def _seq(self, feed: bytes) -> int:
        seq = self._processed.get(feed)
        if seq is None:
            seq = self._processed[feed] = processed_seq(self._txn, self._tables, feed)
        return seq

    def advance(self, feeds: Iterable[bytes]) -> int:
        """Process everything that became ready after `feeds` got new messages; returns count."""
        txn, tables = self._txn, self._tables
        for feed in feeds:
            if self._needed_by(feed) is None:
                self._consider(feed)
        self._recheck_waits_on(self._batch)
        rows = self._rows
        index = first = rows.count()
        ready, order, moved = self._ready, self.order, set()
        while ready:
            seq, feed = heapq.heappop(ready)
            rows.append(index, feed, seq)
            tag, timeframe = self._readied.pop((feed, seq))
            for named_feed, named_seq, _tag in timeframe:  # heads at their valid ends
                if self._valid_need(named_feed, self._seq(named_feed)) == named_seq:
                    self._heads[named_feed] = None
            self._heads[feed] = (index, seq, tag)
            self._processed[feed] = seq
            moved.add(feed)
            order.append((feed, seq))
            index += 1
            self._wake(feed, seq)
            self._consider(feed)
        rows.flush()
        for feed in moved:
            txn.put(feed, U64.pack(self._processed[feed]), db=tables.frontier)
        self._flush()
        return index - first

    def _consider(self, feed: bytes) -> None:
        """Place feed's next unprocessed message, if stored: ready, or waiting on one entry."""
        seq = self._seq(feed) + 1
        candidate = (feed, seq)
        if candidate in self._readied:  # ready already (woken twice in one transaction)
            return
        known = self._timeframes.get(candidate)
        if known is None:
            message = self._batch.get(candidate)
            if message is None:
                message = self._bodies.message(self._txn, feed_key(feed, seq))
                if message is None:
                    return
            # ascending keys, never the author's own (decode_message checked both)
            tags = message.timeframe_tags
            timeframe = [(f, s, tags[f]) for f, s in message.timeframe.items()]
            known = self._timeframes[candidate] = (tag_of(message.id), timeframe, timeframe)
        own_tag, timeframe, checks = known
        offset = self._checked.get(candidate, 0) - 1
        while (offset := offset + 1) < len(checks):
            needs_feed, needs_seq, needs_tag = checks[offset]
            valid_seq = self._valid_need(needs_feed, needs_seq)
            processed = self._seq(needs_feed) >= valid_seq
            if not processed and self._carried is not None and not self._carried(needs_feed):
                if self._witnesses is None:
                    continue
                implied = self._witnessed(checks[offset], feed)
                if isinstance(implied, list):
                    if implied:
                        if checks is timeframe:  # the first witness: checks of its own now
                            checks = list(timeframe)
                            self._timeframes[candidate] = (own_tag, timeframe, checks)
                        checks.extend(implied)
                    continue
                self._checked[candidate] = offset
                waits = entry_key(implied)
                self._txn.put(waits + feed, EMPTY, db=self._tables.witness_wait)
                self._needs[feed] = waits + _WITNESS
                return
            if (
                offset >= len(timeframe)
                and valid_seq == needs_seq
                and (
                    self._other_held(needs_feed, needs_seq, needs_tag)
                    if not processed
                    else not self._holds(needs_feed, needs_seq, needs_tag)
                )
            ):
                continue  # a witness named it with another tag: its own lie, met (below)
            if not processed and (
                valid_seq < needs_seq or not self._other_held(needs_feed, needs_seq, needs_tag)
            ):
                self._checked[candidate] = offset
                heapq.heappush(self._waiters_of(needs_feed), (valid_seq, feed))
                self._needs[feed] = feed_key(needs_feed, valid_seq)
                return
            if valid_seq == needs_seq and not self._holds(needs_feed, needs_seq, needs_tag):
                self._checked[candidate] = offset
                suspect = feed_key(needs_feed, needs_seq) + needs_tag
                self._txn.put(suspect + feed, EMPTY, db=self._tables.suspects)
                self._needs[feed] = suspect
                return
        self._timeframes.pop(candidate)
        self._checked.pop(candidate, None)
        self._readied[candidate] = (own_tag, timeframe)
        heapq.heappush(self._ready, (seq, feed))

    def _witnessed(self, entry: Entry, own: bytes) -> list[Entry] | Entry:
        """What an entry naming a feed not carried implies: the entries of carried feeds its
        witnesses name, not yet processed, breadth first within the bounds (beyond them an
        entry is met); or the first witness not held, to wait for (storage.feeds.witnesses).
        Never an entry of the candidate's `own` feed: its chain is its own order, and no
        honest author had processed a message of its own yet to come."""
        book, carried = self._witnesses, self._carried
        assert book is not None and carried is not None
        if book.blocked(entry[0]):
            return []
        implied: list[Entry] = []
        missing: Entry | None = None
        seen, layer = {entry}, [entry]
        for depth in range(1, book.depth + 1):
            deeper: list[Entry] = []
            for witness in layer:
                names = book.names(witness)
                if names is None:
                    missing = missing or witness  # asked for; the rest are asked for too
                    continue
                for named in names:
                    feed, seq, _tag = named
                    if (
                        named in seen
                        or feed == own
                        or self._seq(feed) >= self._valid_need(feed, seq)
                    ):
                        continue  # processed (so is what it implies), or our own chain
                    seen.add(named)
                    if carried(feed):
                        implied.append(named)
                    elif depth < book.depth and len(seen) <= book.count and not book.blocked(feed):
                        deeper.append(named)
            layer = deeper
        return implied if missing is None else missing

    def witnessed(self, entries: Iterable[Entry]) -> None:
        """The witnesses of `entries` came, or were given up: whoever waited for one looks
        again. Call `advance` afterwards."""
        for entry in entries:
            self._wake_witness_waits(entry_key(entry))

    def _wake_witness_waits(self, prefix: bytes) -> None:
        """Wake the candidates waiting for a witness whose key starts with `prefix`."""
        txn, table = self._txn, self._tables.witness_wait
        cursor = txn.cursor(db=table)
        keys = []
        if cursor.set_range(prefix):
            for key in cursor.iternext(values=False):
                if key[: len(prefix)] != prefix:
                    break
                keys.append(bytes(key))
        woken = []
        for key in keys:
            txn.delete(key, db=table)
            waiting, needed = key[ENTRY_BYTES:], key[:ENTRY_BYTES] + _WITNESS
            if self._needed_by(waiting) == needed:
                woken.append(waiting)
        for waiting in woken:
            self._needs[waiting] = None
            self._checked.pop((waiting, self._seq(waiting) + 1), None)
            self._timeframes.pop((waiting, self._seq(waiting) + 1), None)
            self._consider(waiting)

    def _recheck_waits_on(self, stored: Iterable[tuple[bytes, int]]) -> None:
        """Candidates that waited for (feed, seq) before the store held a message there look
        again now that it holds one: if its tag is not the one they name, they wait for a
        proof instead (a suspected fork), which a wait for processing would never end when
        the message there waits, in turn, on them. So the suspicion never depends on
        whether the naming message or the other branch came first."""
        by_feed: dict[bytes, set[int]] = {}
        for feed, seq in stored:
            by_feed.setdefault(feed, set()).add(seq)
        for feed, seqs in by_feed.items():
            heap = self._waiters_of(feed)
            again = [waiting for seq, waiting in heap if seq in seqs]
            if not again:
                continue
            heap[:] = [entry for entry in heap if entry[0] not in seqs]
            heapq.heapify(heap)
            for waiting in again:
                self._needs[waiting] = None
                self._consider(waiting)

    def _other_held(self, feed: bytes, seq: int, tag: bytes) -> bool:
        """Whether the store holds a message at (feed, seq) whose tag is not `tag`: then
        waiting for (feed, seq) to be processed would not meet the need (it may even wait
        on us), and the candidate waits for a proof instead."""
        position = feed_key(feed, seq)
        if (feed, seq) not in self._batch and not self._bodies.holds(self._txn, position):
            return False
        return not self._holds(feed, seq, tag)

    def _holds(self, feed: bytes, seq: int, tag: bytes) -> bool:
        """Whether the message held at (feed, seq) has `tag`: the batch's message, else the
        spacetime's member (its refs are position and tag: one lookup, nothing decoded)."""
        message = self._batch.get((feed, seq))
        if message is not None:
            return tag_of(message.id) == tag
        return self._spacetime_holds(feed_key(feed, seq) + tag)

    def _valid_need(self, feed: bytes, seq: int) -> int:
        """The seq a need of (feed, seq) really waits for: never past an invalid feed's end."""
        if feed in self._ends:
            end = self._ends[feed]
        else:
            raw = self._txn.get(feed, db=self._invalid)
            end = self._ends[feed] = None if raw is None else U64.unpack(raw[:8])[0] - 1
        return seq if end is None else min(seq, end)

    def _needed_by(self, feed: bytes) -> bytes | None:
        """The (feed + seq) that `feed`'s candidate waits for, None if it waits for nothing."""
        if feed in self._needs:
            return self._needs[feed]
        needed = self._txn.get(feed, db=self._tables.waiting)
        needed = self._needs[feed] = None if needed is None else bytes(needed)
        return needed

    def _waiters_of(self, feed: bytes) -> list[tuple[int, bytes]]:
        """The heap of (seq, waiting feed) waiting on `feed`, moved out of LMDB when first used."""
        heap = self._waiters.get(feed)
        if heap is None:
            heap = self._waiters[feed] = []
            cursor = self._txn.cursor(db=self._tables.wait)
            if cursor.set_range(feed):
                while cursor.key()[:32] == feed:
                    key = cursor.key()
                    heap.append((U64.unpack(key[32:40])[0], bytes(key[40:])))
                    if not cursor.delete():
                        break
            heapq.heapify(heap)
        return heap

    def _flush(self) -> None:
        """Write `wait`, `waiting` and the heads back: what holds at the end of the transaction."""
        txn, tables = self._txn, self._tables
        for feed, head in self._heads.items():
            old = txn.get(feed, db=tables.head_at)
            if old is not None:
                txn.delete(old, db=tables.heads)
            if head is None:
                txn.delete(feed, db=tables.head_at)
            else:
                index, seq, tag = head
                number = U64.pack(index)
                txn.put(number, feed_key(feed, seq) + tag, db=tables.heads)
                txn.put(feed, number, db=tables.head_at)
        self._heads.clear()
        for feed, heap in self._waiters.items():
            for seq, waiting in heap:
                txn.put(feed_key(feed, seq) + waiting, EMPTY, db=tables.wait)
        for waiting, needed in self._needs.items():
            if needed is None:
                txn.delete(waiting, db=tables.waiting)
            else:
                txn.put(waiting, needed, db=tables.waiting)
        self._waiters.clear()
        self._needs.clear()

    def forget(self, feed: bytes, invalid_from: int) -> None:
        """`feed` holds nothing from `invalid_from` on: drop its candidate, wake its waiters.

        Call `advance` afterwards (with no feeds) to process what became ready.
        """
        self._timeframes = {k: v for k, v in self._timeframes.items() if k[0] != feed}
        self._checked = {k: v for k, v in self._checked.items() if k[0] != feed}
        needed = self._needed_by(feed)
        if needed is not None and len(needed) == _SUSPECT:  # it waited for a proof
            self._txn.delete(needed + feed, db=self._tables.suspects)
            self._needs[feed] = None
        elif needed is not None and len(needed) == _SUSPECT + 1:  # it waited for a witness
            self._txn.delete(needed[:ENTRY_BYTES] + feed, db=self._tables.witness_wait)
            self._needs[feed] = None
        elif needed is not None:  # its next message is gone; it waits for nothing now
            heap = self._waiters_of(needed[:32])
            heap[:] = [entry for entry in heap if entry[1] != feed]
            heapq.heapify(heap)
            self._needs[feed] = None
        heap = self._waiters_of(feed)
        woken = [waiting for seq, waiting in heap if seq >= invalid_from]
        heap[:] = [entry for entry in heap if entry[0] < invalid_from]
        heapq.heapify(heap)
        woken += self._suspects_cleared(feed, invalid_from)
        self._move_head_back(feed, invalid_from)
        for waiting in woken:
            self._needs[waiting] = None
            self._checked.pop((waiting, self._seq(waiting) + 1), None)
            self._consider(waiting)
        self._consider(feed)

    def purge(self, feed: bytes) -> None:
        """The node blocked `feed` and dropped every message of it: it was never processed.

        Its rows leave the processed state: its frontier and positions go, its entries in
        the order stay as empty rows (an index once given is never given again, so a reader
        who paged past it misses nothing), its head goes (`restore_heads` brings back the
        heads its messages had taken), and whoever waited on it wakes (an entry naming a
        feed the node does not carry is met). Should the node carry it again later, its
        messages come back and are processed anew. Call `advance` afterwards.
        """
        txn, tables = self._txn, self._tables
        self._rows.purge(feed)
        txn.delete(feed, db=tables.frontier)
        self._processed[feed] = 0
        self.forget(feed, 1)

    def release_uncarried(self) -> None:
        """The node's scope changed (storage.scope): whoever waits on a feed it no longer
        carries, for its processing or for a proof, looks again, and finds the entry met.

        Call `advance` afterwards (with no feeds) to process what became ready.
        """
        if self._carried is None:
            return
        self._wake_witness_waits(b"")  # a feed they wait on may be carried now, or blocked
        needed = {
            bytes(value[:32])
            for value in self._txn.cursor(db=self._tables.waiting).iternext(keys=False)
        }
        for feed in sorted(needed):
            if self._carried(feed):
                continue
            heap = self._waiters_of(feed)
            woken = [waiting for _seq, waiting in heap]
            heap.clear()
            woken += self._suspects_cleared(feed, 0)
            for waiting in woken:
                self._needs[waiting] = None
                self._checked.pop((waiting, self._seq(waiting) + 1), None)
                self._consider(waiting)

    def _suspects_cleared(self, feed: bytes, invalid_from: int) -> list[bytes]:
        """Delete the suspicions a proof cutting `feed` at `invalid_from` settles; their
        waiting feeds."""
        txn, woken = self._txn, []
        cursor = txn.cursor(db=self._tables.suspects)
        if cursor.set_range(feed_key(feed, invalid_from)):
            while cursor.key()[:32] == feed:
                waiting = bytes(cursor.key()[_SUSPECT:])
                self._needs[waiting] = None
                woken.append(waiting)
                if not cursor.delete():
                    break
        return woken

    def restore_heads(self, feeds: Iterable[bytes]) -> None:
        """`feeds` were named by messages a proof removed: each one left with no head heads
        again with its last valid processed message. That message may still be named by
        another (then naming it claims nothing more, which is safe); but a head named by the
        removed messages alone must not stay unnamed for ever."""
        for feed in sorted(feeds):
            if feed in self._heads or self._txn.get(feed, db=self._tables.head_at) is not None:
                continue
            self._restore_head(feed, self._valid_need(feed, self._seq(feed)))

    def _move_head_back(self, feed: bytes, invalid_from: int) -> None:
        """A feed cut at or below its head heads with its last valid message, if any: what
        that one named may be named by nothing else (its valid history is no forgery)."""
        raw = self._txn.get(feed, db=self._tables.head_at)
        if raw is None:
            return
        seq = split_feed_key(self._txn.get(raw, db=self._tables.heads)[:40])[1]
        if seq < invalid_from:
            return
        self._heads[feed] = None
        self._restore_head(feed, invalid_from - 1)

    def _restore_head(self, feed: bytes, seq: int) -> None:
        """Make (feed, seq), a processed message we hold, the feed's head."""
        if seq == 0:
            return
        raw = self._bodies.raw(self._txn, feed_key(feed, seq))
        index = self._rows.index_of(feed_key(feed, seq))
        if raw is not None and index is not None:
            self._heads[feed] = (index, seq, tag_of(message_id(raw)))

    def _wake(self, feed: bytes, seq: int) -> None:
        """Re-check the candidates that waited on (feed, s) for any s <= seq."""
        heap = self._waiters_of(feed)
        while heap and heap[0][0] <= seq:
            _seq, waiting = heapq.heappop(heap)
            self._needs[waiting] = None
            self._consider(waiting)
