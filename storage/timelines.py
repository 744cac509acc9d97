"""The node's timelines: which ones a stored message joins, with which edges.

- Each tangle (name, root id) has a timeline whose members are the tangle's
  messages (the root included) and whose edges are their `previous` links.
  Refs and sort ids are message ids.
- The spacetime timeline holds every accepted message. Its edges are `prev`
  and every timeframe entry. A timeframe entry names a message by (feed,
  seq, tag of its id), so spacetime refs are `author + seq (u64 BE) + tag`
  (`spacetime_ref`): the position the message is stored at, bound to the
  message by its tag, so an entry naming one branch of a forked feed never
  links to the other branch. The message id is the sort id.

Every link is bound to a hash (tangle links are ids, spacetime links carry
tags), so no link can close a cycle: a loop would need a message to hold a
digest of itself (docs/PROCESSING.md). The engine's own guard (`CycleError`)
stays as an invariant, never a rule of the protocol.

Each timeline N also has its causal-time twin `\x03 + N` (the causal-time order,
storage.causal_timeline), added to and removed from after N itself.

`remove_message` undoes `add_message` for a message of a feed found invalid
(storage.invalidation); the engine needs every other member's links to
recompute ranks, which `links_of` reads back from the stored messages.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tanglenode.protocol.identity import tag_of
from tanglenode.protocol.message import Message
from tanglenode.storage.causal_timeline import add_twins, remove_twins
from tanglenode.storage.layout import feed_key, tangle_key
from tanglenode.storage.timeline import TimelineWriter

LinksOf = Callable[[bytes], Sequence[bytes]]

SPACETIME = b"\x00spacetime"

VIEWS = ("all", "joined")  # every member, or only those joined to the root (docs/TIMELINES.md)
ORDERS = ("rank", "causal-time")  # ScuttleSort's (rank, id), or (causality, time, id)


class UnknownView(ValueError):
    """A view or order that does not exist, or not for that timeline."""


def tangle_timeline(root: bytes, name: str) -> bytes:
    """The timeline name of tangle (name, root)."""
    return b"\x01" + tangle_key(root, name)


def view_timeline(base: bytes, view: str = "all", order: str = "rank") -> bytes:
    """The timeline that holds `base` (the spacetime or a tangle's) in `view` and `order`.

    The joined view of a tangle is `\x02` + its key; the causal-time order of
    any timeline is `\x03` + its name. The joined view exists for tangles only
    (every spacetime member is joined by construction), in rank order only.
    """
    if view not in VIEWS or order not in ORDERS:
        raise UnknownView(f"view: {'|'.join(VIEWS)}; order: {'|'.join(ORDERS)}")
    if view == "joined":
        if base[:1] != b"\x01":
            raise UnknownView("the joined view is a tangle's, not the spacetime's")
        if order != "rank":
            raise UnknownView("the joined view comes in rank order")
        return b"\x02" + base[1:]
    return base if order == "rank" else b"\x03" + base


def spacetime_ref(author: bytes, seq: int, msg_id_or_tag: bytes) -> bytes:
    """The spacetime ref of a message: its position and the tag of its id."""
    return feed_key(author, seq) + tag_of(msg_id_or_tag)


def add_message(writer: TimelineWriter, message: Message) -> None:
    """Add an accepted message to the spacetime and to each of its tangles."""
    after = spacetime_links(message)
    ref = spacetime_ref(message.author, message.seq, message.id)
    writer.add(SPACETIME, ref, after, sort_id=message.id)
    for name, link in message.tangles.items():
        root = message.tangle_root(name)
        writer.add(tangle_timeline(root, name), message.id, link.previous or ())
    add_twins(writer, message, (SPACETIME, ref, after), _tangle_bases(message))


def _tangle_bases(message: Message) -> dict[str, bytes]:
    return {name: tangle_timeline(message.tangle_root(name), name) for name in message.tangles}


def spacetime_links(message: Message) -> list[bytes]:
    """The spacetime refs a message follows: its prev, and every timeframe entry."""
    tags = message.timeframe_tags
    after = [feed_key(feed, seq) + tags[feed] for feed, seq in message.timeframe.items()]
    if message.prev is not None:
        after.append(spacetime_ref(message.author, message.seq - 1, message.prev))
    return after


def remove_message(
    writer: TimelineWriter,
    message: Message,
    spacetime_links_of: LinksOf,
    tangle_links_of: Callable[[str], LinksOf],
) -> None:
    """Take a message out of its tangles' timelines and the spacetime (undoing `add_message`)."""
    for name, link in message.tangles.items():
        timeline = tangle_timeline(message.tangle_root(name), name)
        writer.remove(timeline, message.id, link.previous or (), tangle_links_of(name))
    ref = spacetime_ref(message.author, message.seq, message.id)
    writer.remove(SPACETIME, ref, spacetime_links(message), spacetime_links_of)
    remove_twins(
        writer,
        (SPACETIME, ref, spacetime_links_of),
        [(base, message.id, tangle_links_of(n)) for n, base in _tangle_bases(message).items()],
    )
