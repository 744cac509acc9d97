"""Short names for feeds on one connection: a position where a key takes 34 bytes.

Theory of operation
-------------------
A CLOCK note or a WANT names a feed by its 32-byte key; in steady state the
notes are most of what a node sends besides the messages themselves. Two
nodes that walked their clocks together (node/gossip/walk.py) hold the same
sorted list of the feeds alike at both ends, and that list starts two
tables, one for each direction of the connection, as HPACK's dynamic table
does for headers:

- *ours*: the feeds we have named to the peer. A CLOCK note of a feed on it
  goes by position (CLOCK_NAMED); one of a feed not on it goes by key, and
  the feed joins the end of the table (`notes_out`).
- *theirs*: the same, for the peer's notes to us (`keyed_in`, `notes_in`).

Both ends grow a table at the same frame, in the same order (a keyed
CLOCK's feeds in the order its map holds them), since the stream keeps the
frames' order. Notes by key are sent only from the session's writer, one
frame after the other, so a table never names a feed before the frame that
added it has gone. A WANT names feeds of *theirs* (the feeds the peer
told us of) by position (WANT_NAMED, `wants_out`), which the peer reads
through its own *ours* (`wants_in`): a WANT adds nothing to a table.

Each table holds at most `MAX_NAMES` feeds (both ends stop adding at the
same point). A position a table does not have is the peer's breach
(`reconcile`), and the session drops it.
"""

from __future__ import annotations

from typing import Any

from tanglenode.protocol.gossip import Breach, Clock, GossipError

MAX_NAMES = 65_536  # feeds a table names at most


class _Table:
    __slots__ = ("at", "feeds")

    def __init__(self, feeds: list[bytes]) -> None:
        self.feeds = list(feeds)
        self.at = {feed: position for position, feed in enumerate(self.feeds)}

    def add(self, feed: bytes) -> None:
        if feed not in self.at and len(self.feeds) < MAX_NAMES:
            self.at[feed] = len(self.feeds)
            self.feeds.append(feed)

    def feed(self, position: int) -> bytes:
        if position >= len(self.feeds):
            raise GossipError(Breach.RECONCILE, f"no feed is named {position} here")
        return self.feeds[position]


class FeedNames:
    """The two tables of one connection (see the module's theory of operation)."""

    def __init__(self, agreed: list[bytes]) -> None:
        self.ours = _Table(agreed)
        self.theirs = _Table(agreed)

    def notes_out(self, changes: Clock) -> tuple[list[Any], Clock]:
        """Our CLOCK notes: flat `[position, seq, tag, ...]` of the feeds we named, and the
        rest by key (which we name from now on)."""
        at = self.ours.at
        flat: list[Any] = []
        keyed: Clock = {}
        for feed, (seq, tag) in changes.items():
            position = at.get(feed)
            if position is None:
                keyed[feed] = (seq, tag)
            else:
                flat += [position, seq, tag]
        for feed in keyed:
            self.ours.add(feed)
        return flat, keyed

    def keyed_in(self, changes: Clock) -> None:
        """The peer's CLOCK by key: it names these feeds from now on."""
        for feed in changes:
            self.theirs.add(feed)

    def notes_in(self, entries: list[tuple[int, int, bytes]]) -> Clock:
        """The peer's CLOCK_NAMED, as notes by key."""
        feed = self.theirs.feed
        return {feed(position): (seq, tag) for position, seq, tag in entries}

    def wants_out(self, wants: dict[bytes, int]) -> tuple[list[Any], dict[bytes, int]]:
        """A WANT: flat `[position, after, ...]` of the feeds the peer named, the rest by
        key."""
        at = self.theirs.at
        flat: list[Any] = []
        keyed: dict[bytes, int] = {}
        for feed, after in wants.items():
            position = at.get(feed)
            if position is None:
                keyed[feed] = after
            else:
                flat += [position, after]
        return flat, keyed

    def wants_in(self, entries: list[tuple[int, int]]) -> dict[bytes, int]:
        """The peer's WANT_NAMED, as a WANT by key."""
        feed = self.ours.feed
        return {feed(position): after for position, after in entries}
