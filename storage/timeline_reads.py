"""`store.timelines`: orders, versions, placements, command logs, finality.

Each public method is one read transaction, as every store call is.
Finality is explained in docs/TIMELINES.md ("Finality"). A command log holds
only the commands after its floor (storage/engine/command_log.py): a read
of it from below the floor raises `BelowLogFloor`, found in the same
transaction as the rest of the read.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tanglenode.protocol.identity import tag_of
from tanglenode.protocol.message import Message
from tanglenode.storage.context import StoreContext
from tanglenode.storage.engine.causal_window import window
from tanglenode.storage.engine.timeline import Command, Insert
from tanglenode.storage.engine.timeline_reader import Placement, TimelineReader
from tanglenode.storage.feed_reads import message_by_id
from tanglenode.storage.feeds.invalidation import invalid_from
from tanglenode.storage.feeds.layout import split_feed_key, split_head_value
from tanglenode.storage.views.joined import MemberState, member_state, state_names, tangle_key_of
from tanglenode.storage.views.tangles import TangleTables
from tanglenode.storage.views.timelines import (
    SPACETIME,
    spacetime_links,
    spacetime_ref,
    timeline_name,
    view_timeline,
)

# Their refs are positions and tags (storage.views.timelines.spacetime_ref), not ids.
SPACETIMES = (SPACETIME, view_timeline(SPACETIME, order="causal-time"))


@dataclass(frozen=True, slots=True)
class WriterPast:
    """What every future message of one writer follows in a timeline: each of `all_of`
    and at least one of `one_of` (see `TimelineReads.writers_final`)."""

    all_of: tuple[bytes, ...]
    one_of: tuple[bytes, ...]


class TimelineReads:
    """`store.timelines`: the timelines' reads (see the module docstring)."""

    def __init__(self, ctx: StoreContext) -> None:
        self._ctx = ctx

    def _reader(self, txn, timeline: bytes) -> TimelineReader:
        """A reader of `timeline`; `ViewOff` if it belongs to a view this store does not keep."""
        self._ctx.views.require_timeline(timeline)
        return TimelineReader(txn, self._ctx.timeline_tables)

    def held(self) -> list[tuple[bytes, bytes | None, str | None]]:
        """(timeline name, tangle root, tangle name) of every timeline; the spacetime's root and
        name are None."""
        found: list[tuple[bytes, bytes | None, str | None]] = []
        with self._ctx.read() as txn:
            for name in txn.cursor(db=self._ctx.timeline_tables.names).iternext(values=False):
                name = bytes(name)
                if name == SPACETIME:
                    found.append((name, None, None))
                elif name[:1] == b"\x01" and len(name) > 34:
                    found.append((name, name[1:33], name[34:].decode()))
        return found

    def writers_final(self, timeline: bytes, writers: Iterable[WriterPast]) -> int:
        """How many leading positions of `timeline` none of `writers` can change.

        Each writer's future messages follow what its `WriterPast` names, so
        they rank above it (see `_timeline_final` for the rest of the bound).
        """
        writers = list(writers)

        def writers_bound(_txn, reader: TimelineReader) -> int | None:
            bounds = []
            for writer in writers:
                after = [reader.member_rank(timeline, i) for i in writer.all_of]
                one_of = [reader.member_rank(timeline, i) for i in writer.one_of]
                bound = min(one_of) + 1 if one_of else 0
                if after:
                    bound = max(bound, max(after) + 1)
                bounds.append(bound)
            return min(bounds) if bounds else None

        return self._timeline_final(timeline, writers_bound)

    timeline_name = staticmethod(timeline_name)

    def timeline(
        self, timeline: bytes, start: int = 0, stop: int | None = None
    ) -> list[tuple[int, bytes]]:
        """(rank, message id) at positions start..stop-1; [] for an empty spacetime."""
        return self.timeline_at(timeline, start, stop)[1]

    def timeline_at(
        self, timeline: bytes, start: int = 0, stop: int | None = None, *, states: bool = False
    ) -> tuple[int, list[tuple[int, bytes]]]:
        """The version and the entries start..stop-1 of one consistent moment.

        With `states`, an entry of a tangle's timeline gets a third item, its
        state in the joined view: "joined", "pending" or "invalid" (storage.views.joined).
        """
        with self._ctx.read() as txn:
            reader = self._reader(txn, timeline)
            if not self._known(reader, timeline):
                return 0, []
            entries = reader.entries(timeline, start, stop)
            key = tangle_key_of(timeline)
            if states and key is not None:
                names = state_names(
                    txn, TangleTables.of(self._ctx), key, (msg_id for _, msg_id in entries)
                )
                entries = [(*entry, state) for entry, state in zip(entries, names, strict=True)]
            return reader.version(timeline), entries

    def timeline_tail(
        self, timeline: bytes, count: int
    ) -> tuple[int, int, list[tuple[int, bytes, str]]]:
        """The version, the position of the first entry, and the last `count` entries of
        tangle timeline `timeline` with their joined-view states, of one moment; a tangle not
        seen yet is (0, 0, [])."""
        with self._ctx.read() as txn:
            reader = self._reader(txn, timeline)
            key = tangle_key_of(timeline)
            if key is None or not reader.exists(timeline):
                return 0, 0, []
            size = reader.size(timeline)
            start = max(0, size - count)
            entries = reader.entries(timeline, start, size)
            names = state_names(
                txn, TangleTables.of(self._ctx), key, (msg_id for _, msg_id in entries)
            )
            found = [(*entry, state) for entry, state in zip(entries, names, strict=True)]
            return reader.version(timeline), start, found

    def member_states(self, timeline: bytes, members: list[bytes]) -> list[str]:
        """The joined-view state ("joined", "pending" or "invalid") of each of `members` in
        tangle timeline `timeline`, in one transaction; [] for a timeline not a tangle's."""
        key = tangle_key_of(timeline)
        if key is None:
            return []
        with self._ctx.read() as txn:
            return state_names(txn, TangleTables.of(self._ctx), key, members)

    def timeline_window(
        self,
        timeline: bytes,
        from_time: int,
        to_time: int,
        mode: str = "implied",
        start: int = 0,
        limit: int | None = None,
    ) -> tuple[int, int | None, list[tuple[int, bytes]]]:
        """The time window over causal-time timeline `timeline`: the version, the
        position of the first entry (None in strict mode) and (time, id) entries
        (storage.engine.causal_window); raises `UnknownTimeline`, `WindowTooLarge`."""
        with self._ctx.read() as txn:
            reader = self._reader(txn, timeline)
            if not self._known(reader, timeline):
                return 0, None, []
            version = reader.version(timeline)
            found = window(
                txn, self._ctx.timeline_tables, timeline, from_time, to_time, mode, start, limit
            )
            return version, *found

    def timeline_version(self, timeline: bytes) -> int:
        """How many commands the timeline's log holds."""
        with self._ctx.read() as txn:
            reader = self._reader(txn, timeline)
            return reader.version(timeline) if self._known(reader, timeline) else 0

    def timeline_floor(self, timeline: bytes) -> int:
        """The version the timeline's command log starts after: a subscriber at a lower one
        starts from a snapshot (0 until the log's retention trimmed it or `tangled reindex`
        restarted it)."""
        with self._ctx.read() as txn:
            reader = self._reader(txn, timeline)
            return reader.floor(timeline) if reader.exists(timeline) else 0

    def timeline_placement(self, timeline: bytes, msg_id: bytes) -> Placement | None:
        """Position and rank of a message in a timeline, None if it is not a member."""
        with self._ctx.read() as txn:
            ref = self._ref(txn, timeline, msg_id)
            reader = self._reader(txn, timeline)
            if ref is None or not reader.exists(timeline):
                return None
            return reader.placement(timeline, bytes(ref))

    def timeline_member(
        self, timeline: bytes, msg_id: bytes
    ) -> tuple[Placement, MemberState | None] | None:
        """A member's placement and, in a tangle's timeline, its state; None if not a member."""
        with self._ctx.read() as txn:
            reader = self._reader(txn, timeline)
            ref = self._ref(txn, timeline, msg_id)
            if ref is None or not reader.exists(timeline):
                return None
            placement = reader.placement(timeline, bytes(ref))
            key = tangle_key_of(timeline)
            if placement is None or key is None:
                return placement and (placement, None)
            return placement, member_state(txn, TangleTables.of(self._ctx), key, msg_id)

    def _ref(self, txn, timeline: bytes, msg_id: bytes) -> bytes | None:
        """The ref a message has in `timeline` (None for a spacetime if it is not held)."""
        if timeline not in SPACETIMES:
            return msg_id
        position = self._ctx.tables.ids.position(txn, msg_id)
        return None if position is None else bytes(position) + tag_of(msg_id)

    def timeline_commands(self, timeline: bytes, since: int, limit: int = 10_000) -> list[Command]:
        """The commands after version `since`, oldest first; `BelowLogFloor` below the floor."""
        with self._ctx.read() as txn:
            reader = self._reader(txn, timeline)
            if not self._known(reader, timeline):
                return []
            return reader.commands_since(timeline, since, limit)

    @staticmethod
    def _known(reader: TimelineReader, timeline: bytes) -> bool:
        """False for the spacetime of an empty store and for the joined view of a tangle
        none of whose members joined yet (both empty); an unknown tangle raises later."""
        if timeline == SPACETIME:
            return reader.exists(SPACETIME)
        if timeline[:1] == b"\x02" and not reader.exists(timeline):
            return not reader.exists(b"\x01" + timeline[1:])
        return True

    def spacetime_final(self) -> int:
        """The finality watermark: how many leading spacetime positions are final.

        No future message of a known, unforked feed can change the entries
        before it (docs/TIMELINES.md, "Finality"). A future message of feed f
        follows f's head, so it ranks above that head.
        """

        def heads_bound(txn, reader: TimelineReader) -> int | None:
            ranks = self._head_ranks(txn, reader)
            return min(ranks) + 1 if ranks else None

        return self._timeline_final(SPACETIME, heads_bound, self._may_be_raised)

    def _may_be_raised(self, txn, reader: TimelineReader, ref: bytes) -> bool:
        """Whether a spacetime member's missing links may still arrive: not if each names
        an invalid feed at or past its boundary (those messages are refused for good)."""
        message = self._ctx.tables.bodies.message(txn, ref[:40])
        for link in spacetime_links(message):
            if reader.member_rank(SPACETIME, link) is not None:
                continue
            feed, link_seq = split_feed_key(link[:40])
            boundary = invalid_from(txn, self._ctx.tables, feed)
            if boundary is None or link_seq < boundary:
                return True
        return False

    def _head_ranks(self, txn, reader: TimelineReader) -> list[int]:
        """Spacetime ranks of the heads of every feed without fork evidence."""
        ranks = []
        for author, value in txn.cursor(db=self._ctx.tables.heads):
            if invalid_from(txn, self._ctx.tables, bytes(author)) is not None:
                continue  # its next messages will be refused
            seq, head_id = split_head_value(value)
            rank = reader.member_rank(SPACETIME, spacetime_ref(bytes(author), seq, head_id))
            if rank is not None:
                ranks.append(rank)
        return ranks

    def _timeline_final(self, timeline: bytes, writers_bound, may_be_raised=None) -> int:
        """How many leading positions of `timeline` nothing to come can change.

        `writers_bound(txn, reader)` gives the least rank any future message
        of the writers that count can take (None: none can come). A member
        still waiting for a missing message may be raised, so the least rank
        of such a member bounds too; the entries ranked below both are final.
        `may_be_raised(txn, reader, ref)`, if given, leaves out the waiting
        members whose missing messages can never come.
        """
        with self._ctx.read() as txn:
            reader = self._reader(txn, timeline)
            if not reader.exists(timeline):
                return 0
            bounds = [
                rank
                for ref, rank in reader.pending_members(timeline)
                if may_be_raised is None or may_be_raised(txn, reader, ref)
            ]
            writers = writers_bound(txn, reader)
            if writers is not None:
                bounds.append(writers)
            if not bounds:
                return reader.rank_boundary(timeline, 0xFFFF_FFFF)  # every entry
            return reader.rank_boundary(timeline, min(bounds))

    # -- pages: one IPC reply or stream event each ------------------------------------------

    def timeline_log(
        self, timeline: bytes, since: int, limit: int = 10_000
    ) -> tuple[int, list[Command]]:
        """The head version and up to `limit` commands after version `since`, oldest first;
        `BelowLogFloor` when `since` is below the log's floor."""
        with self._ctx.read() as txn:
            reader = self._reader(txn, timeline)
            if not self._known(reader, timeline):
                return 0, []
            return reader.version(timeline), reader.commands_since(timeline, since, limit)

    def timeline_updates(
        self, timeline: bytes, since: int, limit: int = 1000, max_bytes: int | None = None
    ) -> tuple[int, list[tuple[Command, Message | None]]]:
        """The head version and up to `limit` commands after `since`, each insert with its
        message (None if no longer held); a timeline not created yet has none: (0, []);
        `BelowLogFloor` when `since` is below the log's floor.

        The page stops early once the inserted messages' signed bytes reach `max_bytes`.
        """
        with self._ctx.read() as txn:
            reader = self._reader(txn, timeline)
            if not reader.exists(timeline):
                return 0, []
            head = reader.version(timeline)
            updates: list[tuple[Command, Message | None]] = []
            size = 0
            for command in reader.commands_since(timeline, since, limit):
                message = None
                if isinstance(command, Insert):
                    message = message_by_id(txn, self._ctx.tables, command.id)
                    size += len(message.raw) if message else 0
                updates.append((command, message))
                if max_bytes is not None and size >= max_bytes:
                    break
        return head, updates
