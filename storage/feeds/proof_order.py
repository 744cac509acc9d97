"""The order proofs were kept in: a number per kept proof, so a reader takes only new ones.

Theory of operation
-------------------
Every gossip session passes new proofs on to its peer. Reading every kept
proof at each new one costs each session O(proofs held) per proof, so a
stranger forking throwaway feeds makes every session slower with each
proof (docs/PEERS.md, "Proofs"). `proof-order` numbers the kept proofs
in the order they were kept: `record` gives a proof the next number when
`record_proof` keeps it, `forget` takes it out when the proof is dropped, and
`after(n)` reads the proofs numbered past `n`, so a session that remembers
the last number it looked at reads each proof once.

One table holds both directions, told apart by a first byte: `n` and the
number (8 bytes, big-endian) -> proof id, `i` and the proof id -> number.
Numbers are never reused. A store kept by a build without the
table (or whose table does not match `proofs`) is numbered again at open
(`renumber`), in proof id order: numbers are local, nothing else reads them.
"""

from __future__ import annotations

from tanglenode.storage.feeds.layout import U64, Tables

BY_NUMBER, BY_ID = b"n", b"i"


def record(txn, tables: Tables, proof_id: bytes) -> int:
    """Give `proof_id` the next number (its own if it has one); the number."""
    held = txn.get(BY_ID + proof_id, db=tables.proof_order)
    if held is not None:
        return U64.unpack(held)[0]
    number = last(txn, tables) + 1
    txn.put(BY_NUMBER + U64.pack(number), proof_id, db=tables.proof_order)
    txn.put(BY_ID + proof_id, U64.pack(number), db=tables.proof_order)
    txn.put(LAST, U64.pack(number), db=tables.meta)
    return number


def forget(txn, tables: Tables, proof_id: bytes) -> None:
    held = txn.pop(BY_ID + proof_id, db=tables.proof_order)
    if held is not None:
        txn.delete(BY_NUMBER + bytes(held), db=tables.proof_order)


def last(txn, tables: Tables) -> int:
    """The highest number given so far (0: none)."""
    raw = txn.get(LAST, db=tables.meta)
    return 0 if raw is None else U64.unpack(raw)[0]


def after(txn, tables: Tables, number: int, limit: int) -> list[tuple[int, bytes]]:
    """(number, proof id) of at most `limit` kept proofs numbered past `number`, in order."""
    found: list[tuple[int, bytes]] = []
    cursor = txn.cursor(db=tables.proof_order)
    if not cursor.set_range(BY_NUMBER + U64.pack(number + 1)):
        return found
    for key, value in cursor:
        if key[:1] != BY_NUMBER or len(found) >= limit:
            break
        found.append((U64.unpack(key[1:])[0], bytes(value)))
    return found


def current(txn, tables: Tables) -> bool:
    """Whether every kept proof has a number and nothing else has one."""
    numbered = txn.stat(tables.proof_order)["entries"]
    return numbered == 2 * txn.stat(tables.proofs)["entries"]


def renumber(txn, tables: Tables) -> None:
    """Number every kept proof again, after the highest number given so far."""
    txn.drop(tables.proof_order, delete=False)
    for proof_id in txn.cursor(db=tables.proofs).iternext(values=False):
        record(txn, tables, bytes(proof_id))


LAST = b"proof-order-last"  # in `meta`: the highest number given
