"""The simulated network's shapes, built with networkx and fixed by the seed.

- `regular`: a random K-regular graph (every node has `degree` peers), as
  Tarr's SSB flooding simulation used (1,000 peers, 5 connections each).
- `small-world`: Watts-Strogatz: a ring where each node knows its `degree`
  nearest, each edge rewired with probability 0.1 (a connected one).
- `pubs`: a few well-connected pubs (about one per 50 nodes, at least 2),
  joined to each other, and every other node a leaf of `degree // 2` (at
  least 1) pubs, as SSB's pubs and their members.

Each returns the edges as (i, j) pairs of node indexes, i < j, sorted.
"""

from __future__ import annotations

import random

TOPOLOGIES = ("regular", "small-world", "pubs")


class TopologyError(ValueError):
    """No graph of that shape exists for these numbers."""


def edges(kind: str, nodes: int, degree: int, seed: int) -> list[tuple[int, int]]:
    import networkx as nx

    if nodes < 2 or degree < 1 or degree >= nodes:
        raise TopologyError(f"{nodes} nodes of degree {degree}: need 1 <= degree < nodes")
    if kind == "regular":
        if nodes * degree % 2:
            raise TopologyError("a regular graph needs nodes * degree even")
        graph = nx.random_regular_graph(degree, nodes, seed=seed)
    elif kind == "small-world":
        graph = nx.connected_watts_strogatz_graph(nodes, max(2, degree), 0.1, seed=seed)
    elif kind == "pubs":
        return _pubs(nodes, degree, seed)
    else:
        raise TopologyError(f"unknown topology {kind!r}: one of {', '.join(TOPOLOGIES)}")
    if not nx.is_connected(graph):
        raise TopologyError(f"the {kind} graph drawn for seed {seed} is not connected")
    return sorted((min(a, b), max(a, b)) for a, b in graph.edges())


def _pubs(nodes: int, degree: int, seed: int) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    pubs = max(2, nodes // 50)
    found = {(a, b) for a in range(pubs) for b in range(a + 1, pubs)}
    per_leaf = min(pubs, max(1, degree // 2))
    for leaf in range(pubs, nodes):
        for pub in rng.sample(range(pubs), per_leaf):
            found.add((pub, leaf))
    return sorted(found)
