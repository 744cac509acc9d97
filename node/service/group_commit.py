"""Group commit: concurrent publishes share one durable LMDB transaction.

Theory of operation
-------------------
A durable commit costs an fsync or two, whatever it holds, so publishes
that arrive together should share one. Each `publish` appends its request
to `pending` and waits. One caller at a time is the *committer*: it takes
everything pending as one batch, runs `store.writes.publish_batch` in a worker
thread (under the store's write limiter, so it also queues behind an ingest),
records what was stored, and wakes every request of the batch with its own
result: a message, or the error that refused that request alone. While that
transaction commits, new requests gather in `pending`; the committer then
hands the lead to the oldest of them, which commits the next batch. A lone
client thus gets one transaction per publish, as before; eight concurrent
ones share one. No reply goes out before the commit that holds its message
(and the own-head file written after it).

Cancellation: a committer's batch is committed and answered whatever
happens to its caller (the worker thread is never abandoned mid-transaction
anyway, and the other requests wait on it), so that part is shielded. A
caller cancelled while its request still waits in `pending` withdraws it,
nothing is published, and the lead passes on if it had just been handed
the lead. One cancelled after its batch was taken may still be published,
like a request whose client hung up.

A request is a message to publish, `(content, tangles)`, or a `Job` (a
document edit, planned against the text inside the batch's transaction:
storage/writes.py), whose result is the list of messages it published.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import trio

from tanglenode.node.service.counters import Histogram
from tanglenode.node.service.offload import Offload
from tanglenode.protocol.message import Message
from tanglenode.storage.writes import Job

Request = tuple[Any, Mapping[str, bytes | None] | None] | Job
Result = Message | list[Message] | Exception
Commit = Callable[[Sequence[Request]], list[Result]]


@dataclass(eq=False, slots=True)
class _Waiting:
    request: Request
    woken: trio.Event = field(default_factory=trio.Event)  # set once: a result, or the lead
    result: Result | None = None
    lead: bool = False


class GroupCommit:
    """Batches concurrent `publish` calls into `commit` calls (see the module docstring).

    `commit` is `store.writes.publish_batch` (run in a worker thread under
    `limiter`); `stored` is told the messages of each batch that committed,
    before any of their callers wakes; `latency` gets each publish's service
    time in seconds (queued, committed, answered), refused ones included.
    """

    def __init__(
        self,
        commit: Commit,
        limiter: trio.CapacityLimiter,
        stored: Callable[[list[Message]], None],
        latency: Histogram | None = None,
        offload: Offload | None = None,
    ) -> None:
        self._commit = commit
        self._offload = offload or Offload()  # where the commit runs (node/service/offload.py)
        self._limiter = limiter
        self._stored = stored
        self.latency = Histogram() if latency is None else latency
        self._pending: list[_Waiting] = []
        self._leading = False
        self.batches = 0  # transactions committed, for tests and statistics
        self.largest = 0  # the most requests one batch held

    async def publish(self, content: Any, tangles: Mapping[str, bytes | None] | None) -> Message:
        result = await self._submit((content, tangles))
        assert isinstance(result, Message)
        return result

    async def run(self, job: Job) -> list[Message]:
        """`job` in the next batch's transaction; the messages it published."""
        result = await self._submit(job)
        assert isinstance(result, list)
        return result

    async def _submit(self, request: Request) -> Message | list[Message]:
        began = time.perf_counter()
        waiting = _Waiting(request)
        self._pending.append(waiting)
        if not self._leading:
            self._leading = waiting.lead = True
        else:
            try:
                await waiting.woken.wait()
            except BaseException:
                self._withdraw(waiting)
                raise
        if waiting.lead:  # our turn: our own request is in the batch we commit now
            with trio.CancelScope(shield=True):
                await self._commit_pending()
        result = waiting.result
        self.latency.observe(time.perf_counter() - began)
        if isinstance(result, Exception):
            raise result
        assert result is not None
        return result

    async def _commit_pending(self) -> None:
        batch, self._pending = self._pending, []
        results: list[Result] | None = None
        try:
            try:
                results = await self._offload.run(
                    self._commit, [waiting.request for waiting in batch], limiter=self._limiter
                )
            except Exception as error:  # the transaction itself failed: none of it is stored
                results = [error] * len(batch)
            else:
                self.batches += 1
                self.largest = max(self.largest, len(batch))
                self._stored(
                    [
                        message
                        for result in results
                        for message in (result if isinstance(result, list) else [result])
                        if isinstance(message, Message)
                    ]
                )
        finally:
            if results is None:  # not an Exception (KeyboardInterrupt...): free the others
                results = [RuntimeError("the publish batch was interrupted")] * len(batch)
            for waiting, result in zip(batch, results, strict=True):
                waiting.result = result
                waiting.lead = False
                waiting.woken.set()
            self._hand_on()

    def _hand_on(self) -> None:
        """Give the lead to the oldest pending request, or let the next caller take it."""
        if self._pending:
            following = self._pending[0]
            following.lead = True
            following.woken.set()
        else:
            self._leading = False

    def _withdraw(self, waiting: _Waiting) -> None:
        """A cancelled caller: drop its request if no batch took it; pass on a lead it got."""
        if waiting not in self._pending:
            return  # a batch took it: it is (being) committed, the caller will not hear of it
        self._pending.remove(waiting)
        if waiting.lead:
            waiting.lead = False
            self._hand_on()
