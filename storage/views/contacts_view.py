"""Who follows and blocks whom as a derived view (storage/feeds/derived.py).

The index and its rules are storage.views.contacts'; this module holds what the
store calls.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from tanglenode.protocol.contacts import contact_said
from tanglenode.protocol.identity import feed_text
from tanglenode.protocol.message import Message
from tanglenode.storage.feeds.derived import NO_HOOKS, Table, ViewCost
from tanglenode.storage.feeds.invalidation import invalid_feeds
from tanglenode.storage.views.contacts import (
    CONTACTS_DB,
    ROW_KEY_LEN,
    contact_key,
    index_contact,
    row_value,
    split_contact_key,
)

if TYPE_CHECKING:
    from tanglenode.storage.context import StoreContext
    from tanglenode.storage.feeds.derived import Position, ProcessedStep, WriteScope


class ContactsView:
    """`contacts`: each contact message's flags (see storage.views.contacts)."""

    name = "contacts"
    tables = (Table(CONTACTS_DB),)
    # 2: rebuilt once in each store from before views had versions, whose older messages
    # were indexed by a backfill that may not have run to its end
    version = 2
    optional = False
    hooks = NO_HOOKS
    cost = ViewCost(0, 0.005, "whom each feed follows and blocks: the replication scope")

    def __init__(self, ctx: StoreContext) -> None:
        self._ctx = ctx
        self._db = ctx.view_tables[CONTACTS_DB]

    def accepted(self, scope: WriteScope, message: Message) -> None:
        index_contact(scope.txn, self._db, message.author, message.seq, message.content)

    def cut(self, scope: WriteScope, message: Message) -> None:
        """The message left the store (a proof cut its feed, or the node blocked it): its
        row goes (a reader would stop at a proof's boundary anyway, but a blocked feed has
        none)."""
        said = contact_said(message.content, message.author)
        if said is not None:
            key = contact_key(message.author, said.contact, message.seq)
            scope.txn.delete(key, db=self._db)

    forget = cut  # its content went (erased, purged): what it said of a contact goes too

    def processed(self, scope: WriteScope, step: ProcessedStep) -> None:
        pass

    def check(self, txn: Any, messages: Mapping[Position, Message]) -> list[str]:
        """`contacts` holds one row per contact message held, as ingest indexes it (rows at
        or past a feed's invalid boundary are not checked: their messages are cut)."""
        expected: dict[bytes, bytes] = {}
        for (author, seq), message in messages.items():
            said = contact_said(message.content, author)
            if said is not None:
                expected[contact_key(author, said.contact, seq)] = row_value(said)
        boundaries = invalid_feeds(txn, self._ctx.tables)
        problems = []
        for key, value in txn.cursor(db=self._db):
            if len(key) != ROW_KEY_LEN:
                problems.append(f"contacts holds a malformed key {bytes(key).hex()}")
                continue
            if expected.pop(bytes(key), None) == bytes(value):
                continue
            author, _contact, seq = split_contact_key(key)
            if seq < boundaries.get(author, seq + 1):
                problems.append(f"contacts row {feed_text(author)}:{seq} is not the message held")
        for key in expected:
            author, _contact, seq = split_contact_key(key)
            problems.append(f"the contact message {feed_text(author)}:{seq} is missing")
        return problems

    def content(self, txn: Any) -> Iterator[tuple[bytes, bytes]]:
        boundaries = invalid_feeds(txn, self._ctx.tables)
        for key, value in txn.cursor(db=self._db):
            author, _contact, seq = split_contact_key(key)
            if seq < boundaries.get(author, seq + 1):
                yield bytes(key), bytes(value)
