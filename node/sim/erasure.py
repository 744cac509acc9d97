"""The simulator's scenario `erase`: an erase request's spread against an ordinary message's.

Theory of operation
-------------------
`post_and_erase` (called by node/sim/network.py's run) waits for the network to be
quiet, has one node publish a post and watches every node until it stores it;
then, quiet again, the author publishes the post's erase request
(protocol/erase.py) and every node that held the post's content is watched
until its store holds the header alone. `_Erasure` keeps when each node got
there and through which peer, from which the figures (seconds, and the gossip
hops to the node farthest along) are computed; node/sim/network.py's docstring
names them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import trio

from tanglenode.protocol.erase import erase_content
from tanglenode.protocol.message import Message

if TYPE_CHECKING:
    from tanglenode.node.gossip.session import GossipSession
    from tanglenode.node.sim.network import SimConfig, _Deliveries
    from tanglenode.node.sim.wiring import Node, Wiring


@dataclass
class _Erasure:
    """The scenario `erase`: when each node stored the post (the author's message at
    `seq`), and when each node that held its content (`holders`) held it no more."""

    author: bytes
    seq: int
    target: bytes | None = None  # the post's id, once published
    holders: set[int] = field(default_factory=set)  # nodes holding its content when erased
    posted: float = math.nan
    erased: float = math.nan  # when the erase request was published
    stored_at: dict[int, float] = field(default_factory=dict)
    dropped_at: dict[int, float] = field(default_factory=dict)
    post_from: dict[int, int] = field(default_factory=dict)  # node -> the peer it came from
    request_from: dict[int, int] = field(default_factory=dict)
    stored_all: trio.Event = field(default_factory=trio.Event)
    dropped_all: trio.Event = field(default_factory=trio.Event)

    def observer(self, node: Node, then: Callable[[list[Message]], None], everyone: int):
        def stored(messages: list[Message]) -> None:
            then(messages)
            now = trio.current_time()
            if node.index not in self.stored_at and any(
                message.author == self.author and message.seq == self.seq for message in messages
            ):
                self.stored_at[node.index] = now
                if len(self.stored_at) == everyone:
                    self.stored_all.set()
            watched = node.index in self.holders and node.index not in self.dropped_at
            if watched and not _holds_content(node, self.target):  # it processed the request
                self.dropped_at[node.index] = now
                if len(self.dropped_at) == len(self.holders):
                    self.dropped_all.set()

        return stored

    def figures(self, nodes: list[Node]) -> dict:
        """SimResult's fields of the scenario, with a last look at every store."""
        everyone = len(nodes)
        return {
            "delivery_seconds": _last(self.stored_at, everyone, self.posted),
            "delivery_rounds": _rounds(self.post_from, everyone),
            "erase_seconds": _last(self.dropped_at, len(self.holders), self.erased),
            "erase_rounds": _rounds(self.request_from, len(self.holders)),
            "content_left_on": sum(_holds_content(node, self.target) for node in nodes),
        }


async def post_and_erase(
    config: SimConfig, author: Node, nodes: list[Node], wiring: Wiring, deliveries: _Deliveries
) -> _Erasure:
    """The scenario `erase`: `author` publishes a post; once every node holds it (or
    `settle` passes) it publishes the post's erase request, and the run waits until every
    node that held the content holds none of it (or `settle` passes). Each of the two
    publishes waits for the links to be quiet first (`quiet`), so both meet the same
    network: not the request alone behind the post's last frames still being
    retransmitted, which a lossy link makes it wait for (as TCP does)."""
    await quiet(wiring, config.settle)
    key = author.keypair.public
    erasure = _Erasure(key, author.service.clock.get(key, 0) + 1)
    for node in nodes:
        on_stored = node.service.on_stored
        node.service.on_stored = erasure.observer(node, on_stored, len(nodes))  # type: ignore[arg-type]  # set
    counts = _delivered(nodes, key)
    erasure.posted = deliveries.published[(key, erasure.seq)] = trio.current_time()
    post = await author.service.publish({"type": "post", "erase": "me"}, None)
    deliveries.sizes.append(len(post.raw))
    with trio.move_on_after(config.settle):
        await erasure.stored_all.wait()
    erasure.post_from, counts = _came_from(nodes, key, counts), _delivered(nodes, key)
    erasure.target = post.id
    erasure.holders = {node.index for node in nodes if _holds_content(node, post.id)}
    await quiet(wiring, config.settle)
    # Watched from before the publish: on links of no latency a peer may store the request
    # before the author's publish returns.
    erasure.erased = deliveries.published[(key, post.seq + 1)] = trio.current_time()
    request = await author.service.publish(erase_content(post.seq, post.id), None)
    deliveries.sizes.append(len(request.raw))
    with trio.move_on_after(config.settle):
        await erasure.dropped_all.wait()
    erasure.request_from = _came_from(nodes, key, counts)
    return erasure


async def quiet(wiring: Wiring, settle: float) -> None:
    """Until no byte is in flight on any link while every task waits (or `settle` passes)."""
    with trio.move_on_after(settle):
        while True:
            await trio.testing.wait_all_tasks_blocked()
            due = [at for end in wiring.ends if (at := end.in_flight_until) is not None]
            if not due:
                return
            await trio.sleep_until(max(due))


def _holds_content(node: Node, msg_id: bytes | None) -> bool:
    message = None if msg_id is None else node.store.feeds.get(msg_id)
    return message is not None and message.has_content


def _delivered(nodes: list[Node], feed: bytes) -> dict[GossipSession, int]:
    """Session -> the messages of `feed` it stored on its node so far."""
    return {session: session.delivered.get(feed, 0) for node in nodes for session in node.sessions}


def _came_from(nodes: list[Node], feed: bytes, before: dict[GossipSession, int]) -> dict[int, int]:
    """Node -> the peer whose session stored a message of `feed` on it since `before`: the
    tree that message spread along (each node stores it from one session)."""
    index = {node.keypair.public: node.index for node in nodes}
    parents: dict[int, int] = {}
    for node in nodes:
        for session in node.sessions:
            if session.delivered.get(feed, 0) > before.get(session, 0):
                parents[node.index] = index[session.peer.key]
    return parents


def _rounds(parents: dict[int, int], reached: int) -> int | None:
    """The most gossip hops from the author (the one node no peer delivered to: 0 hops) to
    a node along `parents`; None unless every one of `reached` nodes is on the tree."""
    hops: dict[int, int] = {}
    for start in parents:
        path: list[int] = []
        node = start
        while node in parents and node not in hops and node not in path:
            path.append(node)
            node = parents[node]
        base = hops.get(node, 0)  # the author, or a node already counted
        for step, on in enumerate(reversed(path), start=1):
            hops[on] = base + step
    if len(parents) + 1 < reached:
        return None
    return max(hops.values(), default=0)


def _last(times: dict[int, float], expected: int, since: float) -> float | None:
    """From `since` to the last of `times`, in seconds; None unless all `expected` came."""
    if len(times) < expected or not times:
        return None
    return round(max(times.values()) - since, 3)
