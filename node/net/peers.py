"""What the node knows about its peers: who is connected, what they have, why they left.

Each peer (by long-term public key) has a `PeerState`: the vector clock it
told us on its current connection, when it connected, and the reason its
last connection ended. "Am I caught up with peer P" is a pure function of
P's clock, ours and our scope: every feed P has that we carry, we have at
least as far (feeds with fork evidence excepted, as P may hold the other
branch). The feeds P has that we do not carry are never "behind": they are
what our scope chose not to hold, shown apart as not followed or blocked
(`outside`, docs/PEERS.md "Scope").

Memory stays bounded whoever connects: a peer's clock is dropped when its
last connection ends, and of the peers we do not dial ourselves only the
`RECENT` most recently disconnected are remembered (for `status`).

A peer's `address` is where we reach it: the one we dial, never the
temporary source port of a connection it opened to us (that is `source`,
kept only while connected). Its last error is dropped when a connection
succeeds, and remembers when it happened (`error_age`), so a status never
shows an old failure as if it were current.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Set
from dataclasses import dataclass, field

RECENT = 64


@dataclass
class PeerState:
    key: bytes
    address: str | None = None
    connections: int = 0
    direction: str = ""
    since: float = 0.0
    clock: dict[bytes, int] = field(default_factory=dict)
    received: int = 0  # messages it sent us that we stored
    sent: int = 0  # messages we sent it
    proofs_refused: int = 0  # proofs it sent over its rate (node/gossip/proof_rate.py)
    bytes_in: int = 0  # gossip bytes it sent us (after box-stream decryption), every connection
    bytes_out: int = 0  # gossip bytes we sent it (before encryption)
    seen_at: float = 0.0  # time.time() its last connection ended (0: never, or connected now)
    last_error: str | None = None
    error_at: float = 0.0  # time.time() of last_error
    dialed: bool = False  # we keep a connection to it (config or `connect`)
    source: str | None = None  # an inbound connection's remote address, while connected

    @property
    def connected(self) -> bool:
        return self.connections > 0

    def failed(self, reason: str | None) -> None:
        """Remember why the last connection (or dial) ended, and when."""
        self.last_error, self.error_at = reason, time.time()

    def error_age(self, now: float | None = None) -> float | None:
        """Seconds since `last_error`, None without one."""
        if self.last_error is None:
            return None
        return max(0.0, (time.time() if now is None else now) - self.error_at)

    def seen_age(self, now: float | None = None) -> float | None:
        """Seconds since we last had a connection to it: 0 while connected, None if never."""
        if self.connected:
            return 0.0
        if not self.seen_at:
            return None
        return max(0.0, (time.time() if now is None else now) - self.seen_at)

    def behind(
        self,
        ours: dict[bytes, int],
        forked: Set[bytes] = frozenset(),
        carries: Callable[[bytes], bool] | None = None,
    ) -> dict[bytes, int]:
        """Feeds we carry (all, without `carries`) where the peer has more than we do:
        feed -> how many messages we lack. A feed we do not carry is never behind: not
        holding it is our choice (`outside`)."""
        return {
            feed: seq - ours.get(feed, 0)
            for feed, seq in self.clock.items()
            if seq > ours.get(feed, 0) and feed not in forked and (carries is None or carries(feed))
        }

    def outside(
        self, ours: dict[bytes, int], carries: Callable[[bytes], bool], blocked: Set[bytes]
    ) -> tuple[dict[bytes, int], dict[bytes, int]]:
        """The feeds the peer's clock names that we do not carry, split in those we do not
        follow and those we block: feed -> how many of its messages the peer holds that we
        do not (0 for one held from before we stopped carrying it)."""
        not_followed: dict[bytes, int] = {}
        refused: dict[bytes, int] = {}
        for feed, seq in self.clock.items():
            if carries(feed):
                continue
            (refused if feed in blocked else not_followed)[feed] = max(0, seq - ours.get(feed, 0))
        return not_followed, refused


class PeerRegistry:
    def __init__(self, recent: int = RECENT) -> None:
        self.peers: dict[bytes, PeerState] = {}
        self.recent = recent

    def state(self, key: bytes) -> PeerState:
        if key not in self.peers:
            self.peers[key] = PeerState(key)
        return self.peers[key]

    def dialing(self, key: bytes, address: str) -> PeerState:
        peer = self.state(key)
        peer.address, peer.dialed = address, True
        return peer

    def connected(self, key: bytes, direction: str, address: str | None) -> PeerState:
        peer = self.state(key)
        peer.connections += 1
        peer.direction, peer.since = direction, time.time()
        if direction == "in":
            peer.source = address
        else:
            peer.address = address or peer.address
        if peer.connections == 1:  # what ended the last connection is over now
            peer.last_error = None
        peer.clock = {}
        return peer

    def undialed(self, key: bytes) -> None:
        """We stopped dialing `key` (`tangled disconnect`): it may be forgotten as others."""
        if key in self.peers:
            self.peers[key].dialed = False

    def disconnected(self, key: bytes, reason: str | None) -> None:
        peer = self.state(key)
        peer.connections -= 1
        if reason is not None or not peer.connected:
            peer.failed(reason)
        if peer.connected:
            return
        peer.clock, peer.source, peer.seen_at = {}, None, time.time()
        # Most recently disconnected last; forget the oldest peers we do not dial.
        self.peers[key] = self.peers.pop(key)
        transient = [k for k, p in self.peers.items() if not p.dialed and not p.connected]
        for old in transient[: max(0, len(transient) - self.recent)]:
            del self.peers[old]

    def is_connected(self, key: bytes) -> bool:
        return key in self.peers and self.peers[key].connections > 0
