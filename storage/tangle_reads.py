"""The tangles a store holds, listed a page at a time from rows kept anyway.

Theory of operation
-------------------
Every tangle (name, root) has a rank-order timeline named `\\x01` + its
tangle key (root id + one length byte + name) in `tl-names`, created with
its first member. The `\\x01` range of `tl-names`, in key order (root id,
then name), is therefore the list of tangles held, and nothing new is
written at ingest to list them. A tangle's figures come from rows its
timelines keep already, a few reads each:

- `messages`: the size of its timeline (the `tl-meta` row): every member,
  whatever its state in the joined view;
- `joined`: its count of joined members (`tangle-joined`, storage.views.joined);
  `pending`: the members not joined to the root, waiting for a message
  they name or never joining (invalid for the tangle), `messages - joined`;
- `version`: the timeline's version, which moves whenever the tangle does;
- `last`: the newest claimed time of a member, the last row of its
  causal-time twin's time index (`ct-time`, one cursor seek) where the
  store keeps the causal-time view; else the newest claimed time among
  its last `RECENT` members in rank order (a tree slice and as many body
  reads): every later message of an honest writer ranks above what it
  saw, so the newest members are near the end;
- `author`: the root's author when the root is held (`message-ids`).

A page reads at most `limit` tangles and looks at at most `scan` names
(with a `name` filter the names of other tangles are looked at and
skipped), so one call costs the same whatever the store holds. `next` is
the tangle the following page starts after: the last one looked at, not
necessarily the last one returned. There is no total: counting would read
every name.
"""

from __future__ import annotations

from dataclasses import dataclass

from tanglenode.protocol.message import Message
from tanglenode.storage.context import StoreContext
from tanglenode.storage.engine.timeline import lookup_meta
from tanglenode.storage.engine.timeline_reader import TimelineReader
from tanglenode.storage.feed_reads import message_by_id
from tanglenode.storage.feeds.layout import U32, U64, tangle_key
from tanglenode.storage.sightings import RootClue, root_clue
from tanglenode.storage.views.tangles import TangleTables, tips_of
from tanglenode.storage.views.timelines import tangle_timeline, view_timeline

TANGLE_PREFIX = b"\x01"  # rank-order tangle timelines in `tl-names` (storage.views.timelines)
SCAN = 20_000  # names of `tl-names` one page looks at, at most
_ID = 32
RECENT = 16  # members looked at for `last` without the causal-time view
_TIME = slice(4, 12)  # ct-time keys: timeline number (u32) + time (u64 BE) + sort id


@dataclass(frozen=True, slots=True)
class TangleInfo:
    """One tangle as `tangle_page` lists it."""

    root: bytes
    name: str
    messages: int  # members, whatever their state
    joined: int  # members joined to the root
    version: int  # the tangle timeline's version (commands so far)
    last: int | None  # the newest claimed time (ms) of a member
    author: bytes | None  # the root's author; None when the root is not held

    @property
    def pending(self) -> int:
        """Members not joined: waiting for what they name, or invalid for the tangle."""
        return self.messages - self.joined


Cursor = tuple[bytes, str]  # (root, name): a page starts after this tangle


class TangleReads:
    """`store.tangles`: the tangles held, a page at a time; a tangle's tips and messages."""

    def __init__(self, ctx: StoreContext) -> None:
        self._ctx = ctx
        self._tangles = TangleTables.of(ctx)

    def tangle_tips(self, root: bytes, name: str) -> list[bytes]:
        with self._ctx.read() as txn:
            return tips_of(txn, self._tangles, root, name)

    def root_clue(self, root: bytes, name: str) -> RootClue:
        """Who wrote `root`, a tangle root without tips here, as far as the store says
        (storage/sightings.py)."""
        return root_clue(self._ctx, root, name)

    def group_messages(self, root: bytes, tangle: str = "group") -> dict[bytes, Message]:
        """Every message of the timeline of tangle (`tangle`, `root`), in timeline order.

        Raises `UnknownTimeline` when the store holds no such tangle.
        """
        with self._ctx.read() as txn:
            reader = TimelineReader(txn, self._ctx.timeline_tables)
            entries = reader.entries(tangle_timeline(root, tangle))
            return {
                msg_id: message_by_id(txn, self._ctx.tables, msg_id) for _rank, msg_id in entries
            }

    def tangle_page(
        self,
        after: Cursor | None = None,
        limit: int = 100,
        *,
        name: str | None = None,
        scan: int = SCAN,
    ) -> tuple[list[TangleInfo], Cursor | None]:
        """Up to `limit` tangles after `after` (named `name`, if given), in (root, name)
        order, and the cursor of the next page (None after the last)."""
        found: list[TangleInfo] = []
        limit, scan = max(1, limit), max(1, scan)
        start = TANGLE_PREFIX + (tangle_key(*after) if after is not None else b"")
        with self._ctx.read() as txn:
            cursor = txn.cursor(db=self._ctx.timeline_tables.names)
            if not cursor.set_range(start):
                return found, None
            looked = 0
            reached: Cursor | None = None
            for key in cursor.iternext(values=False):
                if key[:1] != TANGLE_PREFIX:
                    return found, None
                key = bytes(key)
                if key == start or len(key) <= 2 + _ID:
                    continue  # `after` itself (or a name no tangle has)
                if looked >= scan or len(found) >= limit:
                    return found, reached
                looked += 1
                root, tangle = key[1 : 1 + _ID], key[2 + _ID :].decode("utf-8", "replace")
                reached = (root, tangle)
                if name is None or tangle == name:
                    found.append(self._tangle_info(txn, key, root, tangle))
        return found, None

    def _tangle_info(self, txn, timeline: bytes, root: bytes, name: str) -> TangleInfo:
        tables = self._ctx.timeline_tables
        meta = lookup_meta(txn, tables, timeline)
        assert meta is not None  # the name came from `tl-names`
        joined = txn.get(timeline[1:], db=self._tangles.tangle_joined)
        held = self._ctx.tables.ids.position(txn, root)
        return TangleInfo(
            root=root,
            name=name,
            messages=meta.tree.size,
            joined=0 if joined is None else U32.unpack(joined)[0],
            version=meta.version,
            last=self._last_time(txn, timeline, meta.tree.size),
            author=None if held is None else bytes(held[:_ID]),
        )

    def _last_time(self, txn, timeline: bytes, size: int) -> int | None:
        """The newest claimed time of the tangle's members (see the module's theory)."""
        tables = self._ctx.timeline_tables
        if self._ctx.views.keeps("causal-time"):
            return _newest_time(txn, tables, view_timeline(timeline, "all", "causal-time"))
        recent = TimelineReader(txn, tables).order(timeline, max(0, size - RECENT), size)
        times = [
            message.timestamp
            for msg_id in recent
            if (message := message_by_id(txn, self._ctx.tables, msg_id)) is not None
        ]
        return max(times, default=None)


def _newest_time(txn, tables, twin: bytes) -> int | None:
    """The highest claimed time in the time index of causal-time timeline `twin`."""
    number = txn.get(twin, db=tables.names)
    if number is None:
        return None
    (value,) = U32.unpack(number)
    cursor = txn.cursor(db=tables.causal_times)
    following = U32.pack(value + 1) if value < 0xFFFFFFFF else None
    if following is not None and cursor.set_range(following):
        found = cursor.prev()
    else:
        found = cursor.last()
    if not found or cursor.key()[:4] != number:
        return None
    return U64.unpack(cursor.key()[_TIME])[0]
