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
import trio.testing

from tanglenode.node.gossip.inbox import FIRST_BATCH, MAX_PROOFS, Inbox, Kind
from tanglenode.node.service.store_service import StoreService
from tanglenode.storage.feeds.ingest import Outcome
from tanglenode.storage.store import FeedStore
from tests.factories import Feed

pytestmark = pytest.mark.timeout(60)


class GatedService(StoreService):
    """Stores only while `gate` is open; notes each stored batch's size."""

    def __init__(self, store: FeedStore, *, inline: bool = False) -> None:
        super().__init__(store, inline=inline)
        self.gate = trio.Event()
        self.batches: list[int] = []

    async def ingest_prepared(self, batch):
        await self.gate.wait()
        results = await super().ingest_prepared(batch)
        self.batches.append(len(results))
        return results


class SteppedService(GatedService):
    """Stores one batch for each `step()`; notes the size of each batch it prepares. It
    prepares and stores on the event loop (as in the simulator), so once every task
    waits (`trio.testing.wait_all_tasks_blocked`) the preparer has taken all it will."""

    def __init__(self, store: FeedStore) -> None:
        super().__init__(store, inline=True)
        self.gate.set()
        self._steps = trio.Semaphore(0)
        self.prepared: list[int] = []

    def step(self, batches: int = 1) -> None:
        for _ in range(batches):
            self._steps.release()

    async def prepare(self, raws):
        self.prepared.append(len(raws))
        return await super().prepare(raws)

    async def ingest_prepared(self, batch):
        await self._steps.acquire()
        return await super().ingest_prepared(batch)


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


@pytest.fixture
def stepped(tmp_path):
    with FeedStore(tmp_path / "store", map_size=2**27) as store:
        yield SteppedService(store)


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


async def test_frames_arriving_one_by_one_behind_a_busy_storer_fill_whole_batches(stepped):
    """The storer holds a batch and another is prepared behind it: the frames that
    trickle in meanwhile go to the store in batches of `max_batch` exactly (a frame split
    to fill one), not each as it came."""
    sent = frames("trickle", 10, 300)
    recorder = Recorder()
    inbox = Inbox(stepped, recorder.on_messages, recorder.on_evidence, max_batch=1000)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(inbox.run)
        for frame in sent:
            await inbox.put(Kind.MESSAGES, frame)
            await trio.testing.wait_all_tasks_blocked()  # the preparer saw it arrive
        # 256 at once for the idle storer, the rest of that frame behind it (the storer
        # had one batch only), then, with two in hand, a full batch as soon as one is queued.
        assert stepped.prepared == [FIRST_BATCH, 300 - FIRST_BATCH, 1000]
        stepped.step(5)
        await inbox.drained()
        nursery.cancel_scope.cancel()
    assert stepped.batches == [FIRST_BATCH, 300 - FIRST_BATCH, 1000, 1000, 700]
    assert recorder.outcomes == [Outcome.ACCEPTED] * 3000  # all of them, in order
    assert stepped.clock == {Feed("trickle").public: 3000}


async def test_a_lone_message_waits_for_no_company(stepped):
    """A message is taken at once while the storer has one batch or none in hand; with a
    batch stored and another prepared, it is taken as soon as the first is stored."""
    first, second, lone = frames("lone", 3, FIRST_BATCH)
    recorder = Recorder()
    inbox = Inbox(stepped, recorder.on_messages, recorder.on_evidence)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(inbox.run)
        await inbox.put(Kind.MESSAGES, first)
        await trio.testing.wait_all_tasks_blocked()
        await inbox.put(Kind.MESSAGES, second[:1])  # the storer has one batch in hand
        await until(lambda: stepped.prepared == [FIRST_BATCH, 1])
        await inbox.put(Kind.MESSAGES, second[1:2])  # one in hand and one behind it
        await trio.testing.wait_all_tasks_blocked()
        assert stepped.prepared == [FIRST_BATCH, 1]  # no hurry: it waits for company
        stepped.step()  # ... until the storer is done with one
        await until(lambda: stepped.prepared == [FIRST_BATCH, 1, 1])
        stepped.step(2)
        await inbox.drained()
        assert recorder.outcomes == [Outcome.ACCEPTED] * (FIRST_BATCH + 2)
        for raw in lone[:3]:  # live: each stored before the next arrives
            await inbox.put(Kind.MESSAGES, [raw])
            stepped.step()
            await inbox.drained()
        nursery.cancel_scope.cancel()
    assert stepped.batches == [FIRST_BATCH, 1, 1, 1, 1, 1]


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
