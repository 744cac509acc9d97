"""What a peer sent, stored in arrival order by a two-stage pipeline.

Theory of operation
-------------------
The gossip reader hands every MESSAGES and EVIDENCE frame to `Inbox.put`
and goes back to the socket; two tasks take it from there:

- the preparer takes what has queued up, consecutive MESSAGES frames
  merged into one batch of at most `max_batch` messages, and decodes and
  verifies it without the store (`StoreService.prepare`: in the node's
  verifying process, node.service.verifier, so on the second core);
- the storer stores each prepared batch in one write transaction
  (`StoreService.ingest_prepared`) and reports it to the session
  (`on_messages`), which checks the results and grants credit back.

So batch N+1 is verified while batch N is stored (and up to two prepared
batches wait, which absorbs uneven batches), and more arrives meanwhile.
Batches size themselves: while the storer is busy, frames pile up and the
next batch takes them all, up to `max_batch` (a large batch costs one
commit); while it waits for work, the preparer takes at most
`FIRST_BATCH` messages, splitting a frame if need be, so the storer
starts soon (at the start of a catch-up, or for a live push). EVIDENCE
goes through the same line, between the messages it arrived between;
consecutive EVIDENCE frames are handed on together, at most
`MAX_PROOFS` (`on_evidence`, which applies them in one transaction).

Memory is bounded in bytes as well as by the credit window: once more than
`max_bytes` of received messages are queued, prepared or being stored,
`put` waits until the storer catches up, so the reader stops reading and
TCP holds the peer back. The storer never waits on the network (the
session sends its grants from another task), so a paused reader always
resumes.

Each frame is queued with the time it arrived; once a batch is committed,
the time since its oldest frame arrived goes into the node's ingest latency
histogram (node/service/counters.py): queueing, verifying and storing, all of it.
"""

from __future__ import annotations

import enum
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from tanglenode.node.service.store_service import StoreService

MAX_BATCH = 4096  # messages per write transaction at most
FIRST_BATCH = 256  # messages at most while the storer waits for work: it starts sooner
MAX_BYTES = 8 << 20  # received bytes held at once (queued, being verified or stored)
MAX_PROOFS = 8  # consecutive EVIDENCE frames handed on together at most


class Kind(enum.Enum):
    MESSAGES = "messages"
    EVIDENCE = "evidence"


class Inbox:
    def __init__(
        self,
        service: StoreService,
        on_messages: Callable[[list[bytes], list[Any]], Awaitable[None]],
        on_evidence: Callable[[list[list[bytes]]], Awaitable[None]],
        *,
        max_batch: int = MAX_BATCH,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        self.service = service
        self.on_messages = on_messages  # (raws, results) once stored
        self.on_evidence = on_evidence  # (proofs, each its raws) to check and apply
        self.max_batch = max_batch
        self.max_bytes = max_bytes
        self._queue: deque[tuple[Kind, list[bytes], int, float]] = deque()  # ..., arrival
        self.held = 0  # bytes received and not yet stored
        self._arrived = trio.Event()
        self._room = trio.Event()  # set (and replaced) whenever `held` goes down
        self._ahead = 0  # batches taken by the preparer and not yet stored

    async def put(self, kind: Kind, raws: list[bytes]) -> None:
        """Queue one frame's messages; waits while the inbox holds too many bytes."""
        if not raws:
            return
        size = sum(map(len, raws))
        self._queue.append((kind, raws, size, time.perf_counter()))
        self.held += size
        self._arrived.set()
        while self.held > self.max_bytes:
            await self._room.wait()

    async def drained(self) -> None:
        """Until everything put so far has been stored."""
        while self.held:
            await self._room.wait()

    async def run(self) -> None:
        """Prepare and store, forever (cancel it with the connection)."""
        send, receive = trio.open_memory_channel(1)  # two prepared batches wait, no more
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._prepare, send)
            await self._store(receive)

    def _take(self) -> tuple[Kind, list[bytes], int, float]:
        """The next frame, or consecutive MESSAGES frames merged up to `max_batch` messages;
        at most `FIRST_BATCH` when the storer has nothing to do (it starts sooner). A merged
        batch arrived when its oldest frame did."""
        kind, raws, size, arrived = self._queue.popleft()
        queue = self._queue
        if kind is Kind.MESSAGES and not self._ahead and len(raws) > FIRST_BATCH:
            rest = raws[FIRST_BATCH:]
            rest_size = sum(map(len, rest))
            queue.appendleft((kind, rest, rest_size, arrived))
            return kind, raws[:FIRST_BATCH], size - rest_size, arrived
        if kind is Kind.EVIDENCE:  # with the proofs that follow it: one transaction
            proofs = [raws]
            while queue and queue[0][0] is Kind.EVIDENCE and len(proofs) < MAX_PROOFS:
                _kind, more, more_size, _arrived = queue.popleft()
                proofs.append(more)
                size += more_size
            return kind, proofs, size, arrived  # type: ignore[return-value]  # raws: each a proof's
        if kind is Kind.MESSAGES and queue and queue[0][0] is Kind.MESSAGES:
            raws = list(raws)
            while (
                queue
                and queue[0][0] is Kind.MESSAGES
                and len(raws) + len(queue[0][1]) <= self.max_batch
            ):
                _kind, more, more_size, _arrived = queue.popleft()
                raws.extend(more)
                size += more_size
        return kind, raws, size, arrived

    async def _prepare(self, send: trio.MemorySendChannel) -> None:
        async with send:
            while True:
                while not self._queue:
                    self._arrived = trio.Event()
                    await self._arrived.wait()
                kind, raws, size, arrived = self._take()
                self._ahead += 1
                prepared = await self.service.prepare(raws) if kind is Kind.MESSAGES else None
                await send.send((kind, raws, size, arrived, prepared))

    async def _store(self, receive: trio.MemoryReceiveChannel) -> None:
        latency = self.service.counters.ingest_latency
        async with receive:
            async for kind, raws, size, arrived, prepared in receive:
                if kind is Kind.MESSAGES:
                    results = await self.service.ingest_prepared(prepared)
                    latency.observe(time.perf_counter() - arrived)
                    await self.on_messages(raws, results)
                else:
                    await self.on_evidence(raws)
                self.held -= size
                self._ahead -= 1
                self._room.set()
                self._room = trio.Event()
