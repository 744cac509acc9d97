"""The store as a Trio service: blocking LMDB calls in worker threads, and change signals.

Theory of operation
-------------------
`FeedStore` is synchronous; every call here runs it in a worker thread so
the event loop never blocks on disk. Writes go one at a time (LMDB has one
writer anyway), reads alongside. The service keeps the vector clock (feed
-> highest seq) in memory, updated from what each write stored, and bumps
`version` after every write that stored something. Tasks that push to
peers or subscribers call `wait_changed(seen)` to sleep until the store
moves past the version they last saw, so nothing polls.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import trio

from protocol.message import Message
from storage.ingest import IngestResult
from storage.store import FeedStore


class StoreService:
    def __init__(self, store: FeedStore) -> None:
        self.store = store
        self.clock: dict[bytes, int] = store.frontier()
        self.version = 0
        self._changed = trio.Event()
        self._writer = trio.CapacityLimiter(1)
        self._readers = trio.CapacityLimiter(4)

    # -- change signals ------------------------------------------------------

    def _stored(self, messages: Iterable[Message]) -> None:
        grew = False
        for message in messages:
            if message.seq > self.clock.get(message.author, 0):
                self.clock[message.author] = message.seq
            grew = True
        if grew:
            self.version += 1
            self._changed.set()
            self._changed = trio.Event()

    async def wait_changed(self, seen: int) -> int:
        """Sleep until the store's version passes `seen`; returns the new version."""
        while self.version <= seen:
            await self._changed.wait()
        return self.version

    # -- writes --------------------------------------------------------------

    async def ingest(self, raws: list[bytes]) -> list[IngestResult]:
        results = await trio.to_thread.run_sync(
            self.store.ingest, raws, limiter=self._writer, abandon_on_cancel=False
        )
        self._stored(result.message for result in results if result.stored and result.message)
        return results

    async def publish(self, content: Any, tangles: Mapping[str, bytes | None] | None) -> Message:
        message = await trio.to_thread.run_sync(
            self.store.publish, content, tangles, limiter=self._writer, abandon_on_cancel=False
        )
        self._stored([message])
        return message

    # -- reads ---------------------------------------------------------------

    async def read(self, function, *args):
        """Run a read-only store method in a worker thread."""
        return await trio.to_thread.run_sync(function, *args, limiter=self._readers)
