"""The names feeds give themselves as a derived view (storage/feeds/derived.py).

The index and its rules are storage.views.abouts' (kept light: the CLI reads names
with it and never loads LMDB); this module holds what the store calls.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from tanglenode.protocol.identity import feed_text
from tanglenode.protocol.message import Message
from tanglenode.storage.feeds.derived import Table, ViewCost, ViewHooks
from tanglenode.storage.feeds.invalidation import invalid_feeds
from tanglenode.storage.views.abouts import (
    ABOUTS_DB,
    ROW_KEY_LEN,
    about_key,
    about_name,
    drop_first_layout,
    index_about,
    split_about_key,
)

if TYPE_CHECKING:
    from tanglenode.storage.context import StoreContext
    from tanglenode.storage.feeds.derived import Position, ProcessedStep, WriteScope


class AboutsView:
    """`about-names`: the names feeds give themselves (see the module's theory of operation)."""

    name = "abouts"
    tables = (Table(ABOUTS_DB),)
    # 2: rebuilt once in each store from before views had versions, whose older messages
    # were indexed by a backfill that may not have run to its end
    version = 2
    optional = False
    cost = ViewCost(0, 0.005, "the names feeds give themselves, shown everywhere")

    def __init__(self, ctx: StoreContext) -> None:
        self._ctx = ctx
        self._db = ctx.view_tables[ABOUTS_DB]
        self.hooks = ViewHooks(opened=lambda: drop_first_layout(ctx.env, ctx.tables.meta))

    def accepted(self, scope: WriteScope, message: Message) -> None:
        index_about(scope.txn, self._db, message.author, message.seq, message.content)

    def cut(self, scope: WriteScope, message: Message) -> None:
        """The message left the store (a proof cut its feed, or the node blocked it): its
        row goes (a reader would stop at a proof's boundary anyway, but a blocked feed has
        none)."""
        scope.txn.delete(about_key(message.author, message.seq), db=self._db)

    forget = cut  # its content went (erased, purged): the name it gave goes with it

    def processed(self, scope: WriteScope, step: ProcessedStep) -> None:
        pass

    def check(self, txn: Any, messages: Mapping[Position, Message]) -> list[str]:
        """`about-names` holds one row per own `about` held, as ingest indexes it.

        A row at or past its feed's invalid boundary names it by a message cut
        since (readers skip it): it cannot be checked and is not reported,
        whatever the messages still held say.
        """
        expected: dict[tuple[bytes, int], bytes] = {}
        for (author, seq), message in messages.items():
            name = about_name(message.content, author)
            if name is not None:
                expected[(author, seq)] = name.encode()
        boundaries = invalid_feeds(txn, self._ctx.tables)
        problems = []
        for key, value in txn.cursor(db=self._db):
            if len(key) != ROW_KEY_LEN:
                problems.append(f"about-names holds a malformed key {bytes(key).hex()}")
                continue
            author, seq = split_about_key(key)
            if expected.pop((author, seq), None) == bytes(value):
                continue
            if seq < boundaries.get(author, seq + 1):
                problems.append(
                    f"about-names row {feed_text(author)}:{seq} is not the own about held there"
                )
        for author, seq in expected:
            problems.append(f"the about at {feed_text(author)}:{seq} is missing from about-names")
        return problems

    def content(self, txn: Any) -> Iterator[tuple[bytes, bytes]]:
        boundaries = invalid_feeds(txn, self._ctx.tables)
        for key, value in txn.cursor(db=self._db):
            author, seq = split_about_key(key)
            if seq < boundaries.get(author, seq + 1):
                yield bytes(key), bytes(value)
