"""Preparing received batches (hash, decode, Ed25519) on a second core, in a worker process.

Theory of operation
-------------------
`prepare` needs no store, so a batch can be checked while the writer
stores the previous one. In a thread beside the writer it would share the
writer's GIL: the two hand it back and forth at every LMDB call and every
signature, and both slow down (measured: the writer went from 94-99 to
208-230 µs a message with a preparing thread beside it, against 124 with
a process). So a batch of at least `PROCESS_MIN` messages goes to a worker
process (node.service.verify_worker) over a pipe, pickled both ways; unpickling the
answer costs the daemon about 10 µs a message, no more than decoding would.
Smaller batches (live pushes) are prepared in a thread.

The answer (about three times the batch's bytes) crosses pipes widened to
`PIPE_BYTES` where the system allows it, so the event loop reads it in a
few large reads rather than one per 64 KiB, and it is unpickled in a
worker thread (`_unpickle`), never on the loop: the loop stays free for
the sockets while the batch before it is stored. The pipe is released
as soon as the answer is read, so the next batch can cross while this
one is unpickled.

`run` keeps the worker: the daemon runs it in its nursery for the node's
life. It starts the worker only once `want()` was called (a peer
connected), restarts it a second after it dies (waiting twice as long
each time one fails before it is ready, up to a minute), and kills it on
cancellation. Until the worker has said it is ready, and whenever there is
none (no `run` task, as in tests of the gossip alone, or a one-core
machine), batches go to the thread. One batch at a time crosses the pipe;
a call cancelled half-way across it kills the worker (its answer would be
out of step) and the next one starts clean; one cancelled while its answer
is unpickled waits for that (the pipe is in step) and keeps the worker.
The worker exits when its stdin ends, so it never outlives the daemon.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import pickle
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import structlog
import trio

from tanglenode.node.service.offload import Offload
from tanglenode.node.service.verify_worker import LENGTH, READY
from tanglenode.protocol.limits import Limits

log = structlog.get_logger("verifier")

PROCESS_MIN = 256  # messages: a smaller batch is prepared in a thread
RESTART_SECONDS = 1.0  # after a worker ends; doubling, up to LAST_RESTART_SECONDS, while
LAST_RESTART_SECONDS = 60.0  # workers keep failing before they said they were ready
WORKER = [sys.executable, "-m", "tanglenode.node.service.verify_worker"]
PIPE_BYTES = 1 << 20  # each pipe's buffer, where the system allows it (Linux: 64 KiB by default)


class WorkerFailed(Exception):
    """The worker answered nothing, or not a whole answer."""


async def _read_exactly(stream: trio.abc.ReceiveStream, count: int) -> bytearray:
    data = bytearray()
    while len(data) < count:
        chunk = await stream.receive_some(min(count - len(data), PIPE_BYTES))
        if not chunk:
            raise WorkerFailed("the verifying process closed its output")
        data += chunk
    return data


def _unpickle(answer: bytearray) -> Any:
    """The worker's answer, unpickled (in a worker thread: see the module doc)."""
    return pickle.loads(answer)


def _widen(stream: Any) -> None:
    """Give the pipe under `stream` a buffer of `PIPE_BYTES`, so that a batch crosses it
    in a few reads; a system that refuses (or has no such call) keeps its own."""
    setting = getattr(fcntl, "F_SETPIPE_SZ", None)
    if setting is not None:
        with contextlib.suppress(OSError):
            fcntl.fcntl(stream.fileno(), setting, PIPE_BYTES)


class Verifier:
    def __init__(
        self,
        limits: Limits,
        in_thread: Callable[[list[bytes]], Any],
        offload: Offload | None = None,
        *,
        processes: bool | None = None,
    ) -> None:
        self.limits = limits
        self.in_thread = in_thread  # the thread's prepare (it may read the store for known ids)
        self._offload = offload or Offload()  # where it runs (node/service/offload.py)
        self.processes = (os.cpu_count() or 1) > 1 if processes is None else processes
        self._worker: trio.Process | None = None  # while one runs and said it is ready
        self._wanted = trio.Event()
        self._ready = trio.Event()  # set while `_worker` is usable, replaced when it ends
        self._lock = trio.Lock()  # one batch in the pipe at a time
        self._threads = trio.CapacityLimiter(1)

    def want(self) -> None:
        """Start the worker (if `run` runs): messages from a peer are coming."""
        self._wanted.set()

    async def ready(self) -> None:
        """Until a worker is ready (for tests; `prepare` never waits for one)."""
        while self._worker is None:
            await self._ready.wait()

    @property
    def worker_pid(self) -> int | None:
        return None if self._worker is None else self._worker.pid

    async def run(self) -> None:
        """Keep a worker process, once wanted, until cancelled (which kills it)."""
        if not self.processes:
            return
        await self._wanted.wait()
        wait = RESTART_SECONDS
        while True:
            try:
                async with trio.open_nursery() as nursery:
                    process = await nursery.start(
                        functools.partial(
                            trio.run_process,
                            WORKER,
                            stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE,
                            check=False,
                        )
                    )
                    _widen(process.stdin)
                    _widen(process.stdout)
                    if await _read_exactly(process.stdout, len(READY)) != READY:
                        raise WorkerFailed("the verifying process did not say it was ready")
                    self._worker = process
                    self._ready.set()
                    wait = RESTART_SECONDS
            except (WorkerFailed, OSError, trio.BrokenResourceError) as error:
                log.warning("the verifying process failed", error=str(error))
            finally:
                self._worker = None
                self._ready = trio.Event()
            log.info("verifying in a thread until the process is restarted", seconds=wait)
            await trio.sleep(wait)
            wait = min(wait * 2, LAST_RESTART_SECONDS)

    async def prepare(self, raws: list[bytes]) -> Any:
        """The `PreparedBatch` of `raws`, from the worker process or a thread."""
        worker = self._worker
        if worker is not None and len(raws) >= PROCESS_MIN:
            try:
                async with self._lock:
                    answer = await self._exchange(worker, raws)
                return await self._offload.run(_unpickle, answer)  # off the loop
            except (WorkerFailed, trio.BrokenResourceError, trio.ClosedResourceError) as error:
                log.warning("the verifying process failed; verifying in a thread", error=str(error))
        return await self._offload.run(self.in_thread, raws, limiter=self._threads)

    async def _exchange(self, worker: trio.Process, raws: list[bytes]) -> bytearray:
        """`raws` sent to `worker`, and its answer, pickled."""
        if worker is not self._worker:
            raise WorkerFailed("the verifying process was replaced")
        stdin, stdout = worker.stdin, worker.stdout
        assert stdin is not None and stdout is not None  # started with both piped
        try:
            request = pickle.dumps((raws, self.limits), protocol=pickle.HIGHEST_PROTOCOL)
            await stdin.send_all(LENGTH.pack(len(request)) + request)
            (length,) = LENGTH.unpack(await _read_exactly(stdout, LENGTH.size))
            return await _read_exactly(stdout, length)
        except BaseException:
            self._discard(worker)  # half an exchange leaves the pipe out of step
            raise

    def _discard(self, worker: trio.Process) -> None:
        """Kill `worker` and stop using it; `run` starts another."""
        worker.kill()
        if self._worker is worker:
            self._worker = None
            self._ready = trio.Event()
