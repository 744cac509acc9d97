"""Ingest over two cores: batch N+1 is verified elsewhere while batch N is stored.

Theory of operation
-------------------
`storage.feeds.ingest.prepare` (ids, decoding, canonical checks, signatures) needs
no store; `store.writes.ingest_prepared` applies its result in one write
transaction. `ingest_batches` overlaps the two over a stream of batches
(`tangled import`, the bench): while this thread stores batch N, a worker
prepares batch N+1. The outcome is the same as `store.writes.ingest` on each batch
in turn: a message that batch N stores and N+1 repeats is found a duplicate
when N+1 is applied (the store decides duplicates, not the worker).

The worker is a process by default. A thread shares the writer's GIL: PyNaCl
drops it for each signature, but everything else `prepare` does (decoding,
checks, building `Message`s) is Python that runs in turn with the writer, so
two threads measured slower than one. A process takes the whole second core
and costs a pickle each way (the raw bytes out, the decoded batch back).

The process comes from a `forkserver` context: it never forks this process,
which has LMDB environments open, and the server preloads only this module
(not `__main__`). A single batch is stored in-line (no worker to start). The
first batch of a longer stream is also prepared in-line, while the worker
starts and prepares the second. If the worker dies, the batch it held and
everything after it are prepared in-line: the result is the same, slower, and
`on_fallback` is called once so the caller can say so (one core from there).
Neither the forkserver nor the worker outlives this process, even killed
with SIGKILL, or holds its standard streams (storage/feeds/orphan_guard.py).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from enum import StrEnum

from tanglenode.storage.feeds import orphan_guard
from tanglenode.storage.feeds.ingest import IngestResult, PreparedBatch, prepare


class Worker(StrEnum):
    """Where `ingest_batches` prepares the next batch."""

    PROCESS = "process"  # a second core, whole
    THREAD = "thread"  # shares the GIL; only the signature checks overlap
    INLINE = "inline"  # one core: prepare, then store, batch by batch


PIPELINE_SWITCH_INTERVAL = 0.0002  # seconds; see _short_switch_interval
_switch_lock = threading.Lock()
_switch_users: list[float] = []  # the interval saved by the first pipeline running


@contextlib.contextmanager
def _short_switch_interval() -> Iterator[None]:
    """A short GIL switch interval while any thread pipeline runs (restored after the last).

    The worker takes the GIL back after every signature (PyNaCl drops it); with the
    default 5 ms interval it would wait up to that long each time this thread runs Python.
    """
    with _switch_lock:
        _switch_users.append(sys.getswitchinterval())
        sys.setswitchinterval(min(_switch_users[0], PIPELINE_SWITCH_INTERVAL))
    try:
        yield
    finally:
        with _switch_lock:
            saved = _switch_users[0]
            _switch_users.pop()
            if not _switch_users:
                sys.setswitchinterval(saved)


def _process_pool() -> ProcessPoolExecutor:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([orphan_guard.__name__, __name__])
    orphan_guard.start_forkserver()
    return ProcessPoolExecutor(1, mp_context=context, initializer=orphan_guard.guard_worker)


def ingest_batches(
    store,
    batches: Iterable[Sequence[bytes]],
    *,
    worker: Worker = Worker.PROCESS,
    on_fallback: Callable[[], None] = lambda: None,
) -> Iterator[list[IngestResult]]:
    """Ingest each batch into `store` (a `FeedStore`) in order, yielding its results;
    `on_fallback()` once if the worker dies and batches are prepared in-line from then."""
    if worker is Worker.INLINE:
        for raws in batches:
            yield store.writes.ingest(raws)
        return
    stream = iter(batches)
    first = next(stream, None)
    if first is None:
        return
    second = next(stream, None)
    if second is None:
        yield store.writes.ingest(first)
        return
    if worker is Worker.THREAD:
        with (
            _short_switch_interval(),
            ThreadPoolExecutor(1, thread_name_prefix="tanglenode-prepare") as pool,
        ):
            yield from _pipelined(store, pool, first, second, stream, on_fallback)
        return
    with _process_pool() as pool:
        yield from _pipelined(store, pool, first, second, stream, on_fallback)


def _pipelined(
    store,
    pool,
    first: Sequence[bytes],
    second: Sequence[bytes],
    stream: Iterator,
    on_fallback: Callable[[], None],
) -> Iterator[list[IngestResult]]:
    """Store `first` (prepared here) while `pool` prepares `second`, then keep one ahead."""
    limits = store.limits
    broken = False

    def submit(raws: Sequence[bytes]) -> tuple[list[bytes], Future[PreparedBatch] | None]:
        raws = [bytes(raw) for raw in raws]
        if broken:
            return raws, None
        try:
            return raws, pool.submit(prepare, raws, limits)
        except (BrokenProcessPool, RuntimeError):
            fall_back()
            return raws, None

    def fall_back() -> None:
        nonlocal broken
        if not broken:
            broken = True
            on_fallback()

    def prepared(raws: list[bytes], future: Future[PreparedBatch] | None) -> PreparedBatch:
        if future is not None:
            try:
                return future.result()
            except BrokenProcessPool:
                fall_back()  # the worker died: prepare here from now on
        return store.writes.prepare(raws)

    pending = submit(second)
    yield store.writes.ingest(first)
    for raws in stream:
        upcoming = submit(raws)
        yield store.writes.ingest_prepared(prepared(*pending))
        pending = upcoming
    yield store.writes.ingest_prepared(prepared(*pending))
