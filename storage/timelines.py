"""The node's timelines: which ones a stored message joins, with which edges.

- Each tangle (name, root id) has a timeline whose members are the tangle's
  messages (the root included) and whose edges are their `previous` links.
  Refs and sort ids are message ids.
- The spacetime timeline holds every accepted message. Its edges are `prev`
  and every timeframe entry. A timeframe entry names a message by (feed,
  seq), not by id, so spacetime refs are positions, `author + seq (u64 BE)`,
  and the message id is the sort id.

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


def add_message(writer: TimelineWriter, message: Message) -> None:
    """Add an accepted message to the spacetime and to each of its tangles.

    Raises `CycleError` (and writes nothing) if its timeframe closes a cycle.
    """
    after = [feed_key(feed, seq) for feed, seq in message.timeframe.items()]
    if message.seq > 1:
        after.append(feed_key(message.author, message.seq - 1))
    writer.add(SPACETIME, feed_key(message.author, message.seq), after, sort_id=message.id)
    for name, link in message.tangles.items():
        root = message.tangle_root(name)
        writer.add(tangle_timeline(root, name), message.id, link.previous or ())
