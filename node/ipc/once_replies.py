"""Writes done once however often they are sent: the `once` key of a write request.

Theory of operation
-------------------
A client that sends a write and loses the reply (a dropped connection, a
page whose request failed in flight, a timeout) cannot tell whether the
node did it. Sending it again may publish it twice: a post twice, or a
document edit's text inserted twice. A write request (an op that signs and
stores: docs/IPC.md, "Writes done once") may carry `once`, a key of the
client's choosing (1-64 letters, digits, `-` or `_`; a random 128-bit value
in hex is the intent). The node runs the op once per (op, key):

- a repeat that arrives while the first runs waits for it, and gets its
  reply;
- a repeat that arrives after gets the reply the first got, as long as the
  node keeps it: the last `KEEP` keys, and no more than `KEEP_BYTES` of
  replies, oldest forgotten first;
- a first try that failed (a typed error: nothing was written) is not
  kept: the repeat runs the op again.

The keys live in the running node's memory only: a client that retries
across a restart of the node may still write twice. A client must not use
one key for two different requests: the second gets the first's reply.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

import msgpack
import trio

KEEP = 1024
KEEP_BYTES = 8 << 20


class OnceReplies:
    """The replies of recent write requests that carried a `once` key."""

    def __init__(self, keep: int = KEEP, keep_bytes: int = KEEP_BYTES) -> None:
        self.keep, self.keep_bytes = keep, keep_bytes
        self._done: OrderedDict[tuple[str, str], tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._running: dict[tuple[str, str], trio.Event] = {}

    def __len__(self) -> int:
        return len(self._done)

    async def run(self, op: str, once: str, write: Callable[[], Awaitable[Any]]) -> Any:
        """`write()`'s reply, run at most once for (`op`, `once`) while it is kept."""
        key = (op, once)
        while (running := self._running.get(key)) is not None:
            await running.wait()
        if key in self._done:
            self._done.move_to_end(key)
            return self._done[key][0]
        finished = self._running[key] = trio.Event()
        try:
            reply = await write()
            self._keep(key, reply)
            return reply
        finally:
            del self._running[key]
            finished.set()

    def _keep(self, key: tuple[str, str], reply: Any) -> None:
        try:
            size = len(msgpack.packb(reply, use_bin_type=True))
        except (TypeError, ValueError, OverflowError):
            return  # not a reply the IPC could send either: nothing to give again
        if size > self.keep_bytes:
            return
        self._done[key] = (reply, size)
        self._bytes += size
        while len(self._done) > self.keep or self._bytes > self.keep_bytes:
            _key, (_reply, dropped) = self._done.popitem(last=False)
            self._bytes -= dropped
