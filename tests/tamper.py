"""Test-only: damage a store on purpose, through its own LMDB tables.

The store keeps its environment and tables private; a test that must break
an index opens the environment itself from the store's directory. The store
must be closed first: LMDB allows one environment per file per process.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lmdb

from tanglenode.storage.feeds.derived import open_tables
from tanglenode.storage.feeds.layout import MAX_NAMED_DATABASES, Tables
from tanglenode.storage.registry import REGISTRY


@contextlib.contextmanager
def tamper(store_path: str | Path) -> Iterator[tuple[Any, Tables]]:
    """A write transaction and the store's tables; commits on leaving the block."""
    env = lmdb.open(str(store_path), max_dbs=MAX_NAMED_DATABASES)
    try:
        tables = Tables.open(env)
        with env.begin(write=True) as txn:
            yield txn, tables
    finally:
        env.close()


@contextlib.contextmanager
def tamper_views(store_path: str | Path) -> Iterator[tuple[Any, Tables, dict[bytes, Any]]]:
    """`tamper`, with the tables the registered views declare, by name."""
    env = lmdb.open(str(store_path), max_dbs=MAX_NAMED_DATABASES)
    try:
        tables, views = Tables.open(env), open_tables(env, REGISTRY.views)
        with env.begin(write=True) as txn:
            yield txn, tables, views
    finally:
        env.close()
