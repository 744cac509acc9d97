"""The receiving pipeline (node.gossip.inbox) over a real store: bounded, ordered, batched.

A real `FeedStore` in a tmp dir behind a `StoreService` whose storing waits
on a gate, so a test holds the storer (a slow disk) and watches what the
inbox does meanwhile: how many bytes it lets the reader hand it, how it
cuts and merges batches, where EVIDENCE goes. Every wait is on a condition
of the pipeline (polled), bounded by the test's timeout, never a duration.
"""

from __future__ import annotations

import pytest
import trio

from tanglenode.node.gossip.inbox import FIRST_BATCH, MAX_PROOFS, Inbox, Kind
from tanglenode.node.service.store_service import StoreService
from tanglenode.storage.feeds.ingest import Outcome
from tanglenode.storage.store import FeedStore
from tests.factories import Feed

pytestmark = pytest.mark.timeout(60)


class GatedService(StoreService):
    """Stores only while `gate` is open; notes each stored batch's size."""

    def __init__(self, store: FeedStore) -> None:
        super().__init__(store)
        self.gate = trio.Event()
        self.batches: list[int] = []

    async def ingest_prepared(self, batch):
        await self.gate.wait()
        results = await super().ingest_prepared(batch)
        self.batches.append(len(results))
        return results


class Recorder:
    """The session's side: what the inbox reported, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []
        self.outcomes: list[Outcome] = []

    async def on_messages(self, raws, results) -> None:
        self.events.append(("messages", len(raws)))
        self.outcomes.extend(result.outcome for result in results)

    async def on_evidence(self, proofs) -> None:
        self.events.append(("evidence", len(proofs)))


@pytest.fixture
def service(tmp_path):
    with FeedStore(tmp_path / "store", map_size=2**27) as store:
        yield GatedService(store)


def frames(label: str, count: int, size: int) -> list[list[bytes]]:
    feed = Feed(label)
    raws = [feed.append({"n": n, "pad": "x" * 100}).raw for n in range(count * size)]
    return [raws[start : start + size] for start in range(0, len(raws), size)]


async def until(condition) -> None:
    while not condition():
        await trio.sleep(0.005)


async def test_the_reader_waits_while_the_inbox_holds_too_many_bytes(service):
    sent = frames("bounded", 12, 4)
    frame_bytes = max(sum(map(len, frame)) for frame in sent)
    recorder = Recorder()
    inbox = Inbox(service, recorder.on_messages, recorder.on_evidence, max_bytes=3 * frame_bytes)
    put = 0
    most_held = 0

    async def reader() -> None:
        nonlocal put, most_held
        for frame in sent:
            await inbox.put(Kind.MESSAGES, frame)
            put += 1
            most_held = max(most_held, inbox.held)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(inbox.run)
        nursery.start_soon(reader)
        await until(lambda: inbox.held > inbox.max_bytes)
        for _ in range(20):  # the storer is held: the reader gets no further
            await trio.sleep(0.005)
            assert put < len(sent)
            assert inbox.held <= inbox.max_bytes + frame_bytes
        service.gate.set()
        await until(lambda: put == len(sent))
        await inbox.drained()
        nursery.cancel_scope.cancel()
    assert most_held <= inbox.max_bytes + frame_bytes
    assert recorder.outcomes == [Outcome.ACCEPTED] * 48  # all of them, in order
    assert service.clock == {Feed("bounded").public: 48}


async def test_batches_start_small_then_take_all_that_piled_up(service):
    sent = frames("batches", 6, 300)
    recorder = Recorder()
    inbox = Inbox(service, recorder.on_messages, recorder.on_evidence, max_batch=1000)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(inbox.run)
        for frame in sent:
            await inbox.put(Kind.MESSAGES, frame)
        service.gate.set()
        await inbox.drained()
        nursery.cancel_scope.cancel()
    # The storer had nothing to do: the first batch is cut short so it starts at
    # once; behind it, the frames that piled up go in batches of up to 1000.
    assert service.batches[0] == FIRST_BATCH
    assert sum(service.batches) == 1800
    assert max(service.batches) <= 1000
    assert len(service.batches) < len(sent)
    assert recorder.outcomes == [Outcome.ACCEPTED] * 1800


async def test_evidence_goes_between_the_messages_it_arrived_between(service):
    first, second = frames("ordered", 2, 5)
    recorder = Recorder()
    inbox = Inbox(service, recorder.on_messages, recorder.on_evidence)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(inbox.run)
        await inbox.put(Kind.MESSAGES, first)
        await inbox.put(Kind.EVIDENCE, [b"a proof", b"of two"])
        await inbox.put(Kind.MESSAGES, second)
        service.gate.set()
        await inbox.drained()
        nursery.cancel_scope.cancel()
    assert recorder.events == [("messages", 5), ("evidence", 1), ("messages", 5)]
    assert inbox.held == 0


async def test_consecutive_proofs_are_handed_on_together_between_messages(service):
    """A burst of EVIDENCE frames is handed on `MAX_PROOFS` at a time (a write transaction
    each), and still goes between the messages it arrived between."""
    first, second = frames("burst", 2, 5)
    recorder = Recorder()
    inbox = Inbox(service, recorder.on_messages, recorder.on_evidence)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(inbox.run)
        await inbox.put(Kind.MESSAGES, first)
        for n in range(5 * MAX_PROOFS):
            await inbox.put(Kind.EVIDENCE, [b"proof %d" % n, b"of two"])
        await inbox.put(Kind.MESSAGES, second)
        service.gate.set()
        await inbox.drained()
        nursery.cancel_scope.cancel()
    bursts = [("evidence", MAX_PROOFS)] * 5
    assert recorder.events == [("messages", 5), *bursts, ("messages", 5)]
    assert inbox.held == 0
