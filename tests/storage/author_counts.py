"""A derived view made only to show what adding one takes: this module, and one line
that registers it (`COUNTING`, below; tests/storage/test_view_plugins.py uses it).

It keeps, for each author, how many of its messages the store holds, in a
table of its own it declares (`COUNTS`): the store opens that table, feeds
the view every message it stores or cuts, `tangled reindex author-counts`
rebuilds it, and a store that built another `version` of it rebuilds it
when it opens. Nothing else of the store names it.

    test-author-counts   author -> count (u64 BE)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from tanglenode.protocol.message import Message
from tanglenode.storage.context import StoreContext
from tanglenode.storage.feeds.derived import (
    NO_HOOKS,
    Position,
    ProcessedStep,
    Table,
    ViewCost,
    WriteScope,
)
from tanglenode.storage.registry import REGISTRY

COUNTS = Table(b"test-author-counts")


class AuthorCountsView:
    """How many messages of each author the store holds."""

    name = "author-counts"
    tables = (COUNTS,)
    version = 1
    optional = False
    cost = ViewCost(40, 0.0, "the messages each author has stored (a test)")
    hooks = NO_HOOKS

    def __init__(self, ctx: StoreContext) -> None:
        self._db = ctx.view_tables[COUNTS.name]

    def accepted(self, scope: WriteScope, message: Message) -> None:
        self._add(scope.txn, message.author, 1)

    def cut(self, scope: WriteScope, message: Message) -> None:
        self._add(scope.txn, message.author, -1)

    def forget(self, scope: WriteScope, message: Message) -> None:
        pass  # its header stays: still held

    def processed(self, scope: WriteScope, step: ProcessedStep) -> None:
        pass

    def check(self, txn: Any, messages: Mapping[Position, Message]) -> list[str]:
        expected = Counter(author for author, _seq in messages)
        found = {author: count for author, count in self._rows(txn)}
        return [
            f"author-counts: {author.hex()[:8]} counted {found.get(author, 0)}, holds {count}"
            for author, count in expected.items()
            if found.get(author, 0) != count
        ] + [f"author-counts: {a.hex()[:8]} counted, holds none" for a in found.keys() - expected]

    def content(self, txn: Any) -> Iterator[tuple[bytes, bytes]]:
        for author, count in self._rows(txn):
            yield author, count.to_bytes(8, "big")

    def _rows(self, txn: Any) -> Iterator[tuple[bytes, int]]:
        for key, value in txn.cursor(db=self._db):
            yield bytes(key), int.from_bytes(value, "big")

    def _add(self, txn: Any, author: bytes, change: int) -> None:
        raw = txn.get(author, db=self._db)
        count = (int.from_bytes(raw, "big") if raw is not None else 0) + change
        if count:
            txn.put(author, count.to_bytes(8, "big"), db=self._db)
        else:
            txn.delete(author, db=self._db)


COUNTING = replace(REGISTRY, views=(*REGISTRY.views, AuthorCountsView))
"""The store's registry with this view added: the one line a new view takes."""
