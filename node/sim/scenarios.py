"""What happens to the simulated network while the messages go out: each scenario's events.

Theory of operation
-------------------
A scenario is drawn before the run, from the run's generator: a map from
the number of a publish to the events that happen just before it (the
number `messages`: after the last publish, before the run settles). An
event acts on the run's `Wiring` (node/sim/wiring.py): it cuts links,
makes them again, crashes a node or restarts it, and keeps `away`, the
nodes that are down (they publish nothing meanwhile).

- `publish`, `spammer`, `erase`: no events.
- `partition`: the first half of the nodes and the second lose every link
  between them for the middle third of the publishes; the links come back.
- `churn`: a share `churn` of the nodes, drawn at random, each crashes once,
  before a publish drawn at random, and restarts before a later one drawn at
  random (or after the last). A crash ends the node's sessions at once, what
  its inbox held unstored lost, and its links go down (its peers read a
  goodbye); the node restarts from its store alone: a new `StoreService`
  over the store opened again, its sessions new, linked again to every peer
  that is up (a peer down then links to it when it restarts).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import random

    from tanglenode.node.sim.network import SimConfig
    from tanglenode.node.sim.wiring import Wiring

Event = Callable[["Wiring", set[int]], None]


@dataclass(frozen=True)
class Plan:
    """A scenario drawn: its events by the publish they come before, and the nodes it
    crashes (the others stay up throughout)."""

    events: dict[int, list[Event]] = field(default_factory=dict)
    crashing: frozenset[int] = frozenset()


def publish_only(config: SimConfig, graph, rng: random.Random) -> Plan:
    return Plan()


def partition(config: SimConfig, graph, rng: random.Random) -> Plan:
    half = config.nodes // 2
    crossing = [(i, j) for i, j in graph if (i < half) != (j < half)]

    def split(wiring: Wiring, away: set[int]) -> None:
        for edge in crossing:
            wiring.cut(*edge)

    def heal(wiring: Wiring, away: set[int]) -> None:
        for edge in crossing:
            wiring.connect(*edge)

    third = config.messages // 3
    return Plan({third: [split], 2 * third: [heal]})


def churn(config: SimConfig, graph, rng: random.Random) -> Plan:
    edges_of: dict[int, list[tuple[int, int]]] = {}
    for edge in graph:
        for end in edge:
            edges_of.setdefault(end, []).append(edge)
    crashing = rng.sample(range(config.nodes), round(config.churn * config.nodes))
    events: dict[int, list[Event]] = {}
    for node in sorted(crashing):
        down = rng.randrange(config.messages)
        up = rng.randint(down + 1, config.messages)
        mine = edges_of.get(node, [])

        def crash(wiring: Wiring, away: set[int], n=node, mine=mine) -> None:
            away.add(n)
            wiring.crash(n, mine)

        def restart(wiring: Wiring, away: set[int], n=node, mine=mine) -> None:
            away.discard(n)
            wiring.restart(n)
            for edge in mine:
                if edge not in wiring.live and not ({*edge} & away):
                    wiring.connect(*edge)

        events.setdefault(down, []).append(crash)
        events.setdefault(up, []).append(restart)
    return Plan(events, frozenset(crashing))


SCENARIOS: dict[str, Callable[..., Plan]] = {
    "publish": publish_only,
    "partition": partition,
    "churn": churn,
    "spammer": publish_only,  # its publishing is node/sim/network.py's run
    "erase": publish_only,  # its two publishes are node/sim/erasure.py's
    "reconnect": publish_only,  # its run is node/sim/reconnect.py's
}
