"""What the node knows about its peers: who is connected, what they have, why they left.

Each peer (by long-term public key) has a `PeerState` that outlives its
connections: the vector clock it last told us, when it connected, and the
reason its last connection ended. "Am I caught up with peer P" is a pure
function of P's clock and ours: every feed P has, we have at least as far
(feeds with fork evidence excepted, as P may hold the other branch).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class PeerState:
    key: bytes
    address: str | None = None
    connections: int = 0
    direction: str = ""
    since: float = 0.0
    clock: dict[bytes, int] = field(default_factory=dict)
    received: int = 0
    sent: int = 0
    last_error: str | None = None

    @property
    def connected(self) -> bool:
        return self.connections > 0

    def behind(self, ours: dict[bytes, int], forked: set[bytes] = frozenset()) -> dict[bytes, int]:
        """Feeds where the peer has more than we do: feed -> how many messages we lack."""
        return {
            feed: seq - ours.get(feed, 0)
            for feed, seq in self.clock.items()
            if seq > ours.get(feed, 0) and feed not in forked
        }


class PeerRegistry:
    def __init__(self) -> None:
        self.peers: dict[bytes, PeerState] = {}

    def state(self, key: bytes) -> PeerState:
        if key not in self.peers:
            self.peers[key] = PeerState(key)
        return self.peers[key]

    def connected(self, key: bytes, direction: str, address: str | None) -> PeerState:
        peer = self.state(key)
        peer.connections += 1
        peer.direction, peer.since = direction, time.time()
        peer.address = address or peer.address
        peer.clock = {}
        return peer

    def disconnected(self, key: bytes, reason: str | None) -> None:
        peer = self.state(key)
        peer.connections -= 1
        peer.last_error = reason

    def is_connected(self, key: bytes) -> bool:
        return key in self.peers and self.peers[key].connections > 0
