"""The tangles' joined views as a derived view (storage/feeds/derived.py).

The recipe and its rows are storage.views.joined's; `tangled check` runs the recipe
on the messages alone and compares (storage.views.joined_check). The joined order
(`joined-order`, optional, storage/view_choice.py) is a timeline per tangle
(`\x02` + tangle key) in the tables the rank engine writes, so `tangled reindex
joined` rebuilds the timelines with them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from tanglenode.protocol.message import Message
from tanglenode.storage.engine.timeline import TimelineWriter
from tanglenode.storage.feeds.derived import NO_HOOKS, ViewCost
from tanglenode.storage.views.joined import join_message, leave_message
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
    version = 1
    optional = False
    hooks = NO_HOOKS
    cost = ViewCost(79, 0.06, "tangle tips (what a reply names), member states, the tangle list")

    def __init__(self, ctx: StoreContext) -> None:
        self._ctx = ctx
        self._tables = TangleTables.of(ctx)

    def accepted(self, scope: WriteScope, message: Message) -> None:
        join_message(scope.txn, self._tables, self._order(scope), message)

    def forget(self, scope: WriteScope, message: Message) -> None:
        pass  # what it keeps of a message is in its header, which stays

    def cut(self, scope: WriteScope, message: Message) -> None:
        links = StoredLinks(scope.txn, self._ctx.tables)
        leave_message(
            scope.txn,
            self._tables,
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
        for prefix, db in ((b"s", tables.tangle_state), (b"p", tables.tangle_pending)):
            for key, value in txn.cursor(db=db):
                yield prefix + bytes(key), bytes(value)
        for key, value in txn.cursor(db=tables.tangle_tips):
            yield b"t" + bytes(key) + bytes(value), b""
        for key, value in txn.cursor(db=tables.tangle_joined):
            yield b"j" + bytes(key), bytes(value)
        yield from timeline_contents(txn, self._ctx.timeline_tables, b"\x02")
