"""A simulated network: up to ten thousand real nodes in one process, on virtual time.

Theory of operation
-------------------
Each node (node/sim/wiring.py) is a real `FeedStore` (its own LMDB
directory, holding one file descriptor: `single_descriptor`) behind a
real `StoreService` run inline
(every store call on the event loop, none in a worker thread: the store's
work then takes no virtual time, and the run is the same at every speed),
and each edge of the topology (node/sim/topology.py) a pair of real
`GossipSession`s (node/gossip/session.py), the same sans-IO machine a TCP
connection drives, joined by a simulated link (node/sim/links.py: latency,
bandwidth, loss). The clock is trio's `MockClock` with autojump: when every
task waits, time jumps to the next deadline, so a run of ten thousand
nodes and 100 ms links costs the CPU its work, never the waiting.
Everything random (keys, topology, who publishes, loss, crashes) comes from
`--seed`, so a run is deterministic.

The scenario `publish`: after every node's sessions start (and, with
`warmup`, after each node that will publish published one message that
every node then holds, so that every feed is known and subscribed before measuring: the
first message of a feed new to a node costs a CLOCK, a WANT and the
message per hop, every later one the message alone), `messages`
messages are published, one every `interval` seconds, each by a node drawn
at random; each node's store reports what it stored (`StoreService.
on_stored`), which gives each message's latency to each node. The run ends
when every node holds every message, or `settle` seconds after the last
publish. Then:

    converged               every node's spacetime digest is the same
    copies_per_message      messages received over gossip, duplicates
                            included, per message and per node that lacked it
    wire_bytes_per_message  gossip bytes sent on every link, per message
    wire_bytes_per_message_per_node
                            the same over the nodes: against `message_bytes_mean`,
                            what the network pays a node for a message beyond it
    message_bytes_mean      the measured messages' own size (signed wire form)
    latency_ms_*            from publish to stored, over (message, node)
    delivered               the share of (message, node) pairs delivered
    rmr, ldh                relative message redundancy and last delivery hop
                            (Plumtree's measures; node/sim/spread.py defines them)

Scenarios: `spammer` (the last node publishes five messages of its own
for each honest one, and every other node carries only its own feed and
the publishers', as if it followed them: `spam_stored_on` counts the
honest nodes that nonetheless hold a spammer's message; `converged`
compares the honest nodes), `publish` (only that), `partition` and `churn`
(node/sim/scenarios.py: a share `churn` of the nodes crash and restart at
random; `delivered_share_up` is the delivery to the nodes that stayed up).
A node away publishes nothing; everything it missed reaches it when it is
back, which the latencies show. The scenario `reconnect` (node/sim/reconnect.py)
measures what a connection costs nodes that carry many feeds and differ in a few.

The scenario `erase` (node/sim/erasure.py) measures how fast an erase request
(protocol/erase.py) takes a content off the network against how fast an
ordinary message spreads: one node (drawn by the seed) publishes a post;
once every node holds it, the author publishes its erase request, and each
node that held the post's content is watched until its store holds the
header alone (`has_content` false: it processed the request,
storage/erasure.py). `messages` does not apply (two are published: the post
and the request), and:

    delivery_seconds        from the post's publish until the last node stored it
    erase_seconds           from the request's publish until the last node that held
                            the post's content held none of it
    delivery_rounds,        the gossip hops each travelled to the node farthest along
    erase_rounds            the way it went: a node's hops are one more than those of
                            the peer whose session stored it here (each node stores a
                            message from one session, `GossipSession.delivered`), the
                            author's 0; on lossless links of one latency, a message's
                            time is its rounds times the latency
    content_left_on         nodes still holding the post's content when the run ends

`flood` turns the stream plan (node/gossip/stream_plan.py) off: every peer streams
every feed, the behaviour the plan replaced, for comparison.
"""

from __future__ import annotations

import math
import os
import random
import resource
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import trio
import trio.testing

from tanglenode.node.sim import reconnect
from tanglenode.node.sim.erasure import _Erasure, post_and_erase
from tanglenode.node.sim.links import PathModel
from tanglenode.node.sim.scenarios import SCENARIOS, Plan
from tanglenode.node.sim.spread import Spread
from tanglenode.node.sim.topology import edges
from tanglenode.node.sim.wiring import MEMORY_DIR, Node, Wiring, descriptors_to_the_limit
from tanglenode.protocol.identity import Keypair
from tanglenode.protocol.message import Message
from tanglenode.storage.scope import FOLLOWED, OURS, Scope, Why
from tanglenode.storage.views.timelines import SPACETIME

START = 1.0  # virtual seconds for every session to say hello before the first publish


@dataclass(frozen=True)
class SimConfig:
    nodes: int = 25
    degree: int = 5
    topology: str = "regular"
    latency: float = 0.1  # one way, seconds
    bandwidth: float = math.inf  # bytes a second, each direction of each link
    loss: float = 0.0
    messages: int = 100
    interval: float = 0.05  # seconds between two publishes
    settle: float = 60.0  # seconds after the last publish before giving up
    seed: int = 1
    flood: bool = False
    scenario: str = "publish"  # or "partition", "churn", "spammer", "erase", "reconnect"
    warmup: bool = True  # each node publishes one message first, not measured
    churn: float = 0.2  # the share of the nodes that crash and restart (scenario churn)
    feeds: int = 1000  # the feeds every node carries (scenario reconnect)
    differ: int = 1  # of them, those one node holds one message more of (reconnect)


@dataclass(frozen=True)
class SimResult:
    nodes: int
    edges: int
    messages: int
    converged: bool
    delivered: float
    copies_per_message: float
    wire_bytes_per_message: float
    wire_bytes_per_message_per_node: float
    message_bytes_mean: float
    latency_ms_p50: float
    latency_ms_p99: float
    latency_ms_max: float
    virtual_seconds: float
    peak_rss_mb: float
    seconds: float
    flood: bool
    sessions_dropped: int  # sessions that ended before the run did (none in a healthy run)
    first_drop: str | None
    spam_stored_on: int | None  # honest nodes holding a message of the spammer's (scenario)
    # The scenario `erase` (None in the others; seconds and rounds None where not every node
    # got there): the post's spread and its erasure's, and where its content was left.
    delivery_seconds: float | None = None
    delivery_rounds: int | None = None
    erase_seconds: float | None = None
    erase_rounds: int | None = None
    content_left_on: int | None = None
    # Every run: how the measured messages spread (node/sim/spread.py); None if none did.
    rmr: float | None = None
    ldh: int | None = None
    # The scenario `churn`: the share of (message, node) pairs delivered to the nodes that
    # never crashed.
    delivered_share_up: float | None = None
    # The scenario `reconnect` (node/sim/reconnect.py): from connecting until every node
    # holds the same messages, the gossip bytes on all links, the seconds, and those over
    # the links' round trip.
    sync_bytes: int | None = None
    sync_seconds: float | None = None
    sync_round_trips: float | None = None

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class _Deliveries:
    """When each message was published, and when each node stored it."""

    expected: int  # (message, node) pairs to deliver
    published: dict[tuple[bytes, int], float] = field(default_factory=dict)
    sizes: list[int] = field(default_factory=list)  # the measured messages' wire bytes
    latencies: list[float] = field(default_factory=list)
    to: dict[int, int] = field(default_factory=dict)  # node -> measured messages it stored
    publishers: list[int] = field(default_factory=list)  # each measured message's node
    done: trio.Event = field(default_factory=trio.Event)

    def observer(self, node: Node):
        def stored(messages: list[Message]) -> None:
            now = trio.current_time()
            for message in messages:
                at = self.published.get((message.author, message.seq))
                if at is not None and message.author != node.keypair.public:
                    self.latencies.append(now - at)
                    self.to[node.index] = self.to.get(node.index, 0) + 1
            if len(self.latencies) >= self.expected:
                self.done.set()

        return stored


def simulate(config: SimConfig, root: Path | None = None) -> SimResult:
    """Run `config` (see the module docstring); stores under `root` (default: a temporary
    directory in memory where the system has one, `MEMORY_DIR`, removed after)."""
    began = time.perf_counter()
    if root is None:
        memory = MEMORY_DIR if os.access(MEMORY_DIR, os.W_OK) else None
        with tempfile.TemporaryDirectory(prefix="tangled-sim-", dir=memory) as directory:
            return _simulate(config, Path(directory), began)
    return _simulate(config, root, began)


def _simulate(config: SimConfig, root: Path, began: float) -> SimResult:
    descriptors_to_the_limit()
    rng = random.Random(config.seed)
    graph = edges(config.topology, config.nodes, config.degree, config.seed)
    keypairs = [Keypair(rng.randbytes(32)) for _ in range(config.nodes)]
    nodes = [Node.open(root / f"n{i}", i, key, config.flood) for i, key in enumerate(keypairs)]
    try:
        clock = trio.testing.MockClock(autojump_threshold=0)
        # Trio shuffles each batch of runnable tasks with its own generator (hypothesis seeds
        # it the same way); seeded, the same --seed schedules the same run.
        trio._core._run._r.seed(config.seed)
        outcome: _Outcome = trio.run(_run, config, nodes, graph, rng, clock=clock)
        honest = nodes[:-1] if config.scenario == "spammer" else nodes
        digests = {node.store.digests.timeline_digest(SPACETIME).digest for node in honest}
        spammer = nodes[-1].keypair.public
        spam_stored_on = (
            sum(spammer in node.service.clock for node in honest)
            if config.scenario == "spammer"
            else None
        )
        deliveries = outcome.deliveries
        erasure = outcome.erasure
        figures = {**outcome.figures, **({} if erasure is None else erasure.figures(nodes))}
    finally:
        for node in nodes:
            node.store.close()
    latencies = sorted(deliveries.latencies)
    pairs = max(1, deliveries.expected)
    measured = len(deliveries.published)
    wire_bytes, received, virtual = outcome.wire_bytes, outcome.received, outcome.virtual
    dropped = outcome.dropped
    return SimResult(
        nodes=config.nodes,
        edges=len(graph),
        messages=measured,
        converged=len(digests) == 1 and len(latencies) >= deliveries.expected,
        delivered=round(len(latencies) / pairs, 4),
        copies_per_message=round(received / pairs, 3),
        wire_bytes_per_message=round(wire_bytes / max(1, measured), 1),
        wire_bytes_per_message_per_node=round(wire_bytes / max(1, measured) / config.nodes, 1),
        message_bytes_mean=round(statistics.fmean(deliveries.sizes), 1)
        if deliveries.sizes
        else 0.0,
        latency_ms_p50=_ms(_quantile(latencies, 0.5)),
        latency_ms_p99=_ms(_quantile(latencies, 0.99)),
        latency_ms_max=_ms(latencies[-1] if latencies else math.nan),
        virtual_seconds=round(virtual, 3),
        peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        seconds=round(time.perf_counter() - began, 2),
        flood=config.flood,
        sessions_dropped=len(dropped),
        first_drop=dropped[0] if dropped else None,
        spam_stored_on=spam_stored_on,
        **figures,
    )


@dataclass
class _Outcome:
    deliveries: _Deliveries
    wire_bytes: int
    received: int
    virtual: float
    dropped: list[str]
    erasure: _Erasure | None = None
    figures: dict = field(default_factory=dict)  # the scenario's own SimResult fields


async def _run(config: SimConfig, nodes: list[Node], graph, rng: random.Random) -> _Outcome:
    erasing = config.scenario == "erase"
    published = ERASE_MESSAGES if erasing else config.messages
    deliveries = _Deliveries(expected=published * (config.nodes - 1))

    def observe(node: Node) -> None:
        node.service.on_stored = deliveries.observer(node)

    for node in nodes:
        observe(node)
    path = PathModel(config.latency, config.bandwidth, config.loss)
    index_of = {node.keypair.public: node.index for node in nodes}
    spread = Spread(index_of, deliveries.published.__contains__)
    async with trio.open_nursery() as nursery:
        wiring = Wiring(nodes, path, rng, nursery, spread, observe, config.flood)
        nursery.start_soon(wiring.arrivals.run)
        if config.scenario == "reconnect":
            figures = await reconnect.build_and_connect(config, wiring, graph, deliveries)
            nursery.cancel_scope.cancel()
            traffic = (figures.pop(name) for name in ("wire_bytes", "received", "virtual"))
            figures.update(spread.figures())
            return _Outcome(deliveries, *traffic, wiring.dropped, None, figures)  # type: ignore[call-arg]
        for i, j in graph:
            wiring.connect(i, j)
        await trio.sleep(START)
        # Who publishes each message, drawn first: the warm-up is theirs. The spammer (the
        # last node, in that scenario) is never one of them.
        honest = config.nodes - (config.scenario == "spammer")
        authors = [rng.randrange(honest) for _ in range(1 if erasing else config.messages)]
        if config.scenario == "spammer":
            await _scope_to(nodes[:honest], [nodes[index] for index in sorted(set(authors))])
        if config.warmup:  # the publishers' feeds known everywhere, their subscriptions open
            await _warm_up([nodes[index] for index in sorted(set(authors))], nodes, config)
            deliveries.latencies.clear()
        before = _traffic(nodes, wiring)  # the measure starts here
        plan: Plan = SCENARIOS[config.scenario](config, graph, rng)
        events = plan.events
        away: set[int] = set()
        erasure = None
        if erasing:
            author = nodes[authors[0]]
            erasure = await post_and_erase(config, author, nodes, wiring, deliveries)
        for number in range(0 if erasing else config.messages):
            for event in events.get(number, ()):
                event(wiring, away)
            author = nodes[authors[number]]
            if author.index in away:  # it left: another, present, publishes instead
                present = [node for node in nodes if node.index not in away]
                author = present[authors[number] % len(present)]
            message = await author.service.publish({"type": "post", "n": number}, None)
            deliveries.published[(message.author, message.seq)] = trio.current_time()
            deliveries.sizes.append(len(message.raw))
            deliveries.publishers.append(author.index)
            if config.scenario == "spammer":  # five of its own for each honest message
                for _ in range(SPAM_EACH):
                    await nodes[-1].service.publish({"type": "post", "spam": number}, None)
            await trio.sleep(config.interval)
        for event in events.get(published, ()):  # what heals after the last publish
            event(wiring, away)
        with trio.move_on_after(config.settle):
            await deliveries.done.wait()
        virtual = trio.current_time() - START
        nursery.cancel_scope.cancel()
    wire_bytes, received = (
        now - then for now, then in zip(_traffic(nodes, wiring), before, strict=True)
    )
    figures = {**spread.figures(), "delivered_share_up": _share_up(deliveries, plan, config)}
    return _Outcome(deliveries, wire_bytes, received, virtual, wiring.dropped, erasure, figures)


def _share_up(deliveries: _Deliveries, plan: Plan, config: SimConfig) -> float | None:
    """The share of (message, node) pairs delivered to the nodes that never crashed (None
    in a scenario that crashes none)."""
    if not plan.crashing:
        return None
    up = config.nodes - len(plan.crashing)
    expected = sum(up - (author not in plan.crashing) for author in deliveries.publishers)
    stored = sum(n for node, n in deliveries.to.items() if node not in plan.crashing)
    return round(stored / max(1, expected), 4)


SPAM_EACH = 5  # messages the spammer publishes for each honest one
ERASE_MESSAGES = 2  # the scenario `erase` publishes a post and its erase request


def _traffic(nodes: list[Node], wiring: Wiring) -> tuple[int, int]:
    """(bytes sent on every link, messages received over gossip by every node) so far."""
    return wiring.bytes_sent, sum(node.received for node in nodes)


async def _scope_to(honest: list[Node], publishers: list[Node]) -> None:
    """Each honest node carries its own feed and the publishers' (as if it followed them,
    one hop), and nothing else: the spammer is outside every scope."""
    for node in honest:
        feeds = {other.keypair.public: Why(FOLLOWED, 1) for other in publishers}
        feeds[node.keypair.public] = Why(OURS)
        await node.service.set_scope(Scope(1, feeds))


async def _warm_up(publishers: list[Node], nodes: list[Node], config: SimConfig) -> None:
    """Each of `publishers` publishes one message, and the run waits until every node
    holds them all (or `settle` passes): the measured messages then travel feeds every
    node knows."""
    for node in publishers:
        await node.service.publish({"type": "post", "hello": node.index}, None)
    everyone = {node.keypair.public for node in publishers}

    async def known(node: Node) -> None:
        while not everyone <= node.service.clock.keys():
            await node.service.wait_changed(node.service.version)

    with trio.move_on_after(config.settle):
        for node in nodes:
            await known(node)


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=1000, method="inclusive")[max(0, int(q * 1000) - 1)]


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)
