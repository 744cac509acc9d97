"""What every area of the store shares: one LMDB environment, its tables, our keypair.

`FeedStore` (storage/store.py) opens a `StoreContext` and hands it to each
area object (`store.feeds`, `store.timelines`, `store.documents`,
`store.digests`) and to each derived view (storage/registry.py). Areas talk
to the environment only through it: `read()` and `write()` are the two ways
in, one transaction each, and a write that finds the map full raises
`StoreFull`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lmdb

from tanglenode.protocol.identity import Keypair
from tanglenode.protocol.limits import Limits
from tanglenode.storage.documents.rows import DocumentTables
from tanglenode.storage.engine.command_log import DEFAULT_RETENTION, LogRetention
from tanglenode.storage.engine.timeline import TimelineTables
from tanglenode.storage.errors import StoreFull
from tanglenode.storage.feeds.layout import Tables
from tanglenode.storage.feeds.processor import ProcessorTables
from tanglenode.storage.feeds.witnesses import WitnessTables
from tanglenode.storage.view_choice import ViewState


@dataclass(frozen=True, slots=True)
class StoreContext:
    """One open store: its environment and table handles, limits, (maybe) our keypair, and
    how much of each timeline's command log the writes keep (`log_retention`)."""

    path: Path
    env: lmdb.Environment
    tables: Tables
    timeline_tables: TimelineTables
    processor_tables: ProcessorTables
    document_tables: DocumentTables
    witness_tables: WitnessTables
    limits: Limits
    keypair: Keypair | None
    views: ViewState  # the optional views this store keeps (storage/view_choice.py)
    view_tables: Mapping[bytes, Any]  # every table the registered views declare, by name
    log_retention: LogRetention = DEFAULT_RETENTION

    def read(self) -> Any:
        """A read transaction (a context manager)."""
        return self.env.begin()

    @contextlib.contextmanager
    def write(self) -> Iterator[Any]:
        """A write transaction; `StoreFull` when the map is full."""
        try:
            with self.env.begin(write=True) as txn:
                yield txn
        except lmdb.MapFullError as error:
            raise self.full() from error

    def full(self) -> StoreFull:
        return StoreFull(f"the store at {self.path} is full; raise storage.map_size")
