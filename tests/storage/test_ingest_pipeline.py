"""prepare / ingest_prepared / ingest_batches: the two-core path gives what ingest gives."""

import sys
from dataclasses import replace

import pytest

from tanglenode.protocol.errors import Reason
from tanglenode.protocol.limits import DEFAULT_LIMITS
from tanglenode.storage.feeds.ingest import Outcome, prepare
from tanglenode.storage.feeds.ingest_pipeline import Worker, ingest_batches
from tanglenode.storage.store import FeedStore
from tests.factories import break_signature
from tests.storage.test_stored_form import chat, feeds


def outcomes(results) -> list[tuple[str, bytes]]:
    return [(r.outcome, r.id) for r in results]


def test_prepare_decides_what_needs_no_store():
    messages = chat(feeds(2), 2)
    raws = [m.raw for m in messages]
    broken = break_signature(raws[1])
    batch = prepare([raws[0], broken, raws[0], raws[2]], DEFAULT_LIMITS, {messages[2].id})
    assert batch.messages[0].raw == raws[0]
    assert (
        batch.results[1].outcome is Outcome.REJECTED and batch.results[1].reason == "bad-signature"
    )
    assert batch.results[2].outcome is Outcome.DUPLICATE  # a repeat within the batch
    assert batch.results[3].outcome is Outcome.DUPLICATE  # known to the caller
    assert batch.messages[1:] == [None, None, None]


def test_prepare_decodes_a_repeat_of_a_refused_copy():
    """A copy refused for what lies around its header has the good copy's id (the header's
    hash): the good copy after it is decoded, not a duplicate of the refusal; content that
    does not match is dropped there, the header kept."""
    message = chat(feeds(1), 1)[0]
    cut_short = message.raw[:-1]  # the content runs past the end: malformed
    garbled = message.raw[:-1] + bytes([message.raw[-1] ^ 1])
    batch = prepare([cut_short, message.raw, message.raw], DEFAULT_LIMITS)
    assert batch.ids == [message.id] * 3
    assert batch.results[0].outcome is Outcome.REJECTED and batch.results[0].reason == "malformed"
    assert batch.messages[1] == message
    assert batch.results[2].outcome is Outcome.DUPLICATE
    batch = prepare([garbled, message.raw], DEFAULT_LIMITS)
    assert batch.messages[0] == replace(
        message.without_content(), content_refused=Reason.CONTENT_MISMATCH
    )


@pytest.mark.parametrize("worker", [Worker.PROCESS, Worker.THREAD])
def test_two_cores_store_what_one_core_stores(tmp_path, worker):
    raws = [m.raw for m in chat(feeds(6), 8)]
    # overlapping batches: every other batch repeats the one before it
    batches = [raws[i : i + 7] for i in range(0, len(raws), 7)]
    batches = [b for pair in zip(batches, batches, strict=True) for b in pair]
    interval = sys.getswitchinterval()
    with FeedStore(tmp_path / "one") as one, FeedStore(tmp_path / "two") as two:
        sequential = [outcomes(one.writes.ingest(b)) for b in batches]
        pipelined = [outcomes(r) for r in ingest_batches(two, batches, worker=worker)]
        assert pipelined == sequential
        assert list(two.feeds.iter_raw()) == list(one.feeds.iter_raw())
        assert two.feeds.processed(0, 10_000) == one.feeds.processed(0, 10_000)
        assert two.feeds.check().ok
    assert sys.getswitchinterval() == interval  # restored


def test_a_dead_worker_leaves_the_outcome_unchanged(tmp_path, monkeypatch):
    """The worker process is killed mid-stream: the rest is prepared in-line, same result,
    and the caller is told once."""
    import os
    import signal

    from tanglenode.storage.feeds import ingest_pipeline

    real_pool = ingest_pipeline._process_pool
    killed = []

    def pool_that_loses_its_worker():
        pool = real_pool()
        real_submit = pool.submit

        def submit(*args, **kwargs):
            future = real_submit(*args, **kwargs)
            if not killed:  # after the first batch it prepares
                future.result()
                for pid in list(pool._processes):
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
            return future

        pool.submit = submit
        return pool

    monkeypatch.setattr(ingest_pipeline, "_process_pool", pool_that_loses_its_worker)
    raws = [m.raw for m in chat(feeds(4), 6)]
    batches = [raws[i : i + 5] for i in range(0, len(raws), 5)]
    with FeedStore(tmp_path / "one") as one, FeedStore(tmp_path / "two") as two:
        sequential = [outcomes(one.writes.ingest(b)) for b in batches]
        fallbacks = []
        pipelined = [
            outcomes(r)
            for r in ingest_batches(
                two, batches, worker=Worker.PROCESS, on_fallback=lambda: fallbacks.append(1)
            )
        ]
        assert killed  # the worker really died
        assert fallbacks == [1]  # said once, however many batches were prepared in-line after
        assert pipelined == sequential
        assert list(two.feeds.iter_raw()) == list(one.feeds.iter_raw())
