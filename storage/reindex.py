"""Rebuilding derived views from the messages alone: `tangled reindex [VIEW]` and its check.

Theory of operation
-------------------
Every derived view (storage/feeds/derived.py) is a function of the messages a
store holds (documents: and of the order they were processed, which the
processor keeps). So any view can be thrown away and built again:

1. The views to rebuild are the ones asked for and every view that shares
   a table with one of them (the timelines, their causal-time twins and the
   joined views share the timeline tables), so a table is never half
   rebuilt.
2. In one write transaction, their tables are emptied (not the timelines'
   ref numbers, `tl-refs` and `tl-ref-names`, which no view lists: a
   rebuild gives each ref the number it had, storage.engine.ref_numbers,
   and writes the same rows for each member), every stored
   message is handed to their `accepted` in an order where each comes after
   every stored message it links to (its prev, its tangles' roots and
   previous, its timeframe's entries), as if each had arrived once all it
   names was there: the views decide a message against the messages held
   (`message-ids`), which already holds them all, so a message must never
   be replayed before one it names. Then
   the processed order is handed to their `processed`, a chunk at a time
   (the timeline writer's cache is written out after each chunk, so memory
   stays bounded by a chunk, not by the store).
3. The transaction commits, with the optional views rebuilt recorded as
   built (storage/view_choice.py: a view turned on later is built this
   way): a crash at any point leaves the views as they were before (LMDB),
   never half built.

A rebuilt timeline's command log told how an empty timeline grew, which no
subscriber that saw the old one can apply: so each rebuilt log is dropped
and numbering goes on above the old version, which becomes the log's floor
(`restart_log`): an IPC or web subscriber resuming from any version below
it starts from a snapshot (docs/IPC.md).

Versions
--------
Each view declares a `version` (storage/feeds/derived.py), and a rebuild
records it in `meta` (`view-version:NAME`) in the transaction that
rebuilds the view. When a store opens, `rebuild_outdated` rebuilds in one
`reindex` every view it keeps whose recorded version is not the one
declared, so a view whose rows change meaning or layout needs nothing but
a higher number: a store that never recorded a view (the view is newer
than the store) builds it then. A store with no message records every
version at once (there is nothing to build), and a store from before views
had versions (no `view-version:` row at all) counts each view it keeps as
built at version 1, as each was then (the abouts and the contacts, whose
older messages a backfill indexed then, declare 2: such a store rebuilds
them once). Progress goes to the caller's callback and to the log.

`compare` does the same rebuild inside a transaction it then aborts, after
reading each view's `content` before and after: the rows that differ are
the views' disagreements with their messages. Nothing is written.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import lmdb

from tanglenode.protocol.identity import tag_of
from tanglenode.storage.context import StoreContext
from tanglenode.storage.engine.timeline import restart_log
from tanglenode.storage.engine.timeline_reader import TimelineReader
from tanglenode.storage.feeds.derived import (
    DerivedView,
    ProcessedStep,
    WriteScope,
    table_names,
    version_key,
)
from tanglenode.storage.feeds.layout import feed_key, parse_stored
from tanglenode.storage.feeds.processor import read_processed
from tanglenode.storage.view_choice import record_built

CHUNK = 2048  # messages per flush of the timeline writer's cache

Progress = Callable[[str, int], None]  # (phase, messages done in it)
VERSIONS_BEFORE_RECORDS = 1  # what a store from before recorded versions built of each view

log = logging.getLogger(__name__)


class UnknownViewName(ValueError):
    """A view name the registry does not list."""


@dataclass(frozen=True, slots=True)
class ViewDifference:
    """How one view kept incrementally differs from the view rebuilt from its messages."""

    view: str
    extra: int  # rows the kept view holds that a rebuild does not
    missing: int  # rows a rebuild holds that the kept view lacks

    def __str__(self) -> str:
        return (
            f"the {self.view} view differs from one rebuilt from the messages: "
            f"{self.extra} rows extra, {self.missing} missing"
        )


def affected(views: Sequence[DerivedView], names: Iterable[str]) -> list[DerivedView]:
    """The views named and every view sharing a table with one of them, in registry order."""
    by_name = {view.name: view for view in views}
    wanted = set(names)
    unknown = wanted - by_name.keys()
    if unknown:
        raise UnknownViewName(
            f"no view {', '.join(sorted(unknown))}; the views: {', '.join(by_name)}"
        )
    tables = {table for view in views if view.name in wanted for table in table_names(view.tables)}
    grown = True
    while grown:
        sharing = [
            v
            for v in views
            if v.name not in wanted and not tables.isdisjoint(table_names(v.tables))
        ]
        for view in sharing:
            wanted.add(view.name)
            tables.update(table_names(view.tables))
        grown = bool(sharing)
    return [view for view in views if view.name in wanted]


def reindex(
    ctx: StoreContext,
    views: Sequence[DerivedView],
    names: Iterable[str],
    progress: Progress | None = None,
) -> list[str]:
    """Rebuild the views `names` (and those sharing their tables) in one write transaction;
    returns the names of the views rebuilt."""
    chosen = affected(views, names)
    with ctx.write() as txn:
        _rebuild(txn, ctx, chosen, progress or _quiet)
        record_built(txn, ctx.tables.meta, ctx.views, [view.name for view in chosen])
        record_versions(txn, ctx, chosen)
    return [view.name for view in chosen]


def record_versions(txn: Any, ctx: StoreContext, views: Iterable[DerivedView]) -> None:
    """Record in `meta` that the store holds `views` as their version builds them."""
    for view in views:
        txn.put(version_key(view.name), str(view.version).encode(), db=ctx.tables.meta)


def outdated(ctx: StoreContext, views: Sequence[DerivedView]) -> dict[str, int | None]:
    """The views whose version the store did not record, with the version it did (None:
    none); records every version where there is nothing to build (see "Versions")."""
    meta = ctx.tables.meta
    with ctx.read() as txn:
        found = {view.name: txn.get(version_key(view.name), db=meta) for view in views}
        empty = ctx.tables.bodies.count(txn) == 0
        cursor = txn.cursor(db=meta)
        recorded_any = cursor.set_range(version_key("")) and bytes(cursor.key()).startswith(
            version_key("")
        )
    missing = [name for name, raw in found.items() if raw is None]
    if missing and (empty or not recorded_any):
        with ctx.write() as txn:
            for view in views:
                if found[view.name] is None:
                    version = view.version if empty else VERSIONS_BEFORE_RECORDS
                    txn.put(version_key(view.name), str(version).encode(), db=meta)
                    found[view.name] = str(version).encode()
    recorded = {name: None if raw is None else int(raw) for name, raw in found.items()}
    return {view.name: recorded[view.name] for view in views if recorded[view.name] != view.version}


def rebuild_outdated(
    ctx: StoreContext, views: Sequence[DerivedView], progress: Progress | None = None
) -> list[str]:
    """Rebuild, in one `reindex`, every view of `views` whose recorded version is not its
    own (and those sharing its tables); the names rebuilt, [] if none."""
    stale = outdated(ctx, views)
    if not stale:
        return []
    for view in views:
        if view.name in stale:
            log.info(
                "rebuilding the %s view: the store holds version %s, this build keeps %d",
                view.name,
                stale[view.name],
                view.version,
            )

    def report(phase: str, done: int) -> None:
        log.info("rebuilding %s: %d %s", ", ".join(stale), done, phase)
        if progress is not None:
            progress(phase, done)

    return reindex(ctx, views, stale, report)


def compare(
    ctx: StoreContext, views: Sequence[DerivedView], names: Iterable[str]
) -> list[ViewDifference]:
    """How the views `names` (and those sharing their tables) differ from a rebuild of them;
    [] when each is exactly what its messages give. Writes nothing."""
    chosen = affected(views, names)
    txn = ctx.env.begin(write=True)
    try:
        _settle(txn, chosen)  # what the view has left for later is part of it
        kept = {view.name: set(view.content(txn)) for view in chosen}
        _rebuild(txn, ctx, chosen, _quiet)
        differences = []
        for view in chosen:
            rebuilt = set(view.content(txn))
            extra, missing = kept[view.name] - rebuilt, rebuilt - kept[view.name]
            if extra or missing:
                differences.append(ViewDifference(view.name, len(extra), len(missing)))
        return differences
    except lmdb.MapFullError as error:  # the rebuild needs room beside the views it replaces
        raise ctx.full() from error
    finally:
        txn.abort()


def contents(
    ctx: StoreContext, views: Sequence[DerivedView]
) -> dict[str, list[tuple[bytes, bytes]]]:
    """Each view's content as it is now, sorted: what two stores holding the same messages
    share byte for byte."""
    with ctx.read() as txn:
        return {view.name: sorted(view.content(txn)) for view in views}


def _quiet(_phase: str, _done: int) -> None:
    pass


def _settle(txn: Any, views: Sequence[DerivedView]) -> None:
    """Let each view finish in `txn` what it left for later transactions (the documents'
    backlog, storage/documents/backlog.py): a rebuild, and its check, read views whole."""
    for view in views:
        view.hooks.settle(txn)


def _rebuild(txn: Any, ctx: StoreContext, views: Sequence[DerivedView], progress: Progress) -> None:
    tables = {name for view in views for name in table_names(view.tables)}
    versions = _versions(txn, ctx) if b"tl-log" in tables else {}
    for name in sorted(tables):
        txn.drop(ctx.view_tables[name], delete=False)
    done = 0
    for chunk in _chunks(_stored(txn, ctx), CHUNK):
        scope = WriteScope(txn, ctx)
        for message in chunk:
            for view in views:
                view.accepted(scope, message)
        scope.finish()
        done += len(chunk)
        progress("stored messages", done)
    done = 0
    for chunk in _chunks(_processed_order(txn, ctx), CHUNK):
        scope = WriteScope(txn, ctx)
        step = ProcessedStep(chunk)
        for view in views:
            view.processed(scope, step)
        scope.finish()
        done += len(chunk)
        progress("processed messages", done)
    _settle(txn, views)
    reader = TimelineReader(txn, ctx.timeline_tables)
    for name, old in versions.items():  # every log restarts above what subscribers saw
        if reader.exists(name):
            restart_log(txn, ctx.timeline_tables, name, old + reader.version(name))


def _versions(txn: Any, ctx: StoreContext) -> dict[bytes, int]:
    """Every timeline's version before the rebuild."""
    reader = TimelineReader(txn, ctx.timeline_tables)
    names = txn.cursor(db=ctx.timeline_tables.names).iternext(values=False)
    return {bytes(name): reader.version(bytes(name)) for name in names}


def _stored(txn: Any, ctx: StoreContext) -> Iterator[Any]:
    """Every stored message, each after the stored messages it links to (Kahn's order).

    A link is to the message itself, bound by its hash: a timeframe entry counts only
    where the message stored at that (feed, seq) has the tag named (a forker's other
    branch is not what was named), tangle links are ids. So the links form no cycle and
    every message comes out; should one not (a bug), it still comes out, after the rest,
    so no message is ever left out of a view. The first pass keeps each message's id and
    links, a few dozen bytes a message; the second reads the bodies again in order.
    """
    tables, bodies = ctx.tables, ctx.tables.bodies
    ids: dict[bytes, bytes] = {}
    named: dict[bytes, list[tuple[bytes, bytes | None]]] = {}  # position -> (link, tag)
    for position, body in bodies.rows(txn):
        message = parse_stored(bodies.rebuild(txn, position, body))
        ids[position] = message.id
        links: list[tuple[bytes, bytes | None]] = [
            (feed_key(feed, seq), message.timeframe_tags[feed])
            for feed, seq in message.timeframe.items()
        ]
        if message.seq > 1:
            links.append((feed_key(message.author, message.seq - 1), None))
        for name, link in message.tangles.items():
            for msg_id in (message.tangle_root(name), *(link.previous or ())):
                found = tables.ids.position(txn, msg_id)
                if found is not None:
                    links.append((bytes(found), None))
        named[position] = links
    waiting: dict[bytes, int] = {}
    followers: dict[bytes, list[bytes]] = {}
    for position, links in named.items():
        present = {
            link
            for link, tag in links
            if link != position and link in ids and (tag is None or tag_of(ids[link]) == tag)
        }
        waiting[position] = len(present)
        for link in present:
            followers.setdefault(link, []).append(position)
    del named
    ready = deque(position for position, count in waiting.items() if count == 0)
    while ready:
        position = ready.popleft()
        del waiting[position]
        yield bodies.message(txn, position)
        for follower in followers.pop(position, ()):
            waiting[follower] -= 1
            if waiting[follower] == 0:
                ready.append(follower)
    for position in sorted(waiting):  # never, links being bound to hashes: see the docstring
        yield bodies.message(txn, position)


def _processed_order(txn: Any, ctx: StoreContext) -> Iterator[tuple[bytes, int]]:
    start = 0
    while page := read_processed(txn, ctx.processor_tables, start, CHUNK):
        for _index, feed, seq in page:
            if ctx.tables.bodies.holds(txn, feed_key(feed, seq)):
                yield feed, seq
        start = page[-1][0] + 1


def _chunks(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
