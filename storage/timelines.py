"""The node's timelines: which ones a stored message joins, with which edges.

- Each tangle (name, root id) has a timeline whose members are the tangle's
  messages (the root included) and whose edges are their `previous` links.
  Refs and sort ids are message ids.
- The spacetime timeline holds every accepted message. Its edges are `prev`
  and every timeframe entry. A timeframe entry names a message by (feed,
  seq), not by id, so spacetime refs are positions, `author + seq (u64 BE)`,
  and the message id is the sort id.

  An entry the author's previous message already had (same feed, same seq)
  is not stored as an edge: the path through `prev` implies it and is
  longer, so no rank, and hence no position, can change by leaving it out.
  With timeframes that name every feed, this cuts a message's edges from
  one per feed to the few that moved since the author's last message.

Tangle links are hashes, so they cannot form a cycle; timeframe entries can
(two authors each claiming to have processed the other's next message), so
the spacetime is added first: a message that would close a cycle is
refused (`timeframe-cycle`) before anything of it is written.
"""

from __future__ import annotations

from protocol.message import Message
from storage.layout import feed_key, tangle_key
from storage.timeline import TimelineWriter

SPACETIME = b"\x00spacetime"


def tangle_timeline(root: bytes, name: str) -> bytes:
    """The timeline name of tangle (name, root)."""
    return b"\x01" + tangle_key(root, name)


def add_message(
    writer: TimelineWriter, message: Message, previous_timeframe: dict[bytes, int]
) -> None:
    """Add an accepted message to the spacetime and to each of its tangles.

    `previous_timeframe` is the timeframe of the author's previous message
    (empty for seq 1). Raises `CycleError` (and writes nothing) if the
    timeframe closes a cycle.
    """
    after = [
        feed_key(feed, seq)
        for feed, seq in message.timeframe.items()
        if previous_timeframe.get(feed) != seq
    ]
    if message.seq > 1:
        after.append(feed_key(message.author, message.seq - 1))
    writer.add(SPACETIME, feed_key(message.author, message.seq), after, sort_id=message.id)
    for name, link in message.tangles.items():
        root = message.tangle_root(name)
        writer.add(tangle_timeline(root, name), message.id, link.previous or ())
