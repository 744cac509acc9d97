"""Which optional views a store keeps: the node's choice, what the store has built, and
the two reconciled when the store opens.

Theory of operation
-------------------
Every derived view (storage/feeds/derived.py) either is kept by every store
(the rank-order timelines, the joined views, the names, the documents: what
convergence checks, finality, digests, publishing into a tangle and the web
view stand on) or is `optional`: a node turns it on in `[views]`
(tangled.toml). The store records in `meta` under `views-built` the optional
views whose rows are complete, as a msgpack list of names.

When the store opens with the node's choice (`wanted`):

- a view built and not wanted is dropped: its timelines' rows and its own
  tables go, and the record with them, in one write transaction;
- a view wanted and not built is not kept (a half-kept view would answer
  wrongly): its reads raise `ViewOff`, naming `tangled reindex VIEW`, which
  builds it from the messages and records it in the transaction that
  rebuilds it (storage/reindex.py);
- a view wanted and built is kept at every write.

Opened without a choice (maintenance tools, benches, tests), a store keeps
what it has built; a new store builds the defaults. A store that holds no
message yet has built whatever is wanted (so `tangled init`, then turning a
view on, then `tangled run` needs no reindex). A store without the record
(made before optional views existed) holds every view.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

import msgpack

from tanglenode.storage.engine.keys import U32
from tanglenode.storage.engine.timeline import TimelineTables
from tanglenode.storage.errors import ViewOff
from tanglenode.storage.feeds.derived import ViewCost

BUILT_KEY = b"views-built"


@dataclass(frozen=True, slots=True)
class OptionalView:
    """An optional view's footprint: the timelines it keeps (names starting with
    `timeline_kind`) and the tables only it writes."""

    name: str
    timeline_kind: bytes
    own_tables: tuple[bytes, ...]
    default: bool
    setting: str  # its key in `[views]`
    built_by: str  # the view of the registry that writes it (`tangled reindex` of that view)
    cost: ViewCost


@dataclass(frozen=True, slots=True)
class ViewState:
    """The optional views a store keeps (`kept`) and those its node wants (`wanted`)."""

    kept: frozenset[str]
    wanted: frozenset[str]
    known: tuple[OptionalView, ...]

    def keeps(self, name: str) -> bool:
        return name in self.kept

    def require_timeline(self, timeline: bytes) -> None:
        """Raise `ViewOff` if `timeline` belongs to an optional view the store does not keep."""
        for view in self.known:
            if timeline[:1] == view.timeline_kind and view.name not in self.kept:
                raise ViewOff(self.why_off(view))

    def optional(self, name: str) -> OptionalView:
        return next(view for view in self.known if view.name == name)

    def expanded(self) -> ViewState:
        """The same choice, keeping what is wanted but not built yet: what a rebuild writes."""
        return ViewState(self.kept | self.wanted, self.wanted, self.known)

    def why_off(self, view: OptionalView) -> str:
        if view.name in self.wanted:
            return (
                f"the {view.name} view is turned on but not built yet: stop the node and run "
                f"`tangled reindex {view.built_by}`"
            )
        return (
            f"this store does not keep the {view.name} view: set `{view.setting} = true` under "
            f"[views] in tangled.toml (if it is not), then run `tangled reindex {view.built_by}` "
            "with the node stopped"
        )


def read_built(txn: Any, meta_db: Any, known: Iterable[OptionalView]) -> frozenset[str] | None:
    """The optional views the store records as built; None for a store without the record."""
    raw = txn.get(BUILT_KEY, db=meta_db)
    if raw is None:
        return None
    names = {view.name for view in known}
    return frozenset(name for name in msgpack.unpackb(raw) if name in names)


def write_built(txn: Any, meta_db: Any, built: Collection[str]) -> None:
    txn.put(BUILT_KEY, msgpack.packb(sorted(built)), db=meta_db)


def drop_view(txn: Any, env: Any, tables: TimelineTables, view: OptionalView) -> int:
    """Delete every row of optional view `view` in transaction `txn`; how many timelines went."""
    for table in view.own_tables:
        txn.drop(env.open_db(table, txn=txn), delete=False)
    doomed = []
    cursor = txn.cursor(db=tables.names)
    if cursor.set_range(view.timeline_kind):
        for name, number in cursor:
            if name[:1] != view.timeline_kind:
                break
            doomed.append((bytes(name), bytes(number)))
    per_number = (tables.nodes, tables.succ, tables.tree, tables.log, tables.pending)
    for name, number in doomed:
        for db in per_number:
            _delete_prefix(txn, db, number)
        txn.delete(number, db=tables.meta)
        txn.delete(name, db=tables.names)
    return len(doomed)


def _delete_prefix(txn: Any, db: Any, prefix: bytes) -> None:
    assert len(prefix) == U32.size
    cursor = txn.cursor(db=db)
    if not cursor.set_range(prefix):
        return
    while cursor.key()[: U32.size] == prefix:
        if not cursor.delete(dupdata=True):  # moves to the next row; False past the last
            break


def choose_views(
    env: Any,
    meta_db: Any,
    tables: TimelineTables,
    known: tuple[OptionalView, ...],
    wanted: Collection[str] | None,
    empty: bool,
) -> ViewState:
    """Reconcile the node's choice `wanted` with what the store has built (see the module's
    theory of operation), dropping views turned off, in one write transaction if anything
    changes. A store that holds no message (`empty`) has built every view it wants:
    their rows are none."""
    names = {view.name for view in known}
    if wanted is not None and not set(wanted) <= names:
        unknown = ", ".join(sorted(set(wanted) - names))
        raise ValueError(f"no optional view {unknown}; the optional views: {', '.join(names)}")
    defaults = {view.name for view in known if view.default}

    def reconcile(txn: Any, write: bool) -> tuple[set[str], set[str], bool]:
        """(built, chosen, whether anything must be written), written when `write`."""
        recorded = read_built(txn, meta_db, known)
        if recorded is None:  # a new store builds what is wanted; an old one holds all
            built = set(defaults if wanted is None else wanted) if empty else set(names)
        else:
            built = set(recorded)
        chosen = set(built) if wanted is None else set(wanted)
        if empty:
            built |= chosen
        doomed = [view for view in known if view.name in built and view.name not in chosen]
        built.difference_update(view.name for view in doomed)
        changes = bool(doomed) or recorded is None or built != recorded
        if write and changes:
            for view in doomed:
                drop_view(txn, env, tables, view)
            write_built(txn, meta_db, built)
        return built, chosen, changes

    with env.begin() as txn:  # most opens change nothing: no write lock taken for them
        built, chosen, changes = reconcile(txn, write=False)
    if changes:
        with env.begin(write=True) as txn:
            built, chosen, _changes = reconcile(txn, write=True)
    return ViewState(kept=frozenset(built & chosen), wanted=frozenset(chosen), known=known)


def record_built(txn: Any, meta_db: Any, state: ViewState, rebuilt: Iterable[str]) -> None:
    """Record as built the optional views wanted that the views `rebuilt` write (in the
    transaction that rebuilt them)."""
    rebuilt = set(rebuilt)
    built = set(read_built(txn, meta_db, state.known) or ())
    built.update(
        view.name for view in state.known if view.built_by in rebuilt and view.name in state.wanted
    )
    write_built(txn, meta_db, built)
