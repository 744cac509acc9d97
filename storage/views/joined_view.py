"""The tangles' joined views as a derived view (storage/feeds/derived.py).

The recipe and its rows are storage.views.joined's; `tangled check` runs the recipe
on the messages alone and compares (storage.views.joined_check). The joined order
(`joined-order`, optional, storage/view_choice.py) is a timeline per tangle
(`\x02` + tangle key) in the tables the rank engine writes, so `tangled reindex
joined` rebuilds the timelines with them.

Tables (key layouts in storage.views.joined and storage.views.tangles):

    tangle-state    tangle no. (u32) + member ref no. (u32) -> state
                    (the tangle's timeline number in `tl-names`, the member id's
                    ref number in `tl-refs`: each tangle's rows appended at its end)
    tangle-pending  previous id + tangle key + member id -> ""
    tangle-tips     tangle key -> id (dupsort)
    tangle-joined   tangle key -> u32

Versions: 1, `tangle-state` keyed by tangle key + member id; 2, by the numbers
above (a store at 1 rebuilds the view, with the timelines, when it opens).
Within a write transaction the state rows go through one `StateRows`, the
timeline writer's companion: read once, written through.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from tanglenode.protocol.message import Message
from tanglenode.storage.engine.timeline import TimelineWriter
from tanglenode.storage.feeds.derived import NO_HOOKS, ViewCost
from tanglenode.storage.views.joined import StateRows, join_message, leave_message, state_rows
from tanglenode.storage.views.joined_check import check_tangles
from tanglenode.storage.views.tangles import TANGLE_TABLES, TangleTables
from tanglenode.storage.views.timelines import TIMELINE_TABLES, StoredLinks, timeline_contents

JOINED_ORDER = "joined-order"  # the optional view of the joined members' timelines

if TYPE_CHECKING:
    from tanglenode.storage.context import StoreContext
    from tanglenode.storage.feeds.derived import Position, ProcessedStep, WriteScope


class JoinedView:
    """The tangles' joined views, states, waiting rows and tips (this module's recipe)."""

    name = "joined"
    tables = (
        *TIMELINE_TABLES,
        *TANGLE_TABLES,
    )
    version = 2
    optional = False
    hooks = NO_HOOKS
    cost = ViewCost(20, 0.06, "tangle tips (what a reply names), member states, the tangle list")

    def __init__(self, ctx: StoreContext) -> None:
        self._ctx = ctx
        self._tables = TangleTables.of(ctx)
        # The kind of the timeline writer's companion that keeps this view's state rows for
        # its transaction (one object: the writer finds its companion by it).
        self._rows_kind = partial(StateRows, self._tables)

    def _rows(self, scope: WriteScope) -> StateRows:
        """The state rows of `scope`'s transaction (storage.views.joined.StateRows)."""
        rows: StateRows = scope.timelines.companion(self._rows_kind)
        return rows

    def accepted(self, scope: WriteScope, message: Message) -> None:
        join_message(self._rows(scope), self._order(scope), message)

    def forget(self, scope: WriteScope, message: Message) -> None:
        pass  # what it keeps of a message is in its header, which stays

    def cut(self, scope: WriteScope, message: Message) -> None:
        links = StoredLinks(scope.txn, self._ctx.tables)
        leave_message(
            self._rows(scope),
            self._order(scope),
            scope.reader,
            message,
            links.tangle_member,
        )

    def _order(self, scope: WriteScope) -> TimelineWriter | None:
        """The writer of the joined order's timelines, where the store keeps them."""
        return scope.timelines if self._ctx.views.keeps(JOINED_ORDER) else None

    def processed(self, scope: WriteScope, step: ProcessedStep) -> None:
        pass  # joining follows arrival, not processing

    def check(self, txn: Any, messages: Mapping[Position, Message]) -> list[str]:
        problems: list[str] = []
        tables = self._tables
        check_tangles(
            txn,
            tables,
            self._ctx.timeline_tables,
            list(messages.values()),
            problems,
            orders=self._ctx.views.keeps(JOINED_ORDER),
        )
        return problems

    def content(self, txn: Any) -> Iterator[tuple[bytes, bytes]]:
        tables = self._tables
        for key, value in state_rows(txn, tables):  # by tangle key and id, not by numbers
            yield b"s" + key, value
        for key, value in txn.cursor(db=tables.tangle_pending):
            yield b"p" + bytes(key), bytes(value)
        for key, value in txn.cursor(db=tables.tangle_tips):
            yield b"t" + bytes(key) + bytes(value), b""
        for key, value in txn.cursor(db=tables.tangle_joined):
            yield b"j" + bytes(key), bytes(value)
        yield from timeline_contents(txn, self._ctx.timeline_tables, b"\x02")
