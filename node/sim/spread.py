"""How each measured message spread: every payload copy received, and the hops it took.

Theory of operation
-------------------
`Spread.watch` puts a probe on a session's protocol machine (the
`GossipConnection`'s `receive_data`, node/gossip/session.py feeds it every
byte read): each MESSAGES frame's messages are copies of a payload that
node received from that peer, duplicates included, whether or not the node
then stores them (a node that crashes with a batch in its inbox still
received it). For each measured message (its author and seq) the probe
counts the copies received over the whole network, and gives each node
the hop of the first copy it received: the hop of the copy's sender plus
one, the publisher's own hop 0 (the publisher is the node whose feed the
message is on; a node given the message before the run, as `reconnect`
does, is a publisher too). A sender holds what it sends, so its hop is
known by then.

From them, per message k (published by one node, reached by `n_k` nodes
counting the publisher, `m_k` copies received in all):

    rmr_k = m_k / (n_k - 1) - 1     relative message redundancy (Plumtree):
                                    0 when every node reached received
                                    exactly one copy
    ldh_k = the hop of the first copy of the node it reached last
                                    (last delivery hop, Plumtree)

`rmr` is the mean of rmr_k over the messages that reached a node besides
their publisher, `ldh` the largest ldh_k.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import TYPE_CHECKING

from tanglenode.protocol.gossip import PeerMessages
from tanglenode.protocol.message import author_of
from tanglenode.protocol.wire import header_of

if TYPE_CHECKING:
    from tanglenode.node.gossip.session import GossipSession

Key = tuple[bytes, int]  # a message: its author (feed) and seq


class Spread:
    def __init__(self, index_of: dict[bytes, int], measured: Callable[[Key], bool]) -> None:
        self.index_of = index_of  # node key -> node index
        self.measured = measured  # whether a message is one the run measures
        self.copies: dict[Key, int] = {}  # copies received, over every node
        # node -> the hop of its first copy, in the order the nodes were reached
        self.hops: dict[Key, dict[int, int]] = {}

    def watch(self, session: GossipSession, receiver: int) -> None:
        """Count what `session` (node `receiver`'s, with its peer) receives from now on."""
        connection = session.connection
        receive = connection.receive_data
        sender = self.index_of[session.peer.key]

        def observed(data: bytes):
            events = receive(data)
            for event in events:
                if isinstance(event, PeerMessages):
                    self.received(event.raws, receiver, sender)
            return events

        connection.receive_data = observed  # type: ignore[method-assign]  # the probe

    def received(self, raws: list[bytes], receiver: int, sender: int) -> None:
        for raw in raws:
            key = message_key(raw)
            if key is None or not self.measured(key):
                continue
            self.copies[key] = self.copies.get(key, 0) + 1
            hops = self.hops.setdefault(key, {})
            if receiver not in hops and self.index_of.get(key[0]) != receiver:
                hops[receiver] = self.hop(key, sender) + 1

    def hop(self, key: Key, node: int) -> int:
        """The hop of `node`'s copy: 0 for a node that held the message before any copy
        came (its publisher, or a node it was put on before the run)."""
        return self.hops.get(key, {}).get(node, 0)

    def figures(self) -> dict[str, float | int | None]:
        """`rmr` and `ldh` (the module docstring); None when no message reached a node."""
        redundancy = [
            self.copies[key] / len(reached) - 1 for key, reached in self.hops.items() if reached
        ]
        last = [list(reached.values())[-1] for reached in self.hops.values() if reached]
        return {
            "rmr": round(statistics.fmean(redundancy), 4) if redundancy else None,
            "ldh": max(last) if last else None,
        }


def message_key(raw: bytes) -> Key | None:
    """(author, seq) a message's bytes claim, read without decoding them (None if they do
    not start as a message does: the store refuses them)."""
    author = author_of(raw)
    if author is None:
        return None
    header = header_of(raw)
    seq = _msgpack_uint(bytes(header[36:45]))
    return None if seq is None else (author, seq)


def _msgpack_uint(data: bytes) -> int | None:
    """The unsigned int msgpack encodes at the start of `data` (the seq after the author)."""
    if not data:
        return None
    first = data[0]
    if first < 0x80:
        return first
    width = {0xCC: 1, 0xCD: 2, 0xCE: 4, 0xCF: 8}.get(first)
    if width is None or len(data) < 1 + width:
        return None
    return int.from_bytes(data[1 : 1 + width], "big")
