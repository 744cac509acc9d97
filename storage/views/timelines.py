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
storage.engine.causal_timeline), a view of its own (`CausalTimeView`), added to and
removed from after N itself.

`TimelinesView` is the derived view (storage/feeds/derived.py) that keeps the
spacetime and the tangles' timelines; `CausalTimeView` keeps their twins.

`remove_message` undoes `add_message` for a message of a feed found invalid
(storage.feeds.invalidation); the engine needs every other member's links to
recompute ranks, which `links_of` reads back from the stored messages.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgpack

from tanglenode.protocol.identity import tag_of
from tanglenode.protocol.message import Message
from tanglenode.storage.engine.causal_timeline import add_twins, remove_twins
from tanglenode.storage.engine.ref_numbers import numbering_problems
from tanglenode.storage.engine.timeline import TimelineTables, TimelineWriter
from tanglenode.storage.engine.timeline_reader import TimelineReader
from tanglenode.storage.feeds.derived import NO_HOOKS, Table, ViewCost
from tanglenode.storage.feeds.layout import Tables, feed_key, tangle_key

if TYPE_CHECKING:
    from tanglenode.storage.context import StoreContext
    from tanglenode.storage.feeds.derived import Position, ProcessedStep, WriteScope

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


def timeline_name(
    root: bytes | None, name: str | None = None, view: str = "all", order: str = "rank"
) -> bytes:
    """The spacetime (no root) or the timeline of tangle (name, root), in `view` and
    `order` (`view_timeline`; raises `UnknownView`)."""
    base = SPACETIME if root is None else tangle_timeline(root, name or "")
    return view_timeline(base, view, order)


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


def add_message_twins(writer: TimelineWriter, message: Message) -> None:
    """Add an accepted message to the causal-time twins of its timelines."""
    ref = spacetime_ref(message.author, message.seq, message.id)
    add_twins(writer, message, (SPACETIME, ref, spacetime_links(message)), _tangle_bases(message))


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


def remove_message_twins(
    writer: TimelineWriter,
    message: Message,
    spacetime_links_of: LinksOf,
    tangle_links_of: Callable[[str], LinksOf],
) -> None:
    """Take a message out of the twins of its timelines (undoing `add_message_twins`)."""
    ref = spacetime_ref(message.author, message.seq, message.id)
    remove_twins(
        writer,
        (SPACETIME, ref, spacetime_links_of),
        [(base, message.id, tangle_links_of(n)) for n, base in _tangle_bases(message).items()],
    )


class StoredLinks:
    """The links of timeline members read back from the stored messages (for removals)."""

    def __init__(self, txn: Any, tables: Tables) -> None:
        self._txn, self._tables = txn, tables

    def spacetime(self, ref: bytes) -> list[bytes]:
        """The links of the spacetime member `ref` (its position, then its tag)."""
        return spacetime_links(self._tables.bodies.message(self._txn, ref[:40]))

    def tangle(self, name: str) -> LinksOf:
        """The links (`previous`) of a member of tangle `name`, by id."""

        def links(ref: bytes) -> Sequence[bytes]:
            position = self._tables.ids.position(self._txn, ref)
            return self._tables.bodies.message(self._txn, position).tangles[name].previous or ()

        return links

    def tangle_member(self, name: str, ref: bytes) -> Sequence[bytes]:
        return self.tangle(name)(ref)


def timeline_contents(
    txn: Any, tables: TimelineTables, kinds: bytes
) -> Iterator[tuple[bytes, bytes]]:
    """(name, entries) of every non-empty timeline whose name starts with a byte of `kinds`:
    rows that depend only on the members, never on the order they came in."""
    reader = TimelineReader(txn, tables)
    for name in txn.cursor(db=tables.names).iternext(values=False):
        if name[:1] in kinds and (entries := reader.entries(bytes(name))):
            yield bytes(name), msgpack.packb(entries)


# What `tangled reindex` empties to rebuild the timelines. Not `tl-refs` and `tl-ref-names`
# (storage.engine.ref_numbers): numbers are never taken back, so a rebuild gives each ref the
# number it had, and writes the same rows for each member (the timelines numbered afresh).
TIMELINE_TABLES = (
    Table(b"tl-names"),
    Table(b"tl-meta"),
    Table(b"tl-nodes"),
    Table(b"tl-succ", dupsort=True, dupfixed=True),
    Table(b"tl-tree"),
    Table(b"tl-log"),
    Table(b"tl-pending"),
)


class TimelinesView:
    """The spacetime and every tangle's timeline, in rank order (storage.engine.timeline)."""

    name = "timelines"
    tables = TIMELINE_TABLES
    version = 1
    optional = False
    hooks = NO_HOOKS
    cost = ViewCost(1046, 0.16, "every rank order: convergence, finality, digests, the web view")

    def __init__(self, ctx: StoreContext) -> None:
        self._ctx = ctx

    def accepted(self, scope: WriteScope, message: Message) -> None:
        add_message(scope.timelines, message)

    def forget(self, scope: WriteScope, message: Message) -> None:
        pass  # what it keeps of a message is in its header, which stays

    def cut(self, scope: WriteScope, message: Message) -> None:
        links = StoredLinks(scope.txn, self._ctx.tables)
        remove_message(scope.timelines, message, links.spacetime, links.tangle)

    def processed(self, scope: WriteScope, step: ProcessedStep) -> None:
        pass  # the rank order follows arrival, not processing

    def check(self, txn: Any, messages: Mapping[Position, Message]) -> list[str]:
        tables = self._ctx.timeline_tables
        problems = check_rank_orders(txn, tables, messages)
        home = tables.ref_home(txn)
        return problems + numbering_problems(txn, tables.refs, tables.ref_names, home)

    def content(self, txn: Any) -> Iterator[tuple[bytes, bytes]]:
        return timeline_contents(txn, self._ctx.timeline_tables, b"\x00\x01")


def expected_ranks(links: Mapping[bytes, Sequence[bytes]]) -> dict[bytes, int]:
    """Each member's rank (docs/TIMELINES.md, "The order"): 0 with no present link, else one
    above its highest present link. Kahn's order: links are bound to hashes, so acyclic."""
    successors: dict[bytes, list[bytes]] = {}
    waiting: dict[bytes, int] = {}
    for ref, after in links.items():
        present = {link for link in after if link in links}
        waiting[ref] = len(present)
        for link in present:
            successors.setdefault(link, []).append(ref)
    rank = dict.fromkeys(links, 0)
    ready = [ref for ref, count in waiting.items() if count == 0]
    while ready:
        ref = ready.pop()
        for successor in successors.get(ref, ()):
            rank[successor] = max(rank[successor], rank[ref] + 1)
            waiting[successor] -= 1
            if waiting[successor] == 0:
                ready.append(successor)
    return rank


def check_rank_orders(
    txn: Any, tables: TimelineTables, messages: Mapping[Position, Message]
) -> list[str]:
    """Problems found comparing the spacetime's and tangles' orders with the messages'."""
    members: dict[bytes, dict[bytes, tuple[Sequence[bytes], bytes]]] = {SPACETIME: {}}
    for (author, seq), message in messages.items():
        ref = spacetime_ref(author, seq, message.id)
        members[SPACETIME][ref] = (spacetime_links(message), message.id)
        for name, link in message.tangles.items():
            base = tangle_timeline(message.tangle_root(name), name)
            members.setdefault(base, {})[message.id] = (link.previous or (), message.id)
    reader = TimelineReader(txn, tables)
    wrong = 0
    for base, held in members.items():
        if not held:
            continue
        ranks = expected_ranks({ref: after for ref, (after, _sort) in held.items()})
        wanted = sorted((ranks[ref], sort_id) for ref, (_after, sort_id) in held.items())
        found = reader.entries(base) if reader.exists(base) else []
        wrong += found != wanted
    if wrong:
        return [f"{wrong} timelines differ from the order their messages give"]
    return []
