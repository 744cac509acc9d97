"""The simulated network's nodes, their links and sessions: made, cut, crashed, restarted.

Theory of operation
-------------------
A `Node` is a real `FeedStore` (storage/store.py) behind a real
`StoreService` run inline, opened by `open_service`: one file descriptor
a store (`single_descriptor`: ten thousand stores share one process's
limit), timestamps on the virtual clock, no `fsync`. `Wiring` makes the
links of a run (node/sim/links.py) and runs a pair of real `GossipSession`s
on each, each session under its node's cancel scope, with the probe of
node/sim/spread.py on its protocol machine. What a scenario does
(node/sim/scenarios.py) it does through `Wiring`: `cut` a link (both
sessions read a goodbye), `connect` it again, `crash` a node (its sessions
end where they are, what its inbox held unstored lost, its links down) and
`restart` it (the store opened again, a new service over it: nothing of
the node survives in memory, as after a real crash).
"""

from __future__ import annotations

import random
import resource
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import trio

from tanglenode.node.gossip.session import GossipSession
from tanglenode.node.gossip.stream_plan import StreamPlan
from tanglenode.node.net.peers import PeerState
from tanglenode.node.service.store_service import StoreService
from tanglenode.node.sim.links import Arrivals, PathModel, link
from tanglenode.node.sim.spread import Spread
from tanglenode.protocol.identity import Keypair
from tanglenode.storage.store import FeedStore

MAP_SIZE = 1 << 26  # each node's LMDB map: address space only
# tmpfs: a store that writes through its map (`single_descriptor`) costs a page fault a new
# page, which on a disk's file system allocates its block (20 ms to create a store there
# with a thousand open, 0.1 ms here)
MEMORY_DIR = "/dev/shm"
EPOCH = 1_800_000_000.0  # the simulated networks' wall clock at virtual time 0 (2027)


@dataclass
class Node:
    index: int
    keypair: Keypair
    store: FeedStore
    service: StoreService
    sessions: list[GossipSession] = field(default_factory=list)  # its sessions running now
    running: set[trio.CancelScope] = field(default_factory=set)  # their cancel scopes
    received_before: int = 0  # messages its services before the last restart received

    @property
    def received(self) -> int:
        """Messages received over gossip since the node first opened, duplicates included
        (the node's counters, one per peer whatever its sessions: node/service/counters.py)."""
        counters = self.service.counters
        now = sum(traffic.received for traffic in counters.peers.values())
        return self.received_before + now + counters.other.received

    @classmethod
    def open(cls, path: Path, index: int, keypair: Keypair, flood: bool) -> Node:
        service = open_service(path, keypair, flood)
        return cls(index, keypair, service.store, service)


def descriptors_to_the_limit() -> None:
    """Raise the soft limit of open files to the hard one: a store holds one descriptor."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def open_service(path: Path, keypair: Keypair, flood: bool) -> StoreService:
    store = FeedStore(
        path,
        keypair=keypair,
        map_size=MAP_SIZE,
        clock=lambda: EPOCH + trio.current_time(),  # timestamps on virtual time
        durable=False,  # nothing of a simulated store has to survive a crash
        single_descriptor=True,  # every store on the loop's thread: one descriptor each
    )
    service = StoreService(store, hops=None, inline=True)
    service.shared(StreamPlan).once = not flood
    return service


@dataclass
class Wiring:
    """The links and sessions of a run, made, cut, crashed and restarted as the scenario
    says (node/sim/scenarios.py)."""

    nodes: list[Node]
    path: PathModel
    rng: random.Random
    nursery: trio.Nursery
    spread: Spread
    observe: Callable[[Node], None]  # what the run watches on a node's service, once opened
    flood: bool
    arrivals: Arrivals = field(default_factory=Arrivals)
    live: dict[tuple[int, int], tuple] = field(default_factory=dict)  # edge -> its two ends
    sent_before: int = 0  # bytes sent on the links cut so far
    dropped: list[str] = field(default_factory=list)  # why sessions ended on their own

    def connect(self, i: int, j: int) -> None:
        a, b = self.nodes[i], self.nodes[j]
        ends = link(a.keypair.public, b.keypair.public, self.path, self.rng, self.arrivals)
        self.live[(i, j)] = ends
        for node, end in zip((a, b), ends, strict=True):
            session = GossipSession(end, node.service, PeerState(end.peer))  # type: ignore[arg-type]  # a SecureStream's duck
            self.spread.watch(session, node.index)
            node.sessions.append(session)
            self.nursery.start_soon(self._run_session, node, session, (i, j))

    def cut(self, i: int, j: int) -> None:
        """The link goes down (a partition, a node leaving): both sessions see a goodbye."""
        ends = self.live.pop((i, j), None)
        if ends is not None:
            ends[0].close()
            self.sent_before += sum(end.bytes_sent for end in ends)

    @property
    def ends(self) -> list:
        """The ends of the links up now."""
        return [end for ends in self.live.values() for end in ends]

    @property
    def bytes_sent(self) -> int:
        """Bytes sent on every link ever made, cut or up. A run keeps nothing of a link
        cut or a session ended but its counts: ten thousand nodes crashing and restarting
        would otherwise hold every session they ever ran."""
        return self.sent_before + sum(end.bytes_sent for end in self.ends)

    def crash(self, index: int, edges: list[tuple[int, int]]) -> None:
        """Node `index` stops at once: its sessions end where they are (what its inbox held
        unstored is lost) and its links go down."""
        for scope in self.nodes[index].running:
            scope.cancel()
        for edge in edges:
            self.cut(*edge)

    def restart(self, index: int) -> None:
        """Node `index`, crashed, starts again from its store alone: the store opened
        again, a new service over it (its clock, stream plan and counters new)."""
        node = self.nodes[index]
        node.received_before = node.received
        path = node.store.path
        node.store.close()
        node.service = open_service(path, node.keypair, self.flood)
        node.store = node.service.store
        self.observe(node)

    async def _run_session(self, node: Node, session: GossipSession, edge) -> None:
        """A session to its end (or its node's crash); one that ends while its link is up
        is counted with why (`dropped`), as a real node logs a dropped peer, and the run
        goes on."""
        scope = trio.CancelScope()
        node.running.add(scope)
        try:
            with scope:
                await session.run()
        except Exception as error:  # a crash's cut links may add the session's goodbye
            if edge in self.live and not scope.cancel_called:
                self.dropped.append(f"{type(error).__name__}: {error}")
        finally:
            node.running.discard(scope)
            node.sessions.remove(session)
