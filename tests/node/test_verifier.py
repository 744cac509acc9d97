"""The verifying process gives what the thread gives, and its death costs nothing but speed.

`node.verifier.Verifier` prepares a large batch in a spawned worker process
and a small one in a thread. Both run the same `prepare`, so a batch with
valid, badly signed, oversized and repeated messages must come back the
same either way; a worker killed outright must leave every batch still
prepared (in the thread) and the next one in a new process.
"""

from __future__ import annotations

import os
import signal

import pytest
import trio

from tanglenode.node import verifier as verifier_module
from tanglenode.node.verifier import PROCESS_MIN, Verifier
from tanglenode.protocol.limits import DEFAULT_LIMITS
from tests.factories import Feed, keypair, sign_raw, unsigned_fields

pytestmark = pytest.mark.timeout(60)


def mixed_batch(size: int) -> list[bytes]:
    """`size` messages: mostly valid, some badly signed, one too large, one repeated."""
    feed = Feed("verifier")
    raws = [feed.append({"n": n}).raw for n in range(size - 3)]
    forged = bytearray(raws[5])
    forged[-1] ^= 1  # the signature's last byte
    raws[5] = bytes(forged)
    big = sign_raw(keypair("big"), unsigned_fields(keypair("big"), content="x" * 20_000))
    return [*raws, big, raws[0], raws[1]]


def outcomes(batch) -> list[tuple]:
    """What a prepared batch says of each slot."""
    return [
        (msg_id, message and message.raw, result and (result.outcome, result.reason))
        for msg_id, message, result in zip(batch.ids, batch.messages, batch.results, strict=True)
    ]


def thread_only(raws: list[bytes]):
    return verifier_module.prepare_in_worker(raws, DEFAULT_LIMITS)


async def test_the_process_prepares_a_large_batch_as_the_thread_does():
    raws = mixed_batch(PROCESS_MIN + 40)
    in_thread = []

    def counted(batch):
        in_thread.append(len(batch))
        return thread_only(batch)

    verifier = Verifier(DEFAULT_LIMITS, counted, processes=True)
    try:
        await verifier.start()
        assert verifier.worker_pid is not None
        from_process = await verifier.prepare(raws)
        assert in_thread == []  # it went to the process
        small = await verifier.prepare(raws[:10])
        assert in_thread == [10]  # a small batch stays in the thread
    finally:
        verifier.close()
    assert outcomes(from_process) == outcomes(thread_only(raws))
    assert outcomes(small) == outcomes(thread_only(raws[:10]))
    decided = [slot for slot in outcomes(from_process) if slot[2] is not None]
    assert len(decided) == 4  # the forged one, the large one and the two repeats


async def test_a_killed_worker_sends_batches_to_the_thread_then_is_replaced():
    raws = mixed_batch(PROCESS_MIN + 8)
    verifier = Verifier(DEFAULT_LIMITS, thread_only, processes=True)
    try:
        await verifier.start()
        first = verifier.worker_pid
        os.kill(first, signal.SIGKILL)
        while True:  # until the pool has noticed; each batch is prepared all the same
            batch = await verifier.prepare(raws)
            assert outcomes(batch) == outcomes(thread_only(raws))
            if verifier.worker_pid != first:
                break
            await trio.sleep(0.01)
        await verifier.start()
        assert verifier.worker_pid not in (None, first)
        assert outcomes(await verifier.prepare(raws)) == outcomes(thread_only(raws))
    finally:
        verifier.close()


async def test_without_processes_everything_is_prepared_in_the_thread():
    raws = mixed_batch(PROCESS_MIN + 8)
    verifier = Verifier(DEFAULT_LIMITS, thread_only, processes=False)
    await verifier.start()
    assert verifier.worker_pid is None
    assert outcomes(await verifier.prepare(raws)) == outcomes(thread_only(raws))
