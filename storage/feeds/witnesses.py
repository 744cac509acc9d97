"""Witnesses: messages of feeds the node does not carry, read for what they imply.

Theory of operation
-------------------
A timeframe names heads (docs/PROCESSING.md, "What a timeframe names"), so an
entry naming a message x of a feed the node does not carry may stand for
messages of carried feeds that x's author had processed: x names them, or
names what names them. Counting x as met would let the naming message be
processed before such a message arrives. Instead the node fetches x itself
as a *witness*: bound to its tag (the first bytes of its hash, which the
naming entry gives), so a peer can only hand over the message named, never
another; its signature is checked; it is kept here, apart from the feeds,
and never served nor replicated onwards.

The causal processor walks from x through the witnesses' names (each
witness's `prev` and its timeframe) breadth first, stopping at every message
of a carried feed (that one it waits for like any other entry) and at every
message already processed, at most `MAX_WITNESS_DEPTH` names deep and
`MAX_WITNESSES` witnesses per candidate: beyond either bound an entry is
met, as it was before witnesses. A witness not held is *asked for* (its row
in `witness-asks`) and the candidate waits for it; the node's gossip
sessions fetch it (node/gossip/witness_fetch.py) and `Writes.add_witnesses` stores
it and wakes the candidate. An ask no connected peer can answer, or that
stays unanswered for the node's patience, is *given up*: the entry is then
met, so the node never stalls on what it chose not to carry. A feed the
node blocks is never witnessed: an entry naming it is met.

    witnesses         feed + seq (u64) + tag -> signed bytes    verified, kept apart
    witness-asks      feed + seq (u64) + tag -> ""              wanted
    witness-given-up  feed + seq (u64) + tag -> ""              given up: the entry is met

The walk reads only what the store holds, so two nodes holding the same
messages and witnesses with the same scope decide the same; what witnesses
a node could get is its own (as the processed order is), and never changes
a timeline, digest or view (they depend on the messages held alone).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import lmdb

from tanglenode.protocol.identity import TAG_BYTES, message_id, tag_of
from tanglenode.protocol.message import Message, decode_message
from tanglenode.storage.feeds.layout import Bodies, feed_key, split_feed_key

Entry = tuple[bytes, int, bytes]  # feed, seq, tag: as a timeframe names a message

MAX_WITNESS_DEPTH = 4  # names followed from the entry, at most
MAX_WITNESSES = 32  # witnesses read per candidate, at most
ENTRY_BYTES = 40 + TAG_BYTES


def entry_key(entry: Entry) -> bytes:
    feed, seq, tag = entry
    return feed_key(feed, seq) + tag


def split_entry_key(key: bytes) -> Entry:
    feed, seq = split_feed_key(key[:40])
    return feed, seq, bytes(key[40:ENTRY_BYTES])


def names_of(message: Message) -> list[Entry]:
    """What a message names: its `prev` (the feed's previous message) and its timeframe."""
    named = [(f, s, message.timeframe_tags[f]) for f, s in message.timeframe.items()]
    if message.seq > 1:
        named.append((message.author, message.seq - 1, tag_of(message.prev)))  # type: ignore[arg-type]  # seq > 1: a prev
    return named


@dataclass(frozen=True, slots=True)
class WitnessTables:
    witnesses: Any
    asks: Any
    given_up: Any

    @classmethod
    def open(cls, env: lmdb.Environment) -> WitnessTables:
        with env.begin(write=True) as txn:
            return cls(
                witnesses=env.open_db(b"witnesses", txn=txn),
                asks=env.open_db(b"witness-asks", txn=txn),
                given_up=env.open_db(b"witness-given-up", txn=txn),
            )


def wanted(txn, tables: WitnessTables, limit: int) -> list[Entry]:
    """Up to `limit` witnesses asked for and neither held nor given up, in key order."""
    found: list[Entry] = []
    for key in txn.cursor(db=tables.asks).iternext(values=False):
        if len(found) >= limit:
            break
        found.append(split_entry_key(bytes(key)))
    return found


def keep_witness(txn, tables: WitnessTables, message: Message) -> Entry | None:
    """Keep a checked `message` as the witness of the entry naming it, if that was asked for
    and is still wanted, as its header alone (all a witness implies is there: no content
    of a feed we do not carry stays); returns the entry, or None (not asked: nothing kept)."""
    entry = (message.author, message.seq, tag_of(message.id))
    key = entry_key(entry)
    if not txn.delete(key, db=tables.asks):
        return None
    txn.put(key, message.without_content().raw, db=tables.witnesses)  # its header implies all
    return entry


def give_up(txn, tables: WitnessTables, entries: Iterable[Entry]) -> list[Entry]:
    """Mark wanted witnesses given up (their entries are met from now on); those marked."""
    marked = []
    for entry in entries:
        key = entry_key(entry)
        if txn.delete(key, db=tables.asks):
            txn.put(key, b"", db=tables.given_up)
            marked.append(entry)
    return marked


def drop_feeds(txn, tables: WitnessTables, dropped: Callable[[bytes], bool]) -> None:
    """Drop the witnesses and asks of every feed `dropped` says (the node carries it now,
    so its messages come as messages, or blocks it)."""
    for db in (tables.witnesses, tables.asks, tables.given_up):
        cursor = txn.cursor(db=db)
        more = cursor.first()
        while more:
            more = cursor.delete() if dropped(bytes(cursor.key()[:32])) else cursor.next()


class WitnessBook:
    """What witnesses name, read in one transaction (cached), asking for those not held."""

    def __init__(
        self,
        txn,
        tables: WitnessTables,
        bodies: Bodies,
        blocked: Callable[[bytes], bool],
        *,
        depth: int = MAX_WITNESS_DEPTH,
        count: int = MAX_WITNESSES,
    ) -> None:
        self._txn = txn
        self._tables = tables
        self._bodies = bodies
        self.blocked = blocked
        self.depth = depth
        self.count = count
        self._named: dict[Entry, list[Entry] | None] = {}

    def names(self, entry: Entry) -> list[Entry] | None:
        """What the witness of `entry` names; [] if given up; None if not held (it is asked
        for, and the caller waits)."""
        if entry in self._named:
            return self._named[entry]
        txn, key = self._txn, entry_key(entry)
        raw = txn.get(key, db=self._tables.witnesses)
        if raw is None:  # held as a message (a feed carried once): as good a witness
            held = self._bodies.raw(txn, key[:40])
            raw = held if held is not None and tag_of(message_id(held)) == entry[2] else None
        if raw is not None:
            found: list[Entry] | None = names_of(decode_message(bytes(raw), verify_signature=False))
        elif txn.get(key, db=self._tables.given_up) is not None:
            found = []
        else:
            txn.put(key, b"", db=self._tables.asks)  # wanted (again: a no-op if it is)
            found = None
        self._named[entry] = found
        return found
