"""The timeline engine on its own: a batch of events through a scratch LMDB environment.

Theory of operation
-------------------
The node's engine (`storage.engine.timeline`) keeps its order in LMDB, so its
memory stays flat however long a timeline grows. Tools that want that
order for events that are not a store's messages (`tangled linearize`, the
pipeline's large timelines, the ScuttleSort sweep, the benchmark) run
`run_engine`: it opens an environment (a temporary directory, removed
afterwards, unless a directory is given), adds the events to one timeline in
write transactions of `batch` events each, and returns the final order with
the count of edit commands.

A run stops at the first exception from the events themselves (an iterator
that raises) or at an event the engine refuses (`DuplicateEvent`,
`CycleError`): the events before it stay committed, which matters with a
directory, and the refused one changes nothing; the exception propagates.
Anything else aborts the open batch. A directory whose timelines were
written before the engine numbered its refs (storage.engine.ref_numbers)
is refused (`IncompatibleStore`) before anything is written: its rows
would read as nonsense.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import lmdb

from tanglenode.storage.engine.timeline import Command, TimelineTables, TimelineWriter
from tanglenode.storage.engine.timeline_reader import TimelineReader
from tanglenode.storage.errors import CycleError, DuplicateEvent, IncompatibleStore

DEFAULT_BATCH = 2000
DEFAULT_MAP_SIZE = 64 * 2**30  # address space, not disk

# One event: its ref, the refs it follows, and the id it sorts by (None: its ref).
Event = tuple[bytes, Sequence[bytes], bytes | None]


@dataclass(frozen=True, slots=True)
class EngineRun:
    entries: list[tuple[int, bytes]]  # (rank, sort id) in order; [] unless asked for
    events: int
    commands: int
    seconds: float  # in the engine's transactions: adding and committing, not opening


@contextlib.contextmanager
def _environment(path: Path | None, map_size: int, prefix: str) -> Iterator[lmdb.Environment]:
    with contextlib.ExitStack() as stack:
        max_dbs = TimelineTables.COUNT + 1
        if path is None:
            directory = stack.enter_context(tempfile.TemporaryDirectory(prefix=prefix))
            env = lmdb.open(directory, map_size=map_size, max_dbs=max_dbs, sync=False)
        else:
            path.mkdir(parents=True, exist_ok=True)
            env = lmdb.open(str(path), map_size=map_size, max_dbs=max_dbs)
        stack.callback(env.close)
        _refuse_unnumbered(env, path)
        yield env


def _refuse_unnumbered(env: lmdb.Environment, path: Path | None) -> None:
    """Refuse timelines kept by an engine that stored refs, not their numbers."""
    with env.begin() as txn:  # the main database lists the named ones
        if txn.get(b"tl-names") is not None and txn.get(b"tl-refs") is None:
            raise IncompatibleStore(
                f"{path} holds timelines of an older layout (refs not numbered), which this "
                "build does not read: use a new directory"
            )


def run_engine(
    events: Iterable[Event],
    *,
    timeline: bytes = b"scratch",
    batch: int = DEFAULT_BATCH,
    path: Path | None = None,
    map_size: int = DEFAULT_MAP_SIZE,
    prefix: str = "tanglenode-scratch-",
    read_order: bool = True,
    on_added: Callable[[bytes, list[Command]], None] | None = None,
    after_batch: Callable[[], None] | None = None,
) -> EngineRun:
    """Add `events` to `timeline`, `batch` per transaction; its order and the cost.

    `on_added(ref, commands)` hears every event's edit commands,
    `after_batch()` is called after every commit, and `read_order=False`
    skips reading the final order (for runs that only count).
    """
    pending = iter(events)
    count = commands = 0
    with _environment(path, map_size, prefix) as env:
        tables = TimelineTables.open(env)
        started = time.perf_counter()
        finished = False
        while not finished:
            stopped: Exception | None = None
            with env.begin(write=True) as txn:
                writer = TimelineWriter(txn, tables)
                for _ in range(batch):
                    try:
                        ref, after, sort_id = next(pending)
                    except StopIteration:
                        finished = True
                        break
                    except Exception as error:  # a bad event: the run stops before it
                        stopped = error
                        break
                    try:
                        added = writer.add(timeline, ref, after, sort_id=sort_id)
                    except (DuplicateEvent, CycleError) as refused:
                        stopped = refused
                        break
                    count += 1
                    commands += len(added)
                    if on_added is not None:
                        on_added(ref, added)
                writer.finish()  # what came before a stop is committed
            if after_batch is not None:
                after_batch()
            if stopped is not None:
                raise stopped
        seconds = time.perf_counter() - started
        entries: list[tuple[int, bytes]] = []
        if read_order:
            with env.begin() as txn:
                reader = TimelineReader(txn, tables)
                if reader.exists(timeline):
                    entries = reader.entries(timeline)
    return EngineRun(entries, count, commands, seconds)
