"""One byte budget for everything queued to subscribers, IPC and web alike.

Theory of operation
-------------------
A subscriber that stops reading must cost the node a bounded amount of memory,
and so must many of them together. Every stream therefore holds what it has
queued as encoded bytes (the frame as it will be written, never the decoded
events, which take several times more) and counts them against two bounds: its
own (`stream_bytes`) and everyone's (`total_bytes`, config
`subscribers.queue_bytes`). `Share.take(n)` says whether `n` more bytes fit
under both; a stream with nothing queued may always take one frame under its
own bound (a frame is at most `stream_bytes`, protocol/framing.py's cap), so
a big page never wedges a stream that is keeping up. What does not fit is not
queued: an IPC stream then ends with `lagged`, as a full queue always made it
(node/ipc/server.py); a web stream waits for room (`Share.wait_for_room`), pulling
nothing meanwhile (node/web/events.py).

Memory given back to Python is not always given back to the system: glibc
keeps freed heap for reuse. When the last queued byte is released after the
queues held more than `TRIM_AFTER` bytes at once, the budget asks glibc to
return its free memory (`malloc_trim`), so the node's resident size comes back
down after a burst of stalled subscribers (docs/BENCHMARKS.md, "Subscribers
that never read").
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

import trio

from tanglenode.protocol.framing import MAX_IPC_FRAME

TRIM_AFTER = 8 << 20  # bytes queued at once, past which the end of the burst trims the heap
DEFAULT_QUEUE_BYTES = 32 << 20  # config subscribers.queue_bytes
DEFAULT_STREAM_BYTES = MAX_IPC_FRAME  # one whole frame: config subscribers.stream_bytes


def _malloc_trim():
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c")).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None


class QueueBudget:
    def __init__(self, total_bytes: int, stream_bytes: int) -> None:
        self.total_bytes = total_bytes
        self.stream_bytes = stream_bytes
        self.used = 0  # bytes queued now, every stream together
        self.peak = 0  # the most since the queues were last empty
        self.refused = 0  # takes that did not fit, since the node started
        self._room = trio.Event()
        self._trim = _malloc_trim()

    def share(self) -> Share:
        """A new stream's share of the budget; close it (`with`) when the stream ends."""
        return Share(self)

    def _released(self) -> None:
        self._room.set()
        self._room = trio.Event()
        if self.used == 0:
            if self.peak > TRIM_AFTER and self._trim is not None:
                self._trim(0)
            self.peak = 0


class Share:
    """One stream's bytes queued, counted against its bound and the budget's."""

    def __init__(self, budget: QueueBudget) -> None:
        self.budget = budget
        self.used = 0

    def take(self, size: int, *, always: bool = False) -> bool:
        """Count `size` more bytes queued, if they fit (`always`: whether or not, for a
        stream's small last frame); False, and nothing counted, if not."""
        budget = self.budget
        fits_stream = self.used == 0 or self.used + size <= budget.stream_bytes
        if not always and (not fits_stream or budget.used + size > budget.total_bytes):
            budget.refused += 1
            return False
        self.used += size
        budget.used += size
        budget.peak = max(budget.peak, budget.used)
        return True

    def give(self, size: int) -> None:
        """`size` bytes (taken before) left the queue: written, or dropped."""
        self.used -= size
        self.budget.used -= size
        self.budget._released()

    async def wait_for_room(self) -> None:
        """Until some stream releases bytes."""
        await self.budget._room.wait()

    def __enter__(self) -> Share:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.used:
            self.give(self.used)
