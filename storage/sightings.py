"""What the store shows of a feed or a message it may not carry: the signs a node reads to
tell people where its replication scope leaves them (docs/PEERS.md, "Scope").

Theory of operation
-------------------
A node carries only the feeds its scope names, so a person may ask it about
a feed or a thread it holds nothing of. Two questions are answered from what
the store holds, each in one read transaction and at a bounded cost:

`feed_seen(feed)`: whether the store holds any sign of the feed, "ever
shown" as `tangled follow` means it (the node adds what only it knows: a
connected peer's clock naming the feed, a peer's key; node/ipc/scope_notes.py).
A sign is a message of the feed held (its `heads` row, or a proof against
it), a witness of it kept, asked for or given up (storage/feeds/witnesses.py:
a timeframe named it), or a contact message held that names it, whoever
published it (storage/views/contacts.py). The contacts are keyed by author
first, so the last is a skip-scan: two cursor seeks per author that
published a contact message (its rows about the feed, then the next
author), at most `SEEN_AUTHORS` authors; past that the feed counts as seen,
so a large store never makes the answer slow, only less particular.

`root_clue(root, name)`: who wrote the root of the tangle (name, root) that
a publish named and the store has no tips of (`UnknownTangle`). The
message id does not say its author; the store may:

1. the message itself is held (`held`): then it does not root a tangle
   `name` (else the tangle would have tips), and its author is known;
2. else the members of (name, root) that are held, waiting for it (their
   `tangle-state` rows, the first `CLUE_MEMBERS`): a reply's timeframe
   names the heads its author had processed, and one written right after
   the root names the root itself, by its author, seq and tag (the first
   16 bytes of its id). An entry whose tag is the root's names the
   author: `witness` when the witness of that entry is kept (its id
   checked: the author is certain), else `named` (the author as the
   replier named it: a claim of a feed we carry).

When none of these holds, the author is unknown here: nothing held names
the root. The blocked case needs no sign of its own: the node blocks a
feed by its key, so a clue's author is checked against the scope by the
caller.
"""

from __future__ import annotations

from dataclasses import dataclass

from tanglenode.protocol.identity import message_id, tag_of
from tanglenode.protocol.message import Message
from tanglenode.storage.context import StoreContext
from tanglenode.storage.feeds.layout import feed_key, tangle_key
from tanglenode.storage.feeds.witnesses import entry_key
from tanglenode.storage.views.contacts import CONTACTS_DB
from tanglenode.storage.views.joined import tangle_members
from tanglenode.storage.views.tangles import TangleTables

SEEN_AUTHORS = 50_000  # authors of contact messages looked through at most, by `feed_seen`
CLUE_MEMBERS = 16  # held members of a tangle whose timeframes `root_clue` reads, at most
_KEY = 32

HELD, WITNESS, NAMED = "held", "witness", "named"


@dataclass(frozen=True, slots=True)
class RootClue:
    """What the store says of a tangle root: its `author` (None: unknown here), and how it
    is known (`source`: held, witness or named; None when unknown)."""

    author: bytes | None = None
    source: str | None = None


def feed_seen(ctx: StoreContext, feed: bytes, authors: int = SEEN_AUTHORS) -> bool:
    """Whether the store holds any sign of `feed` (see the module docstring)."""
    tables, witnesses = ctx.tables, ctx.witness_tables
    with ctx.read() as txn:
        if any(txn.get(feed, db=db) is not None for db in (tables.heads, tables.invalid)):
            return True
        for db in (witnesses.witnesses, witnesses.asks, witnesses.given_up):
            cursor = txn.cursor(db=db)
            if cursor.set_range(feed) and bytes(cursor.key()[:_KEY]) == feed:
                return True
        return _named_in_contacts(txn.cursor(db=ctx.view_tables[CONTACTS_DB]), feed, authors)


def _named_in_contacts(cursor, feed: bytes, authors: int) -> bool:
    """Whether any author's contact rows name `feed`: one seek to its rows about `feed`,
    one to the next author; past `authors` authors, True (counted as seen)."""
    if not cursor.first():
        return False
    for _ in range(authors):
        author = bytes(cursor.key()[:_KEY])
        if cursor.set_range(author + feed) and bytes(cursor.key()[: 2 * _KEY]) == author + feed:
            return True
        following = _successor(author)
        if following is None or not cursor.set_range(following):
            return False
    return True


def _successor(key: bytes) -> bytes | None:
    """The least key of the same length above `key` (None: `key` is all 0xff)."""
    number = int.from_bytes(key, "big") + 1
    if number >> (8 * len(key)):
        return None
    return number.to_bytes(len(key), "big")


def root_clue(ctx: StoreContext, root: bytes, name: str, members: int = CLUE_MEMBERS) -> RootClue:
    """Who wrote `root`, as far as the store says (see the module docstring)."""
    with ctx.read() as txn:
        held = _message(txn, ctx.tables, root)
        if held is not None:
            return RootClue(held.author, HELD)
        named = None
        tag = tag_of(root)
        for member in _members(txn, ctx, tangle_key(root, name), members):
            for feed, seq in member.timeframe.items():
                if member.timeframe_tags.get(feed) != tag:
                    continue
                if _holds(txn, ctx, feed, seq, root):
                    return RootClue(feed, WITNESS)
                named = named or RootClue(feed, NAMED)
        return named or RootClue()


def _message(txn, tables, msg_id: bytes) -> Message | None:
    """The accepted message `msg_id`, None if not held."""
    position = tables.ids.position(txn, msg_id)
    return None if position is None else tables.bodies.message(txn, position)


def _members(txn, ctx: StoreContext, key: bytes, limit: int) -> list[Message]:
    """The members held among the first `limit` rows of the tangle with this key."""
    found: list[Message] = []
    for member in tangle_members(txn, TangleTables.of(ctx), key, limit):
        message = _message(txn, ctx.tables, member)
        if message is not None:
            found.append(message)
    return found


def _holds(txn, ctx: StoreContext, feed: bytes, seq: int, root: bytes) -> bool:
    """Whether the witness of (feed, seq) kept, or the message held there, is `root`."""
    raw = txn.get(entry_key((feed, seq, tag_of(root))), db=ctx.witness_tables.witnesses)
    if raw is None:
        raw = ctx.tables.bodies.raw(txn, feed_key(feed, seq))
    return raw is not None and message_id(bytes(raw)) == root
