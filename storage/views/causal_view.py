"""The causal-time twins as a derived view (storage/feeds/derived.py).

Each timeline N (the spacetime, each tangle's) has a twin `\\x03 + N` holding
the same members in causal-time order (storage.engine.causal_timeline), added to and
removed from after N itself: the registry lists this view after
`TimelinesView`. `tangled check` recomputes every twin from the messages
(storage.views.causal_check).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from tanglenode.protocol.message import Message
from tanglenode.storage.feeds.derived import NO_HOOKS, Table, ViewCost
from tanglenode.storage.views.causal_check import check_causal
from tanglenode.storage.views.timelines import (
    TIMELINE_TABLES,
    StoredLinks,
    add_message_twins,
    remove_message_twins,
    timeline_contents,
)

if TYPE_CHECKING:
    from tanglenode.storage.context import StoreContext
    from tanglenode.storage.feeds.derived import Position, ProcessedStep, WriteScope


class CausalTimeView:
    """Each timeline's causal-time twin (storage.engine.causal_timeline)."""

    name = "causal-time"
    tables = (*TIMELINE_TABLES, Table(b"ct-nodes"), Table(b"ct-time"))
    version = 1
    optional = True
    hooks = NO_HOOKS
    cost = ViewCost(547, 0.17, "`--order causal-time` and its time windows")

    def __init__(self, ctx: StoreContext) -> None:
        self._ctx = ctx

    def accepted(self, scope: WriteScope, message: Message) -> None:
        add_message_twins(scope.timelines, message)

    def forget(self, scope: WriteScope, message: Message) -> None:
        pass  # what it keeps of a message is in its header, which stays

    def cut(self, scope: WriteScope, message: Message) -> None:
        links = StoredLinks(scope.txn, self._ctx.tables)
        remove_message_twins(scope.timelines, message, links.spacetime, links.tangle)

    def processed(self, scope: WriteScope, step: ProcessedStep) -> None:
        pass

    def check(self, txn: Any, messages: Mapping[Position, Message]) -> list[str]:
        return check_causal(txn, self._ctx.timeline_tables, dict(messages))

    def content(self, txn: Any) -> Iterator[tuple[bytes, bytes]]:
        return timeline_contents(txn, self._ctx.timeline_tables, b"\x03")
