"""`store.feeds`: the reads of feeds, messages, evidence and the processed order.

Each public method is one read transaction (or, for `iter_raw`, one per
chunk), as every store call is, and none writes. Stored bytes are parsed
without verifying signatures again; `check()` verifies everything, and asks
every derived view to check itself (storage/feeds/check.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from tanglenode.protocol.contacts import Stance
from tanglenode.protocol.evidence import ProofKind
from tanglenode.protocol.identity import message_id, tag_of
from tanglenode.protocol.message import Message
from tanglenode.storage.context import StoreContext
from tanglenode.storage.erasure import erased_by, erasure_db, request_outcome
from tanglenode.storage.feeds import proof_order, replication
from tanglenode.storage.feeds.check import CheckReport, check_store
from tanglenode.storage.feeds.derived import DerivedView
from tanglenode.storage.feeds.invalidation import (
    invalid_by_proof,
    invalid_feeds,
    invalid_from,
    kept_proof,
    kept_proofs,
)
from tanglenode.storage.feeds.layout import Tables, feed_key, parse_stored, split_head_value
from tanglenode.storage.feeds.processor import (
    Stall,
    SuspectedFork,
    processed_frontier,
    read_processed,
    stalls,
    suspected_forks,
)
from tanglenode.storage.feeds.witnesses import Entry, wanted
from tanglenode.storage.scope import LIMITS, Scope, ScopeLimits, compute_scope, read_scope
from tanglenode.storage.sightings import feed_seen
from tanglenode.storage.views.abouts import ABOUTS_DB, read_name, read_names
from tanglenode.storage.views.contacts import CONTACTS_DB, stances_of


@dataclass(frozen=True, slots=True)
class FeedInfo:
    author: bytes
    head_seq: int
    head_id: bytes | None
    invalid_from: int | None


@dataclass(frozen=True, slots=True)
class NumberedProof:
    """A kept proof with its number in the order proofs were kept, and its author."""

    number: int
    author: bytes
    messages: list[Message]


@dataclass(frozen=True, slots=True)
class Evidence:
    """A kept proof: its kind, the feeds it made invalid (author -> seq), its messages."""

    id: bytes
    kind: ProofKind
    invalid: dict[bytes, int]
    messages: list[Message]


def message_by_id(txn, tables: Tables, msg_id: bytes) -> Message | None:
    """A message by id within `txn`: an accepted one, or one held as fork evidence."""
    position = tables.ids.position(txn, msg_id)
    if position is not None:
        return tables.bodies.message(txn, position)
    raw = txn.get(msg_id, db=tables.evidence)
    return None if raw is None else parse_stored(raw)


def _keys_between(txn, db, low: bytes, high: bytes, limit: int) -> list[bytes]:
    """At most `limit` keys of `db` from `low` to `high` inclusive, in order."""
    found: list[bytes] = []
    cursor = txn.cursor(db=db)
    if not cursor.set_range(low):
        return found
    for key in cursor.iternext(values=False):
        if bytes(key) > high or len(found) >= limit:
            break
        found.append(bytes(key))
    return found


class FeedReads:
    """`store.feeds`: feeds, messages, evidence, the processed order (see the module docstring)."""

    def __init__(self, ctx: StoreContext, views: Sequence[DerivedView]) -> None:
        self._ctx = ctx
        self._views = views
        self._erasure = erasure_db(ctx.env)
        self._about_names = ctx.view_tables[ABOUTS_DB]
        self._contacts = ctx.view_tables[CONTACTS_DB]

    def frontier(self) -> dict[bytes, int]:
        """Feed -> highest stored seq: this store's vector clock."""
        with self._ctx.read() as txn:
            return {
                bytes(key): split_head_value(value)[0]
                for key, value in txn.cursor(db=self._ctx.tables.heads)
            }

    def get(self, msg_id: bytes) -> Message | None:
        """A message by id: an accepted one, or one held as fork evidence."""
        with self._ctx.read() as txn:
            return message_by_id(txn, self._ctx.tables, msg_id)

    def get_by_seq(self, author: bytes, seq: int) -> Message | None:
        with self._ctx.read() as txn:
            return self._ctx.tables.bodies.message(txn, feed_key(author, seq))

    def read_feed(self, author: bytes, from_seq: int = 1, limit: int = 1000) -> list[Message]:
        """Up to `limit` messages of a feed, from `from_seq` on, in seq order."""
        return [parse_stored(raw) for raw in self.read_feed_raw(author, from_seq, limit)]

    def read_feed_raw(self, author: bytes, from_seq: int = 1, limit: int = 1000) -> list[bytes]:
        """The signed bytes of up to `limit` messages of a feed from `from_seq` on (for gossip)."""
        raws: list[bytes] = []
        if limit <= 0:
            return raws
        bodies = self._ctx.tables.bodies
        with self._ctx.read() as txn:
            start = feed_key(author, max(from_seq, 1))
            for position, body in bodies.rows(txn, start, within=author):
                raws.append(bodies.rebuild(txn, position, body))
                if len(raws) >= limit:
                    break
        return raws

    def held(self) -> list[FeedInfo]:
        """Every feed held or proven invalid: its head (0 if none left) and boundary."""
        with self._ctx.read() as txn:
            invalid = invalid_feeds(txn, self._ctx.tables)
            found = {
                bytes(author): FeedInfo(
                    bytes(author), *split_head_value(value), invalid.get(bytes(author))
                )
                for author, value in txn.cursor(db=self._ctx.tables.heads)
            }
        for author, boundary in invalid.items():
            found.setdefault(author, FeedInfo(author, 0, None, boundary))
        return [found[author] for author in sorted(found)]

    def held_of(self, authors: Sequence[bytes]) -> list[FeedInfo]:
        """`held()`'s rows of `authors` only (a feed of neither messages nor proof: head 0)."""
        tables = self._ctx.tables
        found = []
        with self._ctx.read() as txn:
            for author in authors:
                value = txn.get(author, db=tables.heads)
                seq, head = split_head_value(value) if value is not None else (0, None)
                found.append(FeedInfo(author, seq, head, invalid_from(txn, tables, author)))
        return found

    def about_names(self) -> dict[bytes, str]:
        """Feed -> the name it gave itself: its latest own `about` below its invalid
        boundary (storage.views.abouts)."""
        with self._ctx.read() as txn:
            boundaries = invalid_feeds(txn, self._ctx.tables)
            return read_names(txn, self._about_names, boundaries)

    def about_name(self, feed: bytes) -> str | None:
        """The name `feed` gave itself, as in `about_names()`, or None."""
        with self._ctx.read() as txn:
            boundary = invalid_from(txn, self._ctx.tables, feed)
            return read_name(txn, self._about_names, feed, boundary)

    def ids_between(self, low: bytes, high: bytes, limit: int) -> list[bytes]:
        """The ids of the messages held (accepted, or kept as fork evidence) from `low` to
        `high` inclusive, in id order, at most `limit`: what a short id names
        (protocol.identity.prefix_range). Two range scans, each stopping at `high` or
        after `limit` keys, whatever the store holds."""
        tables = self._ctx.tables
        with self._ctx.read() as txn:
            found = tables.ids.held_between(txn, low, high, limit)
            found += _keys_between(txn, tables.evidence, low, high, limit)
        return sorted(set(found))[:limit]

    def feeds_between(self, low: bytes, high: bytes, limit: int) -> list[bytes]:
        """The feeds held or proven invalid (as `held()`) from `low` to `high` inclusive,
        in id order, at most `limit`: what a feed id cut short names."""
        tables = self._ctx.tables
        with self._ctx.read() as txn:
            found = _keys_between(txn, tables.heads, low, high, limit)
            found += _keys_between(txn, tables.invalid, low, high, limit)
        return sorted(set(found))[:limit]

    def feeds_named(self, name: str, limit: int) -> list[bytes]:
        """The feeds whose own name (`about_names()`) is `name`, else `name` but for case,
        in id order, at most `limit`: what `~name` names. One pass over the names."""
        names = self.about_names()
        found = [feed for feed, its in names.items() if its == name]
        if not found:
            folded = name.casefold()
            found = [feed for feed, its in names.items() if its.casefold() == folded]
        return sorted(found)[:limit]

    def scope(self) -> Scope:
        """The feeds this node carries, as it last chose (storage.scope)."""
        with self._ctx.read() as txn:
            return read_scope(txn, self._ctx.tables)

    def computed_scope(
        self,
        me: bytes,
        hops: int | None,
        groups: Mapping[bytes, bytes] | None = None,
        limits: ScopeLimits = LIMITS,
    ) -> Scope:
        """The scope of node `me` with `hops` and `groups`, from the contact messages held
        (storage.scope.compute_scope, within `limits`); nothing is kept
        (`store.writes.set_scope` keeps it)."""
        with self._ctx.read() as txn:
            return compute_scope(txn, self._ctx.tables, self._contacts, me, hops, groups, limits)

    def seen(self, feed: bytes) -> bool:
        """Whether the store holds any sign of `feed`: a message, a witness, a contact
        message naming it (storage/sightings.py)."""
        return feed_seen(self._ctx, feed)

    def stances(self, feed: bytes) -> dict[bytes, Stance]:
        """Contact -> `feed`'s stance towards it (storage.views.contacts)."""
        with self._ctx.read() as txn:
            boundary = invalid_from(txn, self._ctx.tables, feed)
            return stances_of(txn, self._contacts, feed, boundary)

    def erased_by(self, msg_id: bytes) -> bytes | None:
        """The id of the erase request that dropped `msg_id`'s content, `PURGED` (b"") for
        this node's purge, None if its content was never dropped (storage/erasure.py)."""
        with self._ctx.read() as txn:
            return erased_by(txn, self._erasure, msg_id)

    def erase_outcome(self, request: bytes) -> str | None:
        """An erase request's outcome once processed: "" carried out, else its refusal's
        reason (protocol/erase.py); None if it is not (yet) a processed erase request."""
        with self._ctx.read() as txn:
            return request_outcome(txn, self._erasure, request)

    def invalid_feeds(self) -> dict[bytes, int]:
        """Feed -> the seq it is invalid from, for every feed a kept proof cut back."""
        with self._ctx.read() as txn:
            return invalid_feeds(txn, self._ctx.tables)

    def evidence(self) -> list[Evidence]:
        """Every kept proof (at most one per invalid feed)."""
        with self._ctx.read() as txn:
            proofs = kept_proofs(txn, self._ctx.tables)
            cut = invalid_by_proof(txn, self._ctx.tables)
        return [
            Evidence(proof_id, kind, dict(sorted(cut.get(proof_id, {}).items())), messages)
            for proof_id, kind, messages in proofs
        ]

    def proofs_after(self, number: int, limit: int) -> list[NumberedProof]:
        """At most `limit` kept proofs numbered past `number`, in the order they were kept:
        a reader that remembers the last number it read reads each proof once
        (storage/feeds/proof_order.py)."""
        found = []
        with self._ctx.read() as txn:
            for numbered, proof_id in proof_order.after(txn, self._ctx.tables, number, limit):
                kept = kept_proof(txn, self._ctx.tables, proof_id)
                if kept is not None:
                    found.append(NumberedProof(numbered, kept[1][0].author, kept[1]))
        return found

    def last_proof(self) -> int:
        """The number of the last proof kept (0: none yet)."""
        with self._ctx.read() as txn:
            return proof_order.last(txn, self._ctx.tables)

    def proof_against(self, author: bytes) -> list[Message] | None:
        """The messages of the proof that makes `author`'s feed invalid, or None."""
        tables = self._ctx.tables
        with self._ctx.read() as txn:
            row = txn.get(author, db=tables.invalid)
            kept = None if row is None else kept_proof(txn, tables, bytes(row[8:]))
        return None if kept is None else kept[1]

    def evidence_messages(self) -> list[Message]:
        """The messages of every kept proof (held apart from the feeds)."""
        return [message for proof in self.evidence() for message in proof.messages]

    def iter_raw(self, chunk: int = 10_000) -> Iterator[bytes]:
        """Every accepted message's signed bytes, feed by feed in seq order.

        Reads `chunk` rows per read transaction, so a long export never pins
        old pages while a node keeps writing.
        """
        after: bytes | None = None
        while True:
            with self._ctx.read() as txn:
                rows = []
                bodies = self._ctx.tables.bodies
                for position, body in bodies.rows(txn, after or b""):
                    if position == after:
                        continue
                    rows.append((position, bodies.rebuild(txn, position, body)))
                    if len(rows) >= chunk:
                        break
            if not rows:
                return
            yield from (raw for _key, raw in rows)
            after = rows[-1][0]

    def processed(self, start: int = 0, limit: int = 1000) -> list[tuple[int, bytes, int]]:
        """(index, feed, seq) of the processed order from `start` on."""
        with self._ctx.read() as txn:
            return read_processed(txn, self._ctx.processor_tables, start, limit)

    def processed_frontier(self) -> dict[bytes, int]:
        with self._ctx.read() as txn:
            return processed_frontier(txn, self._ctx.processor_tables)

    def witnesses_wanted(self, limit: int = 256) -> list[Entry]:
        """Witnesses the causal processor asked for and waits on (storage.feeds.witnesses)."""
        with self._ctx.read() as txn:
            return wanted(txn, self._ctx.witness_tables, limit)

    def witness_answers(self, entries: Sequence[Entry]) -> dict[Entry, bytes]:
        """The signed bytes of each entry's message that this store holds as a message of
        its feed (never a witness of its own: those are not passed on), by entry."""
        found: dict[Entry, bytes] = {}
        with self._ctx.read() as txn:
            for entry in entries:
                raw = self._ctx.tables.bodies.raw(txn, feed_key(entry[0], entry[1]))
                if raw is not None and tag_of(message_id(raw)) == entry[2]:
                    found[entry] = raw
        return found

    def stalls(self) -> list[Stall]:
        """Feeds whose next message waits on a message the store does not have."""
        with self._ctx.read() as txn:
            return stalls(txn, self._ctx.processor_tables, self._ctx.tables.bodies)

    def suspected_forks(self) -> list[SuspectedFork]:
        """Every (feed, seq) some message names with a tag other than the one processed there:
        a fork until its proof arrives (storage.feeds.processor)."""
        with self._ctx.read() as txn:
            return suspected_forks(txn, self._ctx.processor_tables, self._ctx.tables.bodies)

    def check(self) -> CheckReport:
        """Re-verify every stored message and every index (slow: reads everything)."""
        return check_store(self._ctx, self._views)

    def replication_start(self, wants: Mapping[bytes, int]) -> int:
        """Where a peer's walk of the processed order starts (see `storage.feeds.replication`)."""
        with self._ctx.read() as txn:
            return replication.start_of(txn, self._ctx.processor_tables, dict(wants))

    def next_batch(
        self, wants: Mapping[bytes, int], resume: int, limit: int, max_bytes: int
    ) -> replication.Batch:
        """The next messages a peer's subscriptions (feed -> seq sent) lack, in processed order."""
        with self._ctx.read() as txn:
            return replication.next_batch(
                txn,
                self._ctx.processor_tables,
                self._ctx.tables.bodies,
                dict(wants),
                resume,
                limit,
                max_bytes,
            )

    def processed_page(
        self, start: int = 0, limit: int = 1000, max_bytes: int | None = None
    ) -> list[tuple[int, Message | None]]:
        """(index, message) of the processed order from `start` on (None: no longer held).

        The page stops early once the messages' signed bytes reach `max_bytes`.
        """
        page: list[tuple[int, Message | None]] = []
        size = 0
        with self._ctx.read() as txn:
            for index, feed, seq in read_processed(txn, self._ctx.processor_tables, start, limit):
                message = self._ctx.tables.bodies.message(txn, feed_key(feed, seq))
                page.append((index, message))
                size += len(message.raw) if message else 0
                if max_bytes is not None and size >= max_bytes:
                    break
        return page

    def statistics(self) -> dict[str, int]:
        """Counts, the bytes of data.mdb in use (up to its last page) and the map's size."""
        with self._ctx.read() as txn:
            info = self._ctx.env.info()
            return {
                "messages": self._ctx.tables.bodies.count(txn),
                "feeds": txn.stat(self._ctx.tables.heads)["entries"],
                "evidence": txn.stat(self._ctx.tables.evidence)["entries"],
                "invalid_feeds": txn.stat(self._ctx.tables.invalid)["entries"],
                "bytes_on_disk": info["last_pgno"] * self._ctx.env.stat()["psize"],
                "map_size": info["map_size"],
            }
