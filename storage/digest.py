"""Timeline digests: one short hash per timeline, so two nodes compare orders in one line.

Theory of operation
-------------------
A timeline's digest is BLAKE2b-256, personalised `DIGEST_PERSON`, of the
32-byte ids of its entries concatenated in timeline order (the spacetime's
sort ids are message ids too). Its count is the number of entries. Two
nodes holding the same messages in the same order get the same digest and
count, whatever their versions (each store numbers its own commands); one
entry missing, added or moved changes the digest. Ranks and claimed times
are left out: they follow from the messages, and the order is what must
converge (docs/TIMELINES.md).

The digest is not kept up to date at ingest: that would cost every write
a pass over the timeline, as `mov` and early `ins` shift what follows.
It is computed when asked, in one read transaction (a pass over the order
tree's leaves, `CHUNK` keys at a time: no list of the whole timeline is
held), and cached in memory by the timeline's version, which every change
to the order moves (its command log is append-only): asking again before
the timeline changes costs one lookup. The cache is per store and bounded
(`CACHE_SLOTS` timelines, least recently used first out).

`DigestReads` is a `FeedStore` mixin, like `TimelineReads`: it reads
`_env`, `_tables` and `_timeline_tables`.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass

from tanglenode.storage.timeline import TimelineReader
from tanglenode.storage.timelines import SPACETIME

__all__ = ["CACHE_SLOTS", "DIGEST_PERSON", "DigestReads", "TimelineDigest", "order_digest"]

DIGEST_PERSON = b"tangled-order-1"  # BLAKE2b personalisation (at most 16 bytes)
CHUNK = 4096  # order-tree keys read per step
CACHE_SLOTS = 1024
ID_BYTES = 32


@dataclass(frozen=True, slots=True)
class TimelineDigest:
    """A timeline's digest at `version`: `count` entries hashing to `digest` (32 bytes)."""

    version: int
    count: int
    digest: bytes

    @property
    def short(self) -> str:
        """The first 16 hex digits: what a person compares."""
        return self.digest.hex()[:16]


def order_digest(ids) -> bytes:
    """The digest of message ids in order (the definition; the store streams the same bytes)."""
    hasher = hashlib.blake2b(digest_size=32, person=DIGEST_PERSON)
    for msg_id in ids:
        hasher.update(msg_id)
    return hasher.digest()


EMPTY = TimelineDigest(0, 0, order_digest(()))
Named = tuple[bytes | None, str | None, TimelineDigest]  # root, tangle name, digest
_SPACETIMES = (SPACETIME, b"\x03" + SPACETIME)  # rank and causal-time order


class _Cache:
    """Digests by timeline name, each valid for the version it was computed at."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self._lock = threading.Lock()  # reads run in several worker threads
        self._found: OrderedDict[bytes, TimelineDigest] = OrderedDict()

    def get(self, name: bytes, version: int) -> TimelineDigest | None:
        with self._lock:
            found = self._found.get(name)
            if found is None or found.version != version:
                return None
            self._found.move_to_end(name)
            return found

    def put(self, name: bytes, digest: TimelineDigest) -> None:
        with self._lock:
            self._found[name] = digest
            self._found.move_to_end(name)
            while len(self._found) > self.slots:
                self._found.popitem(last=False)


class DigestReads:
    """The digest half of `FeedStore`'s reads; each public method is one read transaction."""

    _digest_cache: _Cache | None = None

    def _digests_cached(self) -> _Cache:
        if self._digest_cache is None:
            self._digest_cache = _Cache(CACHE_SLOTS)
        return self._digest_cache

    def timeline_digest(self, timeline: bytes) -> TimelineDigest:
        """The digest of `timeline` (a `timeline_name`) now; `UnknownTimeline` for a tangle
        with no timeline; an empty spacetime or joined view has the empty digest."""
        with self._env.begin() as txn:  # type: ignore[attr-defined]
            reader = TimelineReader(txn, self._timeline_tables)  # type: ignore[attr-defined]
            return self._digest_in(reader, timeline)

    def timeline_digests(self, limit: int) -> tuple[list[Named], bool]:
        """The spacetime's digest, then those of the first `limit` tangles' timelines (all
        members, rank order; by tangle key), as (root, tangle name, digest), the spacetime's
        root and name None, read at one moment; and whether more tangles were left out."""
        with self._env.begin() as txn:  # type: ignore[attr-defined]
            reader = TimelineReader(txn, self._timeline_tables)  # type: ignore[attr-defined]
            found: list[Named] = [(None, None, self._digest_in(reader, SPACETIME))]
            cursor = txn.cursor(db=self._timeline_tables.names)  # type: ignore[attr-defined]
            names: list[bytes] = []
            if cursor.set_range(b"\x01"):
                for name in cursor.iternext(values=False):
                    if name[:1] != b"\x01" or len(names) > limit:
                        break
                    names.append(bytes(name))
            for name in names[:limit]:
                root, tangle = name[1:33], name[34:].decode("utf-8", "replace")
                found.append((root, tangle, self._digest_in(reader, name)))
            return found, len(names) > limit

    def _digest_in(self, reader: TimelineReader, timeline: bytes) -> TimelineDigest:
        if not reader.exists(timeline):
            if timeline in _SPACETIMES:
                return EMPTY  # an empty store's
            if timeline[:1] == b"\x02" and reader.exists(b"\x01" + timeline[1:]):
                return EMPTY  # a joined view nothing joined yet
        version = reader.version(timeline)  # raises UnknownTimeline
        cache = self._digests_cached()
        cached = cache.get(timeline, version)
        if cached is not None:
            return cached
        hasher = hashlib.blake2b(digest_size=32, person=DIGEST_PERSON)
        count = 0
        while True:
            entries = reader.entries(timeline, count, count + CHUNK)
            hasher.update(b"".join(sort_id for _key, sort_id in entries))
            count += len(entries)
            if len(entries) < CHUNK:
                break
        digest = TimelineDigest(version, count, hasher.digest())
        cache.put(timeline, digest)
        return digest
