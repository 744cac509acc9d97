"""How many proofs one peer may deliver: a token bucket per gossip session.

Theory of operation
-------------------
Each proof a peer sends (an EVIDENCE frame) costs us two signature checks
and a write transaction, and a proof about a throwaway feed costs its
sender nothing to make. So each session lets its peer deliver `BURST`
proofs at once and `RATE` a second after that: the bucket holds up to
`BURST` tokens, refilled at `RATE` a second, and each proof takes one. A
proof that finds the bucket empty is refused with the reason
`evidence-rate` (node/gossip/session.py): not checked, not stored, its credit granted
back, the peer not dropped. An honest peer sends each proof once per
connection, only those about feeds the receiver's clock names
(docs/PEERS.md, "Proofs"), which stays within the burst unless the two share
more than `BURST` forked feeds; a proof refused from it comes again on its
next connection, or from another peer.
"""

from __future__ import annotations

RATE = 64.0  # proofs a second, sustained
BURST = 4096  # proofs at once
REFUSED = "evidence-rate"  # the reason a proof over the rate is refused with


class ProofRate:
    def __init__(self, rate: float = RATE, burst: int = BURST, *, now: float = 0.0) -> None:
        self.rate, self.burst = rate, burst
        self.tokens = float(burst)
        self.at = now
        self.refused = 0

    def take(self, now: float) -> bool:
        """Whether one more proof may come at `now` (and take its token)."""
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        self.refused += 1
        return False
