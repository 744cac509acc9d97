"""Invalid feeds: keeping proofs and cutting feeds back, inside one write transaction.

Theory of operation
-------------------
A proof (protocol.evidence: a fork) names its author and the seq from which
that feed is invalid. Boundaries only ever
fall, and every node ends with the lowest one any node found, because
proofs travel (node.gossip.session). When a proof lowers a feed's boundary:

1. `record_proof` keeps it: its row in `proofs`, its messages' bodies in
   `evidence`, its number in `proof-order` (storage.feeds.proof_order), and
   the feed's `invalid` row names it. A proof that no
   `invalid` row names any more is dropped with the bodies only it held,
   so a feed keeps one proof, the one that cut it lowest (of two that cut
   it at one seq, the one with the lower id, so the kept proof does not
   depend on which came first).
2. `truncate_feed` takes every stored message of the feed at or above the
   boundary out, newest first: out of `messages` and `message-ids`, then
   out of every derived view through the caller's `cut` (storage.registry:
   the spacetime and its tangles' timelines, where the engine lowers whoever
   ranked above it; the tangles' joined views, states and tips, where its
   joined descendants leave the joined view and whoever its presence made
   invalid is decided again). The caller moves the head back.
3. The processor forgets the feed's candidates past the boundary and wakes
   whoever waited on them (storage.feeds.processor).

The result depends only on which messages and proofs a node holds, never on
the order they came in: a node that saw the feed's later messages first
removes exactly what a node that saw the proof first never stored.
"""

from __future__ import annotations

from collections.abc import Callable

import msgpack

from tanglenode.protocol.evidence import Proof, ProofKind
from tanglenode.protocol.message import Message
from tanglenode.storage.feeds import proof_order
from tanglenode.storage.feeds.layout import (
    U64,
    Tables,
    feed_key,
    parse_stored,
)


def invalid_from(txn, tables: Tables, author: bytes) -> int | None:
    """The seq from which `author`'s feed is invalid, or None."""
    raw = txn.get(author, db=tables.invalid)
    return None if raw is None else U64.unpack(raw[:8])[0]


def invalid_feeds(txn, tables: Tables) -> dict[bytes, int]:
    return {bytes(key): U64.unpack(value[:8])[0] for key, value in txn.cursor(db=tables.invalid)}


def invalid_by_proof(txn, tables: Tables) -> dict[bytes, dict[bytes, int]]:
    """Proof id -> the feeds whose boundary it sets (author -> seq)."""
    found: dict[bytes, dict[bytes, int]] = {}
    for author, value in txn.cursor(db=tables.invalid):
        found.setdefault(bytes(value[8:]), {})[bytes(author)] = U64.unpack(value[:8])[0]
    return found


def kept_proofs(txn, tables: Tables) -> list[tuple[bytes, ProofKind, list[Message]]]:
    """(proof id, kind, messages) of every proof kept."""
    found = []
    for proof_id, raw in txn.cursor(db=tables.proofs):
        kind, ids = msgpack.unpackb(raw)
        messages = [parse_stored(txn.get(msg_id, db=tables.evidence)) for msg_id in ids]
        found.append((bytes(proof_id), ProofKind(kind), messages))
    return found


def kept_proof(txn, tables: Tables, proof_id: bytes) -> tuple[ProofKind, list[Message]] | None:
    """(kind, messages) of one kept proof, or None."""
    raw = txn.get(proof_id, db=tables.proofs)
    if raw is None:
        return None
    kind, ids = msgpack.unpackb(raw)
    return ProofKind(kind), [parse_stored(txn.get(msg_id, db=tables.evidence)) for msg_id in ids]


def record_proof(txn, tables: Tables, proof: Proof) -> dict[bytes, int]:
    """Keep `proof` where it lowers a boundary, or ties one with a lower proof id;
    returns author -> new boundary for the feeds it lowered."""
    lowered: dict[bytes, int] = {}
    replaced: set[bytes] = set()
    kept = False
    for author, seq in proof.invalid_from().items():
        current = txn.get(author, db=tables.invalid)
        if current is not None:
            current_seq, current_id = U64.unpack(current[:8])[0], bytes(current[8:])
            # Of two proofs at one seq the lower id wins: which one a node met first
            # must not decide which one it keeps.
            if (current_seq, current_id) <= (seq, proof.id):
                continue
            replaced.add(current_id)
        if current is None or current_seq > seq:
            lowered[author] = seq
        kept = True
        txn.put(author, U64.pack(seq) + proof.id, db=tables.invalid)
    if not kept:
        return lowered
    ids = [message.id for message in proof.messages]
    txn.put(proof.id, msgpack.packb([proof.kind.value, ids]), db=tables.proofs)
    proof_order.record(txn, tables, proof.id)
    for message in proof.messages:
        txn.put(message.id, message.without_content().raw, db=tables.evidence)  # headers prove
    for old in replaced - {proof.id}:
        _drop_if_unused(txn, tables, old)
    return lowered


def _drop_if_unused(txn, tables: Tables, proof_id: bytes) -> None:
    """Delete a proof no `invalid` row names, and the bodies no other proof holds."""
    raw = txn.get(proof_id, db=tables.proofs)
    if raw is None:
        return
    _kind, ids = msgpack.unpackb(raw)
    authors = {parse_stored(txn.get(msg_id, db=tables.evidence)).author for msg_id in ids}
    for author in authors:
        current = txn.get(author, db=tables.invalid)
        if current is not None and bytes(current[8:]) == proof_id:
            return
    txn.delete(proof_id, db=tables.proofs)
    proof_order.forget(txn, tables, proof_id)
    still_held: set[bytes] = set()
    for other in txn.cursor(db=tables.proofs).iternext(keys=False):
        still_held.update(msgpack.unpackb(other)[1])
    for msg_id in ids:
        if msg_id not in still_held:
            txn.delete(msg_id, db=tables.evidence)


def truncate_feed(
    txn,
    tables: Tables,
    author: bytes,
    boundary: int,
    head: int,
    cut: Callable[[Message], None],
) -> set[bytes]:
    """Remove the feed's stored messages `head` down to `boundary`, newest first, each
    handed to `cut` once it left `message-at`, `messages` and `message-ids` (the derived
    views); returns the feeds their timeframes named (whose heads, named by nothing
    else, come back)."""
    named: set[bytes] = set()
    for seq in range(head, boundary - 1, -1):
        message = tables.bodies.remove(txn, feed_key(author, seq))
        named.update(message.timeframe)
        tables.ids.forget(txn, message.id)
        cut(message)
    return named
