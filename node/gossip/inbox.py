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
next batch takes them, `max_batch` messages, the last frame split to fill
it (each commit costs its page writes, so fewer, fuller ones store
faster); while it waits for work, the preparer takes at most
`FIRST_BATCH` messages, splitting a frame if need be, so the storer
starts soon (at the start of a catch-up, or for a live push). While the
storer has a batch in hand and another prepared behind it, the preparer
has time: it waits for more frames until a full batch is queued or the
storer finishes one, so a catch-up is stored in full batches, not in
whatever had arrived when the preparer came back for more. A lone message
never waits for company: with the storer idle, or with one batch only in
hand, the preparer takes what there is at once. EVIDENCE
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
        self._moved = trio.Event()  # set when a frame arrives or a batch is stored
        self._room = trio.Event()  # set (and replaced) whenever `held` goes down
        self._ahead = 0  # batches taken by the preparer and not yet stored

    async def put(self, kind: Kind, raws: list[bytes]) -> None:
        """Queue one frame's messages; waits while the inbox holds too many bytes."""
        if not raws:
            return
        size = sum(map(len, raws))
        self._queue.append((kind, raws, size, time.perf_counter()))
        self.held += size
        self._moved.set()
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
        """The next frame, or consecutive MESSAGES frames merged into one batch of
        `max_batch` messages at most, the last frame split to fill it; at most `FIRST_BATCH`
        when the storer has nothing to do (it starts sooner). A merged batch arrived when
        its oldest frame did; what is left of a split frame, when that frame did."""
        kind, raws, size, arrived = self._queue.popleft()
        queue = self._queue
        if kind is Kind.EVIDENCE:  # with the proofs that follow it: one transaction
            proofs = [raws]
            while queue and queue[0][0] is Kind.EVIDENCE and len(proofs) < MAX_PROOFS:
                _kind, more, more_size, _arrived = queue.popleft()
                proofs.append(more)
                size += more_size
            return kind, proofs, size, arrived  # type: ignore[return-value]  # raws: each a proof's
        limit = self.max_batch if self._ahead else min(FIRST_BATCH, self.max_batch)
        last = arrived  # when the frame taken last arrived
        if len(raws) < limit and queue and queue[0][0] is Kind.MESSAGES:
            raws = list(raws)
            while len(raws) < limit and queue and queue[0][0] is Kind.MESSAGES:
                _kind, more, more_size, last = queue.popleft()
                raws.extend(more)
                size += more_size
        if len(raws) > limit:  # the rest of the last frame stays first in line
            rest = raws[limit:]
            rest_size = sum(map(len, rest))
            queue.appendleft((kind, rest, rest_size, last))
            raws, size = raws[:limit], size - rest_size
        return kind, raws, size, arrived

    def _worth_waiting(self) -> bool:
        """Whether the preparer lets more frames arrive before it takes a batch: the
        storer has one batch to store and another prepared behind it, so the next is not
        needed before one of them is stored, and the MESSAGES queued would not fill a
        batch. Never while the storer could run out of work: a lone message is taken at
        once whenever the storer has nothing, or only one batch, in hand."""
        if self._ahead < 2:
            return False
        queued = 0
        for kind, raws, _size, _arrived in self._queue:
            if kind is not Kind.MESSAGES:
                return False  # a proof waits behind them: hand them on now
            queued += len(raws)
            if queued >= self.max_batch:
                return False
        return True

    async def _prepare(self, send: trio.MemorySendChannel) -> None:
        async with send:
            while True:
                while not self._queue or self._worth_waiting():
                    self._moved = trio.Event()
                    await self._moved.wait()
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
                self._moved.set()
                self._room.set()
                self._room = trio.Event()
