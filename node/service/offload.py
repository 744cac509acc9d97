"""Where the node's blocking calls run: a worker thread, or the event loop itself.

The node runs every LMDB call and every batch of signature checks off the
event loop (`trio.to_thread.run_sync`), so the loop never blocks on disk or
CPU. The simulator (node/sim/network.py) runs a thousand nodes on trio's
virtual clock, where a call in a worker thread would let the clock jump
while it runs (autojump moves time whenever every task waits): there
`inline` runs each call on the loop, after a checkpoint, so the store's
work takes no virtual time and a run is the same at every speed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import trio

T = TypeVar("T")


class Offload:
    def __init__(self, inline: bool = False) -> None:
        self.inline = inline

    async def run(
        self, fn: Callable[..., T], *args: Any, limiter: trio.CapacityLimiter | None = None
    ) -> T:
        """`fn(*args)` in a worker thread under `limiter` (never abandoned: a write that
        started commits), or, `inline`, right here."""
        if self.inline:
            await trio.lowlevel.checkpoint()
            return fn(*args)
        return await trio.to_thread.run_sync(fn, *args, limiter=limiter, abandon_on_cancel=False)
