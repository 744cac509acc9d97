"""Preparing received batches (hash, decode, Ed25519) on a second core, in a worker process.

Theory of operation
-------------------
`prepare` needs no store, so a batch can be checked while the writer
stores the previous one. In a thread it would share the writer's GIL: the
two hand it back and forth at every LMDB call and every signature, and
both ran at about half speed (measured: the writer went from 108-144 to
217-299 µs a message with a preparing thread beside it). So a batch of at
least `PROCESS_MIN` messages goes to one worker process, which returns the
`PreparedBatch` pickled; unpickling it costs the daemon about 6 µs a
message, less than decoding would. Smaller batches (live pushes) are
prepared in a thread, where the round trip costs nothing.

The process is spawned (nothing of the daemon's threads or sockets is
copied) on the first call, and until it has started, which takes a few
tenths of a second, batches go to the thread. A process that dies sends
the batches to the thread again, and the next call spawns another. The
worker exits when its parent does, even one killed outright (it checks
its parent every second), and `close` stops it. On a one-core machine no
process is started at all.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import structlog
import trio

from tanglenode.protocol.limits import Limits

try:  # INGEST's (issue 14)
    from tanglenode.storage.ingest import prepare as _prepare
except ImportError:  # STAND-IN until INGEST is merged: delete this fallback
    from tanglenode.node.ingest_standin import prepare as _prepare

log = structlog.get_logger("verifier")

PROCESS_MIN = 256  # messages: a smaller batch is prepared in a thread


def _watch_parent(parent: int) -> None:
    """In the worker: exit once the daemon is gone (its pipes alone may not tell us)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()


def _ready() -> bool:
    return True


def prepare_in_worker(raws: Sequence[bytes], limits: Limits) -> Any:
    return _prepare(raws, limits)


class Verifier:
    def __init__(
        self,
        limits: Limits,
        in_thread: Callable[[list[bytes]], Any],
        *,
        processes: bool | None = None,
    ) -> None:
        self.limits = limits
        self.in_thread = in_thread  # the thread's prepare (it may read the store for known ids)
        self.processes = (os.cpu_count() or 1) > 1 if processes is None else processes
        self._pool: ProcessPoolExecutor | None = None
        self._started: Future | None = None  # done once the worker answered
        self._threads = trio.CapacityLimiter(1)

    async def prepare(self, raws: list[bytes]) -> Any:
        """The `PreparedBatch` of `raws`, from the worker process or a thread."""
        if self.processes and len(raws) >= PROCESS_MIN:
            try:
                if self._warm():
                    return await self._in_process(raws)
            except BrokenProcessPool:
                log.warning("the verifying process died; verifying in a thread")
                self._stop()
        return await trio.to_thread.run_sync(self.in_thread, raws, limiter=self._threads)

    async def start(self) -> None:
        """Start the worker process now and wait until it answers (`prepare` never waits)."""
        if self.processes:
            self._warm()
            await trio.to_thread.run_sync(self._started.exception)

    @property
    def worker_pid(self) -> int | None:
        """The worker process's pid, once it runs."""
        if self._pool is None or self._started is None or not self._started.done():
            return None
        return next(iter(self._pool._processes), None)

    def _warm(self) -> bool:
        """True once the worker process runs; starts it if there is none."""
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                max_workers=1,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_watch_parent,
                initargs=(os.getpid(),),
            )
            self._started = self._pool.submit(_ready)
        started = self._started
        if not started.done():
            return False
        if started.exception() is not None:
            raise BrokenProcessPool(str(started.exception()))
        return True

    async def _in_process(self, raws: list[bytes]) -> Any:
        future = self._pool.submit(prepare_in_worker, raws, self.limits)
        try:
            return await trio.to_thread.run_sync(future.result, abandon_on_cancel=True)
        finally:
            future.cancel()  # nothing if it ran; if we were cancelled, it need not

    def _stop(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        self._pool = self._started = None

    def close(self) -> None:
        """Stop the worker process (the next `prepare` would start another)."""
        self._stop()
