"""Ranks of a timeline's members by one topological pass, and the rows an order is written in.

Shared by the per-group engine (pipeline/linearize.py) and the spread one
(pipeline/spread.py): rank(m) = max(floor, 1 + the rank of each present
predecessor), by Kahn's pass; floors 0 give the longest-path ranks a
timeline is ordered by (docs/TIMELINES.md), with the id breaking ties.
"""

from __future__ import annotations

ORDER_SCHEMA = "timeline string, root binary, position long, rank long, id binary"


def ranks_from_floors(refs: list[bytes], links: list[list[bytes]], floors: list[int]) -> list[int]:
    """rank(i) = max(floors[i], 1 + rank of each present link) by one topological pass (Kahn).

    Floors 0 give the longest-path ranks; a spread timeline's block passes its members'
    ranks from other blocks as floors (pipeline/spread.py).
    """
    index = {ref: i for i, ref in enumerate(refs)}
    present = [[index[link] for link in set(row) if link in index] for row in links]
    waiting = [len(row) for row in present]
    followers: list[list[int]] = [[] for _ in refs]
    for i, row in enumerate(present):
        for j in row:
            followers[j].append(i)
    rank = [int(floor) for floor in floors]
    ready = [i for i, n in enumerate(waiting) if n == 0]
    done = 0
    while ready:
        i = ready.pop()
        done += 1
        for k in followers[i]:
            rank[k] = max(rank[k], rank[i] + 1)
            waiting[k] -= 1
            if waiting[k] == 0:
                ready.append(k)
    if done != len(refs):  # an invariant, as the engine's CycleError: every link is bound
        # to a hash, so only columns edited after export (not the signed bytes) can loop
        raise ValueError("the timeline's links loop: the archive's columns are not its messages'")
    return rank
