"""A session's walk with its peer, and what the walk leaves both ends sharing.

Theory of operation
-------------------
protocol/reconcile.py walks two clocks together on plain data; this module is
what one gossip session keeps of it (node/gossip/walk_session.py carries out
the frames). While the walk runs, `receive` answers each of the peer's messages;
once it ended, the peer's clock is known (`peer_heads`) and both ends hold
the same sorted list of the feeds whose heads they held alike, `agreed`: a
feed of it can be named by its position, a few bytes where its key takes 34:

- the walk's first WANT names the feeds alike that it wants after the head
  both hold as a selection of positions (a bitmap, or runs: "all" is two
  bytes), WANT_AGREED, taken once (`wants_by_position`, `wanted`);
- the list starts the connection's tables of feed names (node/gossip/
  feed_names.py), by which CLOCK notes and WANTs name feeds by position.

A position the list does not have, a selection of another length, or a
second WANT_AGREED is the peer's breach (`reconcile`): the session drops it.
"""

from __future__ import annotations

from typing import Any

from tanglenode.protocol.gossip import Breach, Clock, GossipError
from tanglenode.protocol.reconcile import Reconciliation, selected, selection
from tanglenode.protocol.reconcile_shape import ReconcileError


class Walk:
    """One session's walk (see the module's theory of operation)."""

    def __init__(self, ours: Clock, salt: bytes, leads: bool, max_items: int) -> None:
        self.ours = ours  # our clock when the walk opened: what the peer learns of us
        self.reconciliation: Reconciliation | None = Reconciliation(
            ours, salt, leads, max_items=max_items
        )
        self.done = False
        self.peer_heads: Clock = {}  # once done: the peer's clock, until the session takes it
        self.agreed: list[bytes] = []  # once done: the feeds alike at both ends, sorted
        self._seqs: list[int] | None = None  # their seqs, until the peer's WANT_AGREED

    def opening(self) -> list[Any]:
        assert self.reconciliation is not None
        return self.reconciliation.opening()

    def receive(self, ranges: list[Any]) -> list[Any] | None:
        """The peer's message: our reply, if any (then, or once `done`, the walk is over:
        what it taught is kept, the rest of the walk's state freed)."""
        walk = self.reconciliation
        if walk is None:
            raise GossipError(Breach.RECONCILE, "a message of a walk that ended")
        try:
            reply = walk.receive(ranges)
        except ReconcileError as error:
            raise GossipError(Breach.RECONCILE, str(error)) from None
        if walk.done:
            self.done, self.reconciliation = True, None
            self.peer_heads, self.agreed = walk.peer_heads(), walk.agreed()
            self._seqs = [self.ours[feed][0] for feed in self.agreed]
        return reply

    # -- WANT by position --------------------------------------------------------------

    def wants_by_position(self, wants: dict[bytes, int]) -> tuple[Any, dict[bytes, int]]:
        """Split a WANT into a selection of the feeds alike wanted after the head both hold
        (None if there are none) and the rest, by key."""
        seqs = dict(zip(self.agreed, self._seqs or (), strict=False))
        chosen = {feed for feed, after in wants.items() if seqs.get(feed, -1) == after}
        rest = {feed: after for feed, after in wants.items() if feed not in chosen}
        if not chosen:
            return None, rest
        return selection([feed in chosen for feed in self.agreed]), rest

    def wanted(self, chosen: Any) -> dict[bytes, int]:
        """The peer's WANT_AGREED as a WANT: each feed chosen, after the head both held."""
        seqs, self._seqs = self._seqs, None
        if seqs is None:
            raise GossipError(Breach.RECONCILE, "WANT_AGREED before the walk ended, or twice")
        try:
            bits = selected(chosen, len(self.agreed))
        except ReconcileError as error:
            raise GossipError(Breach.RECONCILE, str(error)) from None
        return {feed: seq for feed, seq, bit in zip(self.agreed, seqs, bits, strict=True) if bit}
