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
It is computed when asked, in one read transaction, and cached in memory
by the timeline's version, which every change to the order moves (versions
only grow, a rebuild included): asking again before the timeline changes
costs one lookup. The cache is per store and bounded (`CACHE_SLOTS`
timelines, least recently used first out).

A full pass reads the order tree's leaves `CHUNK` keys at a time (no list
of the whole timeline is held). For a timeline longer than one chunk the
cache also keeps checkpoints: the hasher's state after every `CHUNK`
entries. Asked at a newer version, the digest reads the timeline's command
log since the cached version in the same transaction and finds the lowest
position any command touched (`ins pos`, `mov from to`, `del pos`). Each
command changes only positions at or above its own, so the entries below
that lowest position are the ones the checkpoints hashed: the pass resumes
from the last checkpoint at or below it, re-hashing the rest. An append at
the end, the spacetime's common change, costs the last chunk. If the log
since then is longer than an eighth of the timeline (`LOG_SHARE`), or no
longer holds every command since (its floor passed the cached version: the
log's retention dropped them, or a rebuild restarted it,
storage/engine/command_log.py), the pass is full: a digest is never
advanced through part of a log.
Checkpoints are bounded for the whole cache: at most `CHECKPOINT_BUDGET`
states (~460 bytes each, so ~3.7 MiB, enough for 33 million entries of
cached timelines); past it the least recently used timelines lose theirs
(keeping their digests), and a timeline that alone would exceed it keeps
none.

`DigestReads` is `store.digests`, an area over the store's `StoreContext`
(storage/context.py) that reads the timelines' tables; it holds the cache,
which `forget` drops.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tanglenode.storage.engine.timeline import Move
from tanglenode.storage.engine.timeline_reader import TimelineReader
from tanglenode.storage.errors import BelowLogFloor
from tanglenode.storage.views.timelines import SPACETIME

if TYPE_CHECKING:
    from tanglenode.storage.context import StoreContext

__all__ = ["CACHE_SLOTS", "DIGEST_PERSON", "DigestReads", "TimelineDigest", "order_digest"]

DIGEST_PERSON = b"tangled-order-1"  # BLAKE2b personalisation (at most 16 bytes)
CHUNK = 4096  # order-tree keys read per step, and entries between checkpoints
CACHE_SLOTS = 1024
CHECKPOINT_BUDGET = 8192  # hasher states the whole cache keeps
LOG_SHARE = 8  # more new commands than count // LOG_SHARE: a full pass
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


@dataclass(frozen=True, slots=True)
class _Cached:
    """A digest and its checkpoints: `checkpoints[i]` is the hasher after (i + 1) * CHUNK
    entries (copies, never updated; none for a timeline of at most one chunk)."""

    digest: TimelineDigest
    checkpoints: tuple = ()


class _Cache:
    """The last digest of each timeline, with its checkpoints, and how passes went."""

    def __init__(self, slots: int, budget: int) -> None:
        self.slots = slots
        self.budget = budget
        self._lock = threading.Lock()  # reads run in several worker threads
        self._found: OrderedDict[bytes, _Cached] = OrderedDict()
        self._states = 0  # checkpoints held, at most `budget`
        self.passes = {"full": 0, "resumed": 0}  # for tests and benches

    def get(self, name: bytes) -> _Cached | None:
        with self._lock:
            found = self._found.get(name)
            if found is not None:
                self._found.move_to_end(name)
            return found

    def put(self, name: bytes, cached: _Cached, resumed: bool) -> None:
        with self._lock:
            self.passes["resumed" if resumed else "full"] += 1
            old = self._found.get(name)
            if old is not None and old.digest.version > cached.digest.version:
                return  # another thread read a later moment
            if len(cached.checkpoints) > self.budget:
                cached = _Cached(cached.digest)
            self._states += len(cached.checkpoints) - (len(old.checkpoints) if old else 0)
            self._found[name] = cached
            self._found.move_to_end(name)
            while len(self._found) > self.slots:
                self._states -= len(self._found.popitem(last=False)[1].checkpoints)
            for other in list(self._found):  # least recently used first
                if self._states <= self.budget:
                    break
                held = self._found[other]
                if other != name and held.checkpoints:
                    self._found[other] = _Cached(held.digest)  # keeps its place
                    self._states -= len(held.checkpoints)

    def states(self) -> int:
        """How many checkpoints the cache holds."""
        with self._lock:
            return self._states

    def clear(self) -> None:
        """Drop every digest and checkpoint (`passes` goes on counting)."""
        with self._lock:
            self._found.clear()
            self._states = 0


class DigestReads:
    """`store.digests`: timelines' digests; each public method is one read transaction."""

    def __init__(self, ctx: StoreContext) -> None:
        self._ctx = ctx
        self.cache = _Cache(CACHE_SLOTS, CHECKPOINT_BUDGET)

    def forget(self) -> None:
        """Drop the cache: the next digest of each timeline is a full pass (what
        bench/digest.py times as "full")."""
        self.cache.clear()

    def timeline_digest(self, timeline: bytes) -> TimelineDigest:
        """The digest of `timeline` (a `timeline_name`) now; `UnknownTimeline` for a tangle
        with no timeline; an empty spacetime or joined view has the empty digest; `ViewOff`
        for a view this store does not keep."""
        self._ctx.views.require_timeline(timeline)
        with self._ctx.read() as txn:
            reader = TimelineReader(txn, self._ctx.timeline_tables)
            return self._digest_in(reader, timeline)

    def timeline_digests(self, limit: int) -> tuple[list[Named], bool]:
        """The spacetime's digest, then those of the first `limit` tangles' timelines (all
        members, rank order; by tangle key), as (root, tangle name, digest), the spacetime's
        root and name None, read at one moment; and whether more tangles were left out."""
        with self._ctx.read() as txn:
            reader = TimelineReader(txn, self._ctx.timeline_tables)
            found: list[Named] = [(None, None, self._digest_in(reader, SPACETIME))]
            cursor = txn.cursor(db=self._ctx.timeline_tables.names)
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
        cache = self.cache
        cached = cache.get(timeline)
        if cached is not None and cached.digest.version == version:
            return cached.digest
        kept = 0 if cached is None else _checkpoints_kept(reader, timeline, cached, version)
        checkpoints = list(cached.checkpoints[:kept]) if cached is not None else []
        if checkpoints:
            hasher = checkpoints[-1].copy()
        else:
            hasher = hashlib.blake2b(digest_size=32, person=DIGEST_PERSON)
        count = kept * CHUNK
        while True:
            entries = reader.entries(timeline, count, count + CHUNK)
            hasher.update(b"".join(sort_id for _key, sort_id in entries))
            count += len(entries)
            if len(entries) < CHUNK:
                break
            checkpoints.append(hasher.copy())
        digest = TimelineDigest(version, count, hasher.digest())
        found = _Cached(digest, tuple(checkpoints) if count > CHUNK else ())
        cache.put(timeline, found, resumed=cached is not None and kept > 0)
        return digest


def _checkpoints_kept(
    reader: TimelineReader, timeline: bytes, cached: _Cached, version: int
) -> int:
    """How many of `cached`'s checkpoints still hold at `version`: those at or below the
    lowest position the commands since touched; 0 (a full pass) when the log since is
    too long, or no longer holds them all (below its floor)."""
    since = cached.digest.version
    new = version - since
    if not cached.checkpoints or new <= 0 or new > cached.digest.count // LOG_SHARE:
        return 0
    try:
        commands = reader.commands_since(timeline, since, new)
    except BelowLogFloor:
        return 0
    if len(commands) != new:
        return 0
    lowest = min(min(c) if type(c) is Move else c.pos for c in commands)
    return min(lowest // CHUNK, len(cached.checkpoints))
