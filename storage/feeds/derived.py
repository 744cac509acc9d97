"""Derived views: the one interface every index computed from stored messages implements.

Theory of operation
-------------------
A derived view is state every node computes the same way from the messages
it holds: the timelines, the causal-time twins, the tangles' joined views,
the names feeds give themselves, the documents. Each is an object built
once per open store over the shared `StoreContext`, listed once in
`storage.registry` (`Registry.open`). The store calls every view at the same five
moments, inside the write transaction that makes the change, so a view
commits with the message that changed it:

    accepted(scope, message)   a message was stored (it is in `messages` and
                               `message-ids` already), in batch order
    cut(scope, message)        a proof cut the feed back: the message has left
                               `messages` and `message-ids` (newest first)
    forget(scope, message)     the message's content left the store (an erase
                               request carried out, a purge: storage/erasure.py);
                               its header stays, and `message` still holds the
                               content: what the view drew from it goes
    processed(scope, step)     the causal processor moved: `step.order` holds
                               the messages processed, in processed order,
                               after `step.invalidated` feeds were cut back

`WriteScope` is what one write transaction looks like to the views: the
transaction and the one `TimelineWriter` every timeline-backed view writes
through (so the rank engine, the twins and the joined views share caches),
written out by `scope.finish()` before the processor runs.

Two more calls serve `tangled check` and `tangled reindex`, which walk the
same list (storage/reindex.py):

    check(txn, messages)       problems found comparing the view with the
                               messages alone (one line each)
    content(txn)               the view as (key, value) rows that depend only
                               on which messages are held, never on the
                               order they came in: a view rebuilt from
                               scratch yields exactly the rows of the view
                               kept incrementally

A view owns its storage: `tables` declares the named databases it writes
(`Table`: a name and its LMDB flags), which the store opens for the views it
registers (storage/store.py; no view's table is a field of the feed store's
`Tables`), and `reindex` empties them (with those of every view sharing one)
and feeds the view every stored message again. `version` numbers the
layout and meaning of its rows: the store records each view's version in
`meta` (`version_key`), and a store that recorded another one (or none: a
view newer than the store) rebuilds that view through `reindex` when it
opens, so a view's upgrade is a version bump, never hand-written code.

What a view may add beyond the five moments is declared, not probed: every
view has `hooks` (`ViewHooks`), a set of functions whose defaults do nothing
(`NO_HOOKS`); a view that needs one composes its own, e.g. the documents,
which weave a backlog after the transaction that processed it
(`backlog`, `catch_up`, `settle`), link a new edit to their own tips
(`tips`) and want each publish into a document in its own nested
transaction (`publishes_alone`). The writer asks every view these
questions; it names no view and no tangle. `cost` says what the view costs a store, measured (bytes
and ingest time per message); `optional` views are kept only where a node
turns them on (`[views]` in tangled.toml, storage/view_choice.py). The
processor's own bookkeeping is not a view: its order is the order messages
became ready on this node, which no rebuild can recover.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from tanglenode.protocol.message import Message
from tanglenode.storage.engine.timeline import TimelineWriter
from tanglenode.storage.engine.timeline_reader import TimelineReader

if TYPE_CHECKING:
    from tanglenode.storage.context import StoreContext

Position = tuple[bytes, int]


@dataclass(frozen=True, slots=True)
class ProcessedStep:
    """What one pass of the causal processor did, for the views that follow it."""

    order: Sequence[Position]  # processed now, in processed order
    batch: Mapping[Position, Message] = field(default_factory=dict)  # bodies at hand
    invalidated: Mapping[bytes, int] = field(default_factory=dict)  # feed -> cut from seq
    cut: Sequence[Message] = ()  # the messages the proofs removed

    def message(self, scope: WriteScope, position: Position) -> Message:
        found = self.batch.get(position)
        if found is None:
            found = scope.ctx.tables.bodies.message(scope.txn, position[0] + _u64(position[1]))
        return found


def _u64(seq: int) -> bytes:
    return seq.to_bytes(8, "big")


class WriteScope:
    """One write transaction as the views see it."""

    def __init__(self, txn: Any, ctx: StoreContext) -> None:
        self.txn = txn
        self.ctx = ctx
        self._timelines: TimelineWriter | None = None
        self._reader: TimelineReader | None = None

    @property
    def timelines(self) -> TimelineWriter:
        """The one timeline writer of this transaction (its command logs trimmed to the
        store's retention)."""
        if self._timelines is None:
            ctx = self.ctx
            self._timelines = TimelineWriter(self.txn, ctx.timeline_tables, ctx.log_retention)
        return self._timelines

    def finish(self) -> None:
        """Write what the timeline writer cached (its rows, its command logs trimmed)."""
        if self._timelines is not None:
            self._timelines.finish()

    @property
    def reader(self) -> TimelineReader:
        """The timelines as this transaction sees them (for the joined views)."""
        if self._reader is None:
            self._reader = TimelineReader(self.txn, self.ctx.timeline_tables)
        return self._reader


@dataclass(frozen=True, slots=True)
class ViewCost:
    """What keeping a view costs, measured on `bench/ingest.py`'s sparse 30K workload
    (docs/BENCHMARKS.md): bytes of its own rows per message in a compacted store, and the
    share of one-core ingest time it takes."""

    bytes_per_message: int
    ingest_share: float  # of one-core ingest time, 0..1
    serves: str  # what a node loses without it

    def describe(self) -> str:
        return (
            f"~{self.bytes_per_message} B a message, ~{round(self.ingest_share * 100)} % of "
            f"ingest; serves {self.serves}"
        )


@dataclass(frozen=True, slots=True)
class Table:
    """A named database a view declares: the store opens it with these flags."""

    name: bytes
    dupsort: bool = False
    dupfixed: bool = False


def table_names(tables: Sequence[Table]) -> tuple[bytes, ...]:
    return tuple(table.name for table in tables)


def open_tables(env: Any, kinds: Iterable[Any]) -> dict[bytes, Any]:
    """Open (making them where missing) the tables the view classes `kinds` declare: each
    LMDB handle by its name. Two views declaring one table must agree on its flags."""
    declared: dict[bytes, Table] = {}
    for kind in kinds:
        for table in kind.tables:
            if declared.setdefault(table.name, table) != table:
                raise ValueError(f"views declare the table {table.name!r} with other flags")
    with env.begin(write=True) as txn:
        return {
            table.name: env.open_db(
                table.name, txn=txn, dupsort=table.dupsort, dupfixed=table.dupfixed
            )
            for table in declared.values()
        }


def version_key(view_name: str) -> bytes:
    """The `meta` row holding the version of view `view_name` a store has built."""
    return b"view-version:" + view_name.encode()


def _nothing(_txn: Any) -> None:
    pass


def _nothing_to_mend() -> None:
    pass


def _none_waiting(_txn: Any) -> int:
    return 0


def _none_left(_txn: Any, _work: int | None) -> int:
    return 0


def _never(_tangles: Mapping[str, bytes | None]) -> bool:
    return False


def _no_tips(_txn: Any, _root: bytes, _name: str) -> list[bytes] | None:
    return None


@dataclass(frozen=True, slots=True)
class ViewHooks:
    """What a view may do beyond the five moments; each default does nothing.

    settle(txn)                 finish in write transaction `txn` all the view left
                                for later (a rebuild and its check read views whole)
    backlog(txn) -> int         how much work the view left for later (0: none)
    catch_up(txn, work) -> int  do about `work` units of that work (None: a slice of
                                the view's choosing) in write transaction `txn`;
                                how much is left
    publishes_alone(tangles)    a publish into `tangles` (name -> root) needs its own
                                nested transaction and processing (a document edit
                                names the tips the one before it left)
    tips(txn, root, name)       the tips a new message of tangle `name` rooted at
                                `root` links to, or None: not this view's tangle (the
                                joined view's tips then, storage.views.tangles)
    opened()                    the store opened (its views at their versions): mend
                                what a build that kept the view without some newer
                                part of it left, in transactions of its own (the
                                documents: the index of each atom's children)
    """

    settle: Callable[[Any], None] = _nothing
    backlog: Callable[[Any], int] = _none_waiting
    catch_up: Callable[[Any, int | None], int] = _none_left
    publishes_alone: Callable[[Mapping[str, bytes | None]], bool] = _never
    tips: Callable[[Any, bytes, str], list[bytes] | None] = _no_tips
    opened: Callable[[], None] = _nothing_to_mend


NO_HOOKS = ViewHooks()


class DerivedView(Protocol):
    """An index computed from stored messages (see the module's theory of operation)."""

    name: str
    tables: tuple[Table, ...]  # the named databases it writes, opened by the store
    version: int  # of its rows' layout and meaning: another one recorded rebuilds it
    optional: bool  # a node may turn it off (`[views]`); the others every node keeps
    cost: ViewCost
    hooks: ViewHooks  # NO_HOOKS unless it does more than the five moments

    def accepted(self, scope: WriteScope, message: Message) -> None: ...

    def cut(self, scope: WriteScope, message: Message) -> None: ...

    def forget(self, scope: WriteScope, message: Message) -> None: ...

    def processed(self, scope: WriteScope, step: ProcessedStep) -> None: ...

    def check(self, txn: Any, messages: Mapping[Position, Message]) -> list[str]: ...

    def content(self, txn: Any) -> Iterator[tuple[bytes, bytes]]: ...
