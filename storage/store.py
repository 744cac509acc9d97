"""The feed store: signed feeds in LMDB, composed of one area object per kind of question.

`FeedStore` opens the environment, refuses a store of another schema, opens
the tables the registered derived views declare, rebuilds the views whose
version the store did not record (storage/reindex.py), and builds one
`StoreContext` (storage/context.py: the environment, the table
handles, the limits, our keypair, the command logs' retention) that every
part shares. The parts:

    store.writes     ingest, publish, proofs: the one writer (storage/writes.py)
    store.feeds      feeds, messages, evidence, the processed order, replication,
                     statistics, `check` (storage/feed_reads.py)
    store.timelines  orders, versions, placements, command logs, finality
                     (storage/timeline_reads.py)
    store.tangles    the tangles held a page at a time, tips, a tangle's messages
                     (storage/tangle_reads.py)
    store.digests    timelines' digests (storage/views/digest.py)
    store.documents  create, edit and read documents (storage/documents/ops.py)
    store.views      the derived views every write feeds (storage/registry.py)

Every public method of an area is one LMDB transaction (`ingest`: one read
transaction to find the ids held, then one write transaction). No area
reads another's private state: the writer is handed to the documents, the
views to the writer and to `check`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection
from dataclasses import replace
from pathlib import Path

import lmdb

from tanglenode.protocol.identity import Keypair
from tanglenode.protocol.limits import DEFAULT_LIMITS, Limits
from tanglenode.storage.context import StoreContext
from tanglenode.storage.documents.ops import DocumentOps
from tanglenode.storage.documents.rows import DocumentTables
from tanglenode.storage.engine.command_log import DEFAULT_RETENTION, LogRetention
from tanglenode.storage.engine.timeline import TimelineTables
from tanglenode.storage.errors import (
    IncompatibleStore,
    StorageError,
    StoreDamaged,
    StoreNotFound,
)
from tanglenode.storage.feed_reads import FeedReads
from tanglenode.storage.feeds import proof_order
from tanglenode.storage.feeds.derived import DerivedView, open_tables, version_key
from tanglenode.storage.feeds.ids_migration import migrate_14
from tanglenode.storage.feeds.layout import (
    MAX_NAMED_DATABASES,
    MIGRATED_SCHEMAS,
    PREVIOUS_FORMAT_SCHEMAS,
    SCHEMA_VERSION,
    Tables,
)
from tanglenode.storage.feeds.metapage import check_data_file
from tanglenode.storage.feeds.ownhead import OwnHeadFile, head_path
from tanglenode.storage.feeds.processor import ProcessorTables
from tanglenode.storage.feeds.processor_rows import migrate_13
from tanglenode.storage.feeds.witnesses import WitnessTables
from tanglenode.storage.invites import InviteBook
from tanglenode.storage.registry import REGISTRY, Registry
from tanglenode.storage.reindex import Progress, rebuild_outdated
from tanglenode.storage.tangle_reads import TangleReads
from tanglenode.storage.timeline_reads import TimelineReads
from tanglenode.storage.view_choice import choose_views
from tanglenode.storage.views.digest import DigestReads
from tanglenode.storage.writes import TimeframeSource, Writes

DEFAULT_MAP_SIZE = 64 * 2**30  # address space, not disk: the file grows as data does

log = logging.getLogger(__name__)


class MigrationFailed(Exception):
    """A row of the schema being migrated is not of its layout (storage.feeds.processor_rows)."""


class FeedStore:
    """Signed, append-only feeds in one LMDB environment (a directory), by area.

    `retention`: how much of each timeline's command log the writes keep
    (storage.engine.command_log); the node passes its setting
    `timelines.keep_commands`, and a store opened without one keeps what that
    setting's default keeps (`DEFAULT_RETENTION`), so every writer of a store
    bounds its logs alike. `KEEP_ALL` keeps every command.

    `clock`: seconds since the epoch, our new messages' default timestamp
    (the simulator's stores read virtual time). `durable=False` skips
    flushing each commit to disk: for the simulator's stores only, which
    nothing must survive (node/sim/network.py). `single_descriptor=True`
    holds one file descriptor where a store holds three: no lock file
    (LMDB's `lock=False`: every access on one thread of one process, the
    caller's promise) and writes through the map (`writemap`: no second
    descriptor for the meta pages). For the simulator only, whose ten
    thousand stores share one process and its descriptor limit.

    `registry`: the derived views kept (storage/registry.py): the store opens
    the tables they declare, and rebuilds any whose version it did not record
    before it returns (storage/reindex.py, "Versions"), telling `progress`
    (phase, messages done) and the log how far it is.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        keypair: Keypair | None = None,
        limits: Limits = DEFAULT_LIMITS,
        map_size: int = DEFAULT_MAP_SIZE,
        create: bool = True,
        timeframe_source: TimeframeSource | None = None,
        views: Collection[str] | None = None,
        retention: LogRetention = DEFAULT_RETENTION,
        clock: Callable[[], float] = time.time,
        durable: bool = True,
        single_descriptor: bool = False,
        registry: Registry = REGISTRY,
        progress: Progress | None = None,
    ) -> None:
        if not isinstance(retention, LogRetention):
            raise TypeError(f"retention must be a LogRetention, not {type(retention).__name__}")
        self.path = Path(path)
        if not create and not (self.path / "data.mdb").exists():
            raise StoreNotFound(f"no store at {self.path}")
        self.path.mkdir(parents=True, exist_ok=True)
        check_data_file(self.path)  # refuses an emptied or truncated data.mdb (SIGBUS otherwise)
        try:
            # `durable=False` (the simulator's stores only): commits are not flushed to disk
            self._env = lmdb.open(
                str(self.path),
                map_size=map_size,
                max_dbs=MAX_NAMED_DATABASES,
                sync=durable,
                metasync=durable,
                lock=not single_descriptor,
                writemap=single_descriptor,
            )
        except lmdb.Error as error:
            raise StorageError(f"cannot open the store at {self.path}: {error}") from error
        self.own_head_path = head_path(self.path)
        try:
            tables = Tables.open(self._env)
            # before any table of this schema is made; a store of schema 13 or 14 is migrated
            self._check_schema(tables, registry, progress)
            timeline_tables = TimelineTables.open(self._env, tables.ref_homes())
            view_tables = open_tables(self._env, registry.views)
            with self._env.begin() as txn:
                empty = tables.bodies.count(txn) == 0
            state = choose_views(
                self._env, tables.meta, timeline_tables, registry.optional, views, empty
            )
            self.ctx = StoreContext(
                self.path,
                self._env,
                tables,
                timeline_tables,
                ProcessorTables.open(self._env),
                DocumentTables.open(self._env),
                WitnessTables.open(self._env),
                limits,
                keypair,
                state,
                view_tables,
                retention,
            )
        except lmdb.Error as error:
            self._env.close()
            raise StoreDamaged(f"the store at {self.path} is damaged: {error}") from None
        except MigrationFailed as error:  # a row the migration cannot read: nothing written
            self._env.close()
            raise StoreDamaged(
                f"the store at {self.path} cannot be migrated: {error}; run `tangled check` "
                "with the build that wrote it"
            ) from None
        except ValueError:  # views declaring one table alike but for its flags
            self._env.close()
            raise
        self._number_proofs()
        self._registry = registry
        self.views = registry.open(self.ctx)
        rebuild_outdated(self.ctx, self.views, progress)  # a view of another version
        for view in self.views:
            view.hooks.opened()
        own_head = OwnHeadFile(self.own_head_path)
        self.writes = Writes(self.ctx, self.views, own_head, timeframe_source, clock)
        self.feeds = FeedReads(self.ctx, self.views)
        self.timelines = TimelineReads(self.ctx)
        self.tangles = TangleReads(self.ctx)
        self.digests = DigestReads(self.ctx)
        self.documents = DocumentOps(self.ctx, self.writes)
        self.invites = InviteBook(self.ctx, self.writes)

    # -- lifecycle ---------------------------------------------------------

    def close(self) -> None:
        self._env.close()

    def __enter__(self) -> FeedStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def limits(self) -> Limits:
        return self.ctx.limits

    def wanted_views(self) -> tuple[DerivedView, ...]:
        """The views this store keeps and those its node turned on but it has not built yet:
        what `tangled reindex` builds (storage/reindex.py)."""
        return self._registry.open(replace(self.ctx, views=self.ctx.views.expanded()))

    def _check_schema(
        self, tables: Tables, registry: Registry, progress: Progress | None = None
    ) -> None:
        """Refuse another schema, or mark a new store, with the version of each view its
        rows are (none yet: nothing to build), or migrate a store of schema 13 or 14 in place,
        in the one write transaction that marks it of this schema (a crash leaves it as
        it was: it migrates at the next open)."""
        with self._env.begin(write=True) as txn:
            found = txn.get(b"schema", db=tables.meta)
            if found is None:
                txn.put(b"schema", SCHEMA_VERSION, db=tables.meta)
                for kind in registry.views:
                    txn.put(version_key(kind.name), str(kind.version).encode(), db=tables.meta)
            elif found in MIGRATED_SCHEMAS:
                log.info(
                    "store schema %s: rewriting %s for schema %s",
                    found.decode(),
                    MIGRATED_SCHEMAS[found],
                    SCHEMA_VERSION.decode(),
                )
                try:
                    if found == b"13":
                        migrate_13(self._env, txn, tables.feeds, progress)
                    migrate_14(self._env, txn, tables.message_ids, tables.feeds, progress)
                except ValueError as error:
                    raise MigrationFailed(str(error)) from error
                txn.put(b"schema", SCHEMA_VERSION, db=tables.meta)
            elif found in PREVIOUS_FORMAT_SCHEMAS:
                held = PREVIOUS_FORMAT_SCHEMAS[found]
                why = (
                    "timeframes without tags"
                    if held == 1
                    else "signatures over the content, which cannot be erased"
                )
                raise IncompatibleStore(
                    f"store schema {found.decode()} holds messages of format {held} ({why}), "
                    "which this build refuses: start a new data directory "
                    "(`tangled init`) and let peers of this version replicate to it"
                )
            elif found != SCHEMA_VERSION:
                raise IncompatibleStore(
                    f"store schema {found.decode(errors='replace')}, this build reads "
                    f"{SCHEMA_VERSION.decode()}: with the build that wrote it, "
                    "`tangled export --bundle FILE`, then `tangled import FILE` into a new "
                    "data directory with this one"
                )

    def _number_proofs(self) -> None:
        """Number the kept proofs again when `proof-order` does not match them: a store
        older than it, or written since by a build without it (storage/feeds/proof_order.py)."""
        tables = self.ctx.tables
        with self.ctx.read() as txn:
            if proof_order.current(txn, tables):
                return
        with self.ctx.write() as txn:
            proof_order.renumber(txn, tables)

    @property
    def keypair(self) -> Keypair | None:
        return self.ctx.keypair
