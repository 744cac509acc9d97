"""Applying validated messages to the feed store inside one write transaction.

Theory of operation
-------------------
Signature and shape checks need no store, so `storage.store` runs them before
it takes the write transaction; what is left here is the feed-chain rule,
decided against the feed's head (the highest stored seq, always contiguous
from 1) and its boundary (set once a proof shows the feed invalid):

    feed invalid from b, seq >= b                   -> rejected, forked-feed
                                                       (duplicate if held as evidence)
    seq <= head, id already stored                  -> duplicate
    seq <= head, another id at that seq             -> fork: the pair is a proof, the
                                                       feed is invalid from seq
    seq > head + 1                                  -> rejected, missing-previous
    seq == head + 1 but prev is not the head's id   -> rejected, chain-mismatch
    otherwise                                       -> accepted: stored, indexed,
                                                       and handed to every derived
                                                       view (storage.registry)

A proof that lowers a boundary cuts the feed back (storage.feeds.invalidation);
`add_proof` applies one that came from a peer the same way, and `purge`
takes a blocked feed out whole by the same path. No message can
close a causal loop (every reference is bound to a hash: docs/PROCESSING.md),
so there is nothing else to prove.

A `BatchWriter` caches each feed's head and invalid state for the life of
the transaction and writes the heads once, in `finish()`, however many
messages of a feed the batch held. It knows the derived views only as the
list it is given (storage/feeds/derived.py): each is told of every message
stored (`accepted`) and every message a proof cuts back (`cut`), in the
same transaction, through one `WriteScope`.

Preparing a batch
-----------------
`prepare` is everything that needs no store: ids, decoding, shape and
canonical checks, signatures. It touches no LMDB and no shared state, so it
runs in any thread or in a worker process. Each message is decoded exactly
once, there; the store applies the decoded `Message`s
(`store.writes.ingest_prepared`). `storage.feeds.ingest_pipeline` overlaps the two
over a stream of batches (`tangled import`, the bench); the daemon's
catch-up does the same in `node.gossip.inbox`.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tanglenode.protocol.errors import InvalidMessage, Reason
from tanglenode.protocol.evidence import Proof, check_proof
from tanglenode.protocol.identity import message_id
from tanglenode.protocol.limits import Limits
from tanglenode.protocol.message import Message, decode_message
from tanglenode.storage.feeds.derived import DerivedView, WriteScope
from tanglenode.storage.feeds.invalidation import invalid_from, record_proof, truncate_feed
from tanglenode.storage.feeds.layout import Tables, feed_key, head_value, split_head_value
from tanglenode.storage.feeds.scope_table import blocked_in

if TYPE_CHECKING:
    from tanglenode.storage.context import StoreContext


class Outcome(enum.StrEnum):
    ACCEPTED = "accepted"
    DUPLICATE = "duplicate"
    REJECTED = "rejected"
    FORK = "fork"  # with a stored message, a proof that cut its feed back


@dataclass(frozen=True, slots=True)
class IngestResult:
    """What became of one message handed to `ingest`."""

    outcome: Outcome
    id: bytes
    reason: Reason | None = None
    detail: str = ""
    message: Message | None = None

    @property
    def stored(self) -> bool:
        """True if the store holds this message's bytes now (accepted), or it changed feeds."""
        return self.outcome in (Outcome.ACCEPTED, Outcome.FORK)


@dataclass(frozen=True, slots=True)
class PreparedBatch:
    """A batch checked as far as it can be without the store (see `prepare`).

    Slot i holds either the decoded `messages[i]` (still to be applied) or
    the already decided `results[i]` (rejected, or a duplicate of an earlier
    slot or of an id the caller knew); never both.
    """

    ids: list[bytes]
    messages: list[Message | None]
    results: list[IngestResult | None]

    def __len__(self) -> int:
        return len(self.ids)


def prepare(
    raws: Sequence[bytes], limits: Limits, known: Collection[bytes] = frozenset()
) -> PreparedBatch:
    """Hash, decode and verify a batch: pure CPU, no LMDB, safe in any thread.

    Ids in `known` (the caller looked them up already) and repeats within the
    batch of an id decoded earlier in it are duplicates without a signature
    check. A repeat of an id whose earlier copy was refused is decoded all the
    same: the id is its header's, so a copy garbled around an intact header (a
    relay's, not its author's doing) has the id of the good copy and must not
    make it a duplicate of nothing.
    """
    count = len(raws)
    ids: list[bytes] = [b""] * count
    messages: list[Message | None] = [None] * count
    results: list[IngestResult | None] = [None] * count
    seen: set[bytes] = set()
    for index, raw in enumerate(raws):
        raw = bytes(raw)
        msg_id = ids[index] = message_id(raw)
        if msg_id in seen or msg_id in known:
            results[index] = IngestResult(Outcome.DUPLICATE, msg_id)
            continue
        try:
            messages[index] = decode_message(raw, limits, known_id=msg_id)
        except InvalidMessage as error:
            results[index] = IngestResult(Outcome.REJECTED, msg_id, error.reason, error.detail)
        else:
            seen.add(msg_id)
    return PreparedBatch(ids, messages, results)


def read_head(txn, tables: Tables, author: bytes) -> tuple[int, bytes | None]:
    value = txn.get(author, db=tables.heads)
    return (0, None) if value is None else split_head_value(value)


def is_known(txn, tables: Tables, msg_id: bytes) -> bool:
    return tables.ids.holds(txn, msg_id) or txn.get(msg_id, db=tables.evidence) is not None


class BatchWriter:
    """Applies messages to one write transaction; call `finish()` before commit."""

    def __init__(self, txn, ctx: StoreContext, views: Sequence[DerivedView]) -> None:
        self._txn = txn
        self._tables = tables = ctx.tables
        self._views = views
        self.scope = WriteScope(txn, ctx)
        self._bodies = tables.bodies
        self._body_writer = tables.bodies.writer(txn)
        self._heads: dict[bytes, tuple[int, bytes | None]] = {}
        self._dirty_heads: set[bytes] = set()
        self._invalid: dict[bytes, int | None] = {}
        self._blocked = blocked_in(txn, self._tables)  # the feeds our node blocks
        self.invalidated: dict[bytes, int] = {}  # feeds cut back in this batch -> boundary
        self.named_by_cut: set[bytes] = set()  # feeds the messages cut back had named
        self.cut: list[Message] = []  # the messages cut back
        self.purged: set[bytes] = set()  # blocked feeds whose messages were all taken out
        self.stored: dict[tuple[bytes, int], Message] = {}  # (author, seq) stored by this batch

    def head(self, author: bytes) -> tuple[int, bytes | None]:
        head = self._heads.get(author)
        if head is None:
            head = self._heads[author] = read_head(self._txn, self._tables, author)
        return head

    def invalid_from(self, author: bytes) -> int | None:
        if author not in self._invalid:
            self._invalid[author] = invalid_from(self._txn, self._tables, author)
        return self._invalid[author]

    def apply(self, message: Message) -> IngestResult:
        txn, tables = self._txn, self._tables
        author, seq = message.author, message.seq
        if self._blocked(author):
            return self._reject(message, Reason.BLOCKED_FEED, "this node blocks the feed")
        boundary = self.invalid_from(author)
        if boundary is not None and seq >= boundary:
            if txn.get(message.id, db=tables.evidence) is not None:
                return IngestResult(Outcome.DUPLICATE, message.id, message=message)
            return self._reject(
                message, Reason.FORKED_FEED, f"the feed is invalid from seq {boundary}"
            )
        head_seq, head_id = self.head(author)
        if seq <= head_seq:
            # Only here can the message be stored already: heads never pass a
            # boundary, and evidence is held only at or above one.
            if is_known(txn, tables, message.id):
                return IngestResult(Outcome.DUPLICATE, message.id, message=message)
            stored = self._bodies.message(txn, feed_key(author, seq))  # seq <= head: held
            return self._proven(check_proof([stored, message]), message)  # type: ignore[list-item]
        if seq > head_seq + 1:
            return self._reject(
                message, Reason.MISSING_PREVIOUS, f"seq {seq} but the feed ends at {head_seq}"
            )
        if seq > 1 and message.prev != head_id:
            return self._reject(
                message, Reason.CHAIN_MISMATCH, f"prev is not the id of stored seq {head_seq}"
            )
        position = feed_key(author, seq)
        self._body_writer.put(position, message)
        tables.ids.place(txn, message.id, self._body_writer.number_of(author), seq)
        for view in self._views:
            view.accepted(self.scope, message)
        self._heads[author] = (seq, message.id)
        self.stored[(author, seq)] = message
        self._dirty_heads.add(author)
        return IngestResult(Outcome.ACCEPTED, message.id, message=message)

    def add_proof(self, proof: Proof) -> dict[bytes, int]:
        """Apply a checked proof; returns the feeds it cut back, with their new boundaries."""
        lowered = record_proof(self._txn, self._tables, proof)
        for author, boundary in lowered.items():
            head_seq, _head_id = self.head(author)
            if head_seq >= boundary:
                self.named_by_cut |= truncate_feed(
                    self._txn, self._tables, author, boundary, head_seq, self._cut_one
                )
                new_head = boundary - 1
                raw = self._bodies.raw(self._txn, feed_key(author, new_head))
                self._heads[author] = (new_head, message_id(raw) if raw else None)
                self._dirty_heads.add(author)
                cut = [key for key in self.stored if key[0] == author and key[1] >= boundary]
                for key in cut:
                    del self.stored[key]
            self._invalid[author] = boundary
            self.invalidated[author] = boundary
        return lowered

    def purge(self, author: bytes) -> bool:
        """Take every stored message of `author` out (the node blocked the feed), each
        through the views like a proof's cut; False if none was held. The feed is not
        marked invalid: carried again, it is fetched again from seq 1."""
        head_seq, _head_id = self.head(author)
        if head_seq == 0:
            return False
        self.named_by_cut |= truncate_feed(
            self._txn, self._tables, author, 1, head_seq, self._cut_one
        )
        self._heads[author] = (0, None)
        self._dirty_heads.add(author)
        for key in [key for key in self.stored if key[0] == author]:
            del self.stored[key]
        self.purged.add(author)
        return True

    def _cut_one(self, message: Message) -> None:
        """Tell every view that `message` left the store (a proof cut its feed back)."""
        self.cut.append(message)
        for view in self._views:
            view.cut(self.scope, message)

    def finish(self) -> None:
        self.scope.finish()
        for author in self._dirty_heads:
            seq, msg_id = self._heads[author]
            if seq == 0:
                self._txn.delete(author, db=self._tables.heads)
            else:
                self._txn.put(author, head_value(seq, msg_id), db=self._tables.heads)  # type: ignore[arg-type]  # seq > 0: an id
        self._dirty_heads.clear()

    def _proven(self, proof: Proof, message: Message) -> IngestResult:
        lowered = self.add_proof(proof)
        if not lowered:
            return self._reject(message, Reason.FORKED_FEED, "its feed is invalid already")
        where = ", ".join(f"{author.hex()[:16]} from {seq}" for author, seq in lowered.items())
        return IngestResult(
            Outcome.FORK, message.id, Reason.FORKED_FEED, f"invalid: {where}", message=message
        )

    @staticmethod
    def _reject(message: Message, reason: Reason, detail: str) -> IngestResult:
        return IngestResult(Outcome.REJECTED, message.id, reason, detail, message=message)
