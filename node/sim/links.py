"""In-memory links between simulated nodes: latency, bandwidth and loss on trio's clock.

Theory of operation
-------------------
A `LinkEnd` gives a gossip session what it takes from a `SecureStream`
(`send_all`, `receive_some`, `aclose`, `peer`), so the simulator runs the
very `GossipSession` a TCP connection runs (node/gossip/session.py). Each direction
of a link is a queue of (deliver at, bytes). Sending costs no time: the
bytes are stamped with when they arrive, as TCP over the modelled path
would deliver them in order:

    leaves  = max(now, when the previous bytes finished leaving) + size / bandwidth
    arrives = max(leaves + latency (+ a retransmission delay if lost),
                  when the previous bytes arrived)

Loss is modelled as TCP shows it to the application: a lost segment costs
a retransmission timeout (`3 * latency`, at least 200 ms) for it and
everything behind it, drawn from the link's own seeded random generator,
so a run is deterministic by its seed. A receiver waits until the arrival
time of the next bytes (trio's clock: virtual in the simulator): it asks
the network's one `Arrivals` to wake it then. `Arrivals` is a task that
sleeps until the earliest arrival any reader waits for and wakes every
reader due: one timed sleep per distinct arrival time for the whole
network, where a sleep per read (a trio deadline expiring, a Cancelled
raised and caught) cost a quarter of a 1,000-node run's CPU.
Closing either end ends both directions: the other end reads b"" (a
goodbye), as a partition or a node leaving looks to gossip.

Every byte sent is counted on the link (`bytes_sent`), for the
simulator's wire bytes per message.
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
from collections import deque
from dataclasses import dataclass, field

import trio

MIN_RTO = 0.2  # seconds: TCP's minimum retransmission timeout


@dataclass(frozen=True, slots=True)
class PathModel:
    """One direction's path: one-way latency (s), bandwidth (bytes/s, inf: none), loss."""

    latency: float = 0.1
    bandwidth: float = math.inf
    loss: float = 0.0  # chance that a send is retransmitted once

    @property
    def retransmission(self) -> float:
        return max(MIN_RTO, 3 * self.latency)


class Arrivals:
    """Wakes each waiting reader when its next bytes arrive (`run` it in the network's
    nursery)."""

    def __init__(self) -> None:
        self._due: list[tuple[float, int, _Direction]] = []  # (when, tie-break, reader's)
        self._order = itertools.count()
        self._sooner = trio.Event()

    def wake_at(self, when: float, direction: _Direction) -> None:
        if not self._due or when < self._due[0][0]:
            self._sooner.set()
        heapq.heappush(self._due, (when, next(self._order), direction))

    async def run(self) -> None:
        due = self._due
        while True:
            now = trio.current_time()
            while due and due[0][0] <= now:
                heapq.heappop(due)[2].wake()
            self._sooner = trio.Event()
            with trio.move_on_at(due[0][0] if due else math.inf):
                await self._sooner.wait()


@dataclass
class _Direction:
    path: PathModel
    rng: random.Random
    arrivals: Arrivals
    queue: deque[tuple[float, bytes]] = field(default_factory=deque)
    free_at: float = 0.0  # when the bytes sent so far have all left
    last_arrival: float = 0.0
    closed: bool = False
    bytes_sent: int = 0
    changed: trio.Event = field(default_factory=trio.Event)

    def push(self, data: bytes) -> None:
        now = trio.current_time()
        self.free_at = max(now, self.free_at) + len(data) / self.path.bandwidth
        arrival = self.free_at + self.path.latency
        if self.path.loss and self.rng.random() < self.path.loss:
            arrival += self.path.retransmission
        self.last_arrival = max(arrival, self.last_arrival)
        if not self.queue:  # a reader waiting for anything; behind earlier bytes, none
            self.wake()
        self.queue.append((self.last_arrival, data))
        self.bytes_sent += len(data)

    def close(self) -> None:
        self.closed = True
        self.wake()

    def wake(self) -> None:
        self.changed.set()
        self.changed = trio.Event()


class LinkEnd:
    """One end of a simulated link, as a gossip session sees its connection."""

    def __init__(
        self, outgoing: _Direction, incoming: _Direction, peer: bytes, salt: bytes, leads: bool
    ) -> None:
        self._out, self._in, self.peer = outgoing, incoming, peer
        self.session_salt, self.leads = salt, leads  # as a SecureStream's: shared, one leads

    async def send_all(self, data: bytes) -> None:
        if self._out.closed:
            raise trio.BrokenResourceError("the link is closed")
        if data:  # nothing to send costs nothing, as on TCP (and must not read as a goodbye)
            self._out.push(bytes(data))
        await trio.lowlevel.checkpoint()

    async def receive_some(self) -> bytes:
        """The bytes that have arrived by now (waiting for the next to arrive); b"" once the
        link is closed."""
        direction = self._in
        while True:
            if direction.closed:
                return b""
            if not direction.queue:
                await direction.changed.wait()
                continue
            now = trio.current_time()
            if direction.queue[0][0] > now:
                changed = direction.changed
                direction.arrivals.wake_at(direction.queue[0][0], direction)
                await changed.wait()
                continue
            chunks = []
            while direction.queue and direction.queue[0][0] <= now:
                chunks.append(direction.queue.popleft()[1])
            return b"".join(chunks)

    async def aclose(self) -> None:
        self.close()
        await trio.lowlevel.checkpoint()

    def close(self) -> None:
        """End both directions: the other end reads a goodbye; bytes in flight are lost."""
        for direction in (self._out, self._in):
            direction.queue.clear()
            direction.close()

    @property
    def bytes_sent(self) -> int:
        return self._out.bytes_sent

    @property
    def in_flight_until(self) -> float | None:
        """When the bytes sent from this end and not yet read have all arrived; None if
        there are none."""
        return self._out.last_arrival if self._out.queue else None


def link(
    a: bytes, b: bytes, path: PathModel, rng: random.Random, arrivals: Arrivals
) -> tuple[LinkEnd, LinkEnd]:
    """A link between nodes `a` and `b` (their keys): (a's end, b's end), each direction with
    `path` and its own generator drawn from `rng`, its readers woken by `arrivals`."""
    there = _Direction(path, random.Random(rng.getrandbits(64)), arrivals)
    back = _Direction(path, random.Random(rng.getrandbits(64)), arrivals)
    salt = rng.getrandbits(128).to_bytes(16, "big")
    return LinkEnd(there, back, b, salt, True), LinkEnd(back, there, a, salt, False)
