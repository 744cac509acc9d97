"""The verifying process gives what the thread gives, and its death costs nothing but speed.

`node.service.verifier.Verifier` prepares a large batch in a spawned worker process
and a small one in a thread. Both run the same `prepare`, so a batch with
valid, badly signed, oversized and repeated messages must come back the
same either way; a worker killed outright must leave every batch still
prepared (in the thread) and the next one in a new process. The answer is
unpickled off the event loop, and a call cancelled meanwhile keeps the worker.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import threading

import pytest
import trio

from tanglenode.node.service import verifier as verifier_module
from tanglenode.node.service.verifier import PIPE_BYTES, PROCESS_MIN, Verifier
from tanglenode.node.service.verify_worker import prepare
from tanglenode.protocol.limits import DEFAULT_LIMITS
from tests.factories import Feed, break_signature, keypair, sign_raw, unsigned_fields

pytestmark = pytest.mark.timeout(60)


def mixed_batch(size: int) -> list[bytes]:
    """`size` messages: mostly valid, some badly signed, one too large, one repeated."""
    feed = Feed("verifier")
    raws = [feed.append({"n": n}).raw for n in range(size - 3)]
    raws[5] = break_signature(raws[5])
    big = sign_raw(keypair("big"), unsigned_fields(keypair("big"), content="x" * 20_000))
    return [*raws, big, raws[0], raws[1]]


def outcomes(batch) -> list[tuple]:
    """What a prepared batch says of each slot."""
    return [
        (msg_id, message and message.raw, result and (result.outcome, result.reason))
        for msg_id, message, result in zip(batch.ids, batch.messages, batch.results, strict=True)
    ]


def thread_only(raws: list[bytes]):
    return prepare(raws, DEFAULT_LIMITS)


@contextlib.asynccontextmanager
async def running(verifier: Verifier):
    """`verifier.run` in a nursery, wanted and ready; cancelled (the worker killed) after."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(verifier.run)
        verifier.want()
        await verifier.ready()
        yield
        nursery.cancel_scope.cancel()


async def test_the_process_prepares_a_large_batch_as_the_thread_does():
    raws = mixed_batch(PROCESS_MIN + 40)
    in_thread = []

    def counted(batch):
        in_thread.append(len(batch))
        return thread_only(batch)

    verifier = Verifier(DEFAULT_LIMITS, counted, processes=True)
    async with running(verifier):
        pid = verifier.worker_pid
        assert pid is not None
        from_process = await verifier.prepare(raws)
        assert in_thread == []  # it went to the process
        small = await verifier.prepare(raws[:10])
        assert in_thread == [10]  # a small batch stays in the thread
    assert outcomes(from_process) == outcomes(thread_only(raws))
    assert outcomes(small) == outcomes(thread_only(raws[:10]))
    decided = [slot for slot in outcomes(from_process) if slot[2] is not None]
    assert len(decided) == 4  # the forged one, the large one and the two repeats
    assert verifier.worker_pid is None
    with pytest.raises(ProcessLookupError):  # cancelling `run` killed it
        for _ in range(500):
            os.kill(pid, 0)
            await trio.sleep(0.01)


async def test_a_killed_worker_sends_batches_to_the_thread_then_is_replaced():
    raws = mixed_batch(PROCESS_MIN + 8)
    verifier = Verifier(DEFAULT_LIMITS, thread_only, processes=True)
    async with running(verifier):
        first = verifier.worker_pid
        os.kill(first, signal.SIGKILL)
        batch = await verifier.prepare(raws)  # the dead worker's pipe fails: the thread does it
        assert outcomes(batch) == outcomes(thread_only(raws))
        await verifier.ready()
        assert verifier.worker_pid not in (None, first)
        assert outcomes(await verifier.prepare(raws)) == outcomes(thread_only(raws))


async def test_a_call_cancelled_anywhere_leaves_the_next_answer_right():
    """Cancelled before, while or after its batch crosses the pipe: the next call still
    gets its own batch's answer (a worker left half-way is replaced)."""
    raws = mixed_batch(PROCESS_MIN + 8)
    large = mixed_batch(3000)
    verifier = Verifier(DEFAULT_LIMITS, thread_only, processes=True)
    async with running(verifier):
        for delay in (0, 0.001, 0.01, 0.05, 0.2):
            with trio.move_on_after(delay):
                await verifier.prepare(large)
            assert outcomes(await verifier.prepare(raws)) == outcomes(thread_only(raws))
            await verifier.ready()


async def test_without_processes_or_run_everything_is_prepared_in_the_thread():
    raws = mixed_batch(PROCESS_MIN + 8)
    off = Verifier(DEFAULT_LIMITS, thread_only, processes=False)
    off.want()
    await off.run()  # returns at once: no worker on this machine
    not_run = Verifier(DEFAULT_LIMITS, thread_only, processes=True)
    not_run.want()  # nothing runs `run` (a service in a test, say)
    for verifier in (off, not_run):
        assert verifier.worker_pid is None
        assert outcomes(await verifier.prepare(raws)) == outcomes(thread_only(raws))


async def test_the_answer_crosses_wide_pipes_and_is_unpickled_off_the_loop(monkeypatch):
    raws = mixed_batch(PROCESS_MIN + 8)
    threads = []

    def recorded(answer):
        threads.append(threading.current_thread())
        return unpickle(answer)

    unpickle = verifier_module._unpickle
    monkeypatch.setattr(verifier_module, "_unpickle", recorded)
    verifier = Verifier(DEFAULT_LIMITS, thread_only, processes=True)
    async with running(verifier):
        worker = verifier._worker
        assert worker is not None and worker.stdin is not None and worker.stdout is not None
        with open("/proc/sys/fs/pipe-max-size") as limit:
            if int(limit.read()) >= PIPE_BYTES:  # a system that allows it widens both
                for pipe in (worker.stdin, worker.stdout):
                    assert fcntl.fcntl(pipe.fileno(), fcntl.F_GETPIPE_SZ) >= PIPE_BYTES
        assert outcomes(await verifier.prepare(raws)) == outcomes(thread_only(raws))
    assert len(threads) == 1 and threads[0] is not threading.current_thread()  # not the loop's


async def test_a_call_cancelled_while_its_answer_is_unpickled_keeps_the_worker(monkeypatch):
    raws = mixed_batch(PROCESS_MIN + 8)
    unpickling, go_on = threading.Event(), threading.Event()
    unpickle = verifier_module._unpickle

    def held(answer):
        unpickling.set()
        go_on.wait(30)
        return unpickle(answer)

    verifier = Verifier(DEFAULT_LIMITS, thread_only, processes=True)
    async with running(verifier):
        pid = verifier.worker_pid
        monkeypatch.setattr(verifier_module, "_unpickle", held)
        async with trio.open_nursery() as nursery:
            with trio.CancelScope() as scope:

                async def cancel_while_unpickling() -> None:
                    await trio.to_thread.run_sync(unpickling.wait)
                    scope.cancel()
                    go_on.set()

                nursery.start_soon(cancel_while_unpickling)
                await verifier.prepare(raws)
                await trio.sleep_forever()  # cancelled by then: it returns at once
        monkeypatch.setattr(verifier_module, "_unpickle", unpickle)
        assert verifier.worker_pid == pid  # the pipe was in step: the worker stays
        assert outcomes(await verifier.prepare(raws)) == outcomes(thread_only(raws))
        assert verifier.worker_pid == pid
