"""What the node counts for `/metrics`: plain ints, dicts and fixed-bucket histograms.

Theory of operation
-------------------
The paths that do the work (ingest, publish, gossip, the IPC streams) only
add to the ints of one `NodeCounters`, which `StoreService` owns, so every
part of the node that holds the service can reach it. Nothing here imports
prometheus-client: a count costs an attribute lookup and an addition, and
the CLI's short commands load none of the exporter. At each scrape,
node/web/metrics.py reads these values and turns them into metric families.

Only the Trio thread writes them (worker threads hand their results back
to it first), and a scrape reads them on that thread too, with no `await`
in between: no lock is needed, and a scrape never sees half an update.

Memory is bounded whatever peers and clients do:

- a histogram is a fixed list of buckets (`LATENCY_BOUNDS`, in seconds,
  upper bounds inclusive, as Prometheus' `le`), plus a count and a sum;
- per-peer traffic is kept for the first `MAX_PEERS_LABELLED` peers met
  (by feed key, for the node's life, so each one's counters only grow); the
  traffic of any further peer is summed into one `other` entry, but for the
  peers the node dials (the operator's, as many as configured or connected),
  which always get their own;
- a peer's lag is read at scrape time from the `PeerState` of each gossip
  session open now, registered while the session runs (`session`);
- an IPC stream registers its queue (a Trio memory channel) while it is
  open; a scrape reads how many frames wait in each.
"""

from __future__ import annotations

import contextlib
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from tanglenode.node.net.peers import PeerState
from tanglenode.protocol.errors import Reason
from tanglenode.protocol.identity import feed_text
from tanglenode.protocol.invite import Refusal
from tanglenode.storage.feeds.ingest import Outcome

# What an inviter answers (the redeemer's own refusals, told before any dial, are not its).
INVITE_REFUSALS = tuple(r for r in Refusal if r not in (Refusal.UNAVAILABLE, Refusal.OTHER_NETWORK))
MAX_PEERS_LABELLED = 256
OTHER = "other"  # the label of every peer past the first MAX_PEERS_LABELLED (a feed id has `@`)
LATENCY_BOUNDS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)
PROOF_REASONS = (Reason.FORKED_FEED,)


class Histogram:
    """Observations in fixed buckets: `buckets[i]` counts values <= `bounds[i]` and above
    the bound before it; the last bucket counts those above every bound (+Inf)."""

    __slots__ = ("bounds", "buckets", "count", "total")

    def __init__(self, bounds: tuple[float, ...] = LATENCY_BOUNDS) -> None:
        if list(bounds) != sorted(set(bounds)):
            raise ValueError("histogram bounds must be distinct and ascending")
        self.bounds = bounds
        self.buckets = [0] * (len(bounds) + 1)
        self.count = 0
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.buckets[bisect_left(self.bounds, value)] += 1
        self.count += 1
        self.total += value

    def cumulative(self) -> list[tuple[float, int]]:
        """(upper bound, observations at or below it) per bucket, +Inf last: Prometheus' form."""
        running, rows = 0, []
        for bound, count in zip((*self.bounds, float("inf")), self.buckets, strict=True):
            running += count
            rows.append((bound, running))
        return rows


@dataclass(slots=True)
class PeerTraffic:
    """What went over gossip with one peer (or the `other` peers together)."""

    bytes_in: int = 0  # bytes of gossip frames received (after box-stream decryption)
    bytes_out: int = 0  # bytes of gossip frames sent (before encryption)
    received: int = 0  # messages it sent us, whatever became of them
    sent: int = 0  # messages we sent it


class NodeCounters:
    """The node's counts since it started (see the module docstring)."""

    def __init__(self, max_peers: int = MAX_PEERS_LABELLED) -> None:
        self.ingested = 0  # messages from peers that the store accepted
        self.duplicates = 0  # messages from peers the store held already
        self.contents_refused = 0  # stored as their header alone: content not matching it
        self.rejected = {str(reason): 0 for reason in Reason}  # refused, by reason code
        self.proofs = {str(reason): 0 for reason in PROOF_REASONS}  # a fork's
        self.ingest_latency = Histogram()  # a peer's frame received -> its batch committed
        self.publish_latency = Histogram()  # a publish call -> its reply (group commit)
        self.max_peers = max_peers
        self.peers: dict[bytes, PeerTraffic] = {}  # the labelled peers, in the order met
        self.other = PeerTraffic()
        self.ipc_lagged = 0  # IPC streams closed because the client fell behind
        # redemptions of our invites: "redeemed", or the refusal (node/invites/door.py)
        self.invites = {"redeemed": 0, **{str(refusal): 0 for refusal in INVITE_REFUSALS}}
        self._sessions: dict[int, PeerState] = {}  # open gossip sessions' peers, by token
        self._next_session = 0
        self._queues: set[Any] = set()  # open IPC streams' trio.MemoryReceiveChannels

    # -- ingest -------------------------------------------------------------------

    def count_ingest(self, results: Iterable[Any]) -> None:
        """Count a stored batch's `storage.feeds.ingest.IngestResult`s by outcome and reason."""
        rejected, proofs = self.rejected, self.proofs
        for result in results:
            outcome = result.outcome
            if outcome is Outcome.ACCEPTED:
                self.ingested += 1
                if result.message is not None and result.message.content_refused is not None:
                    self.contents_refused += 1
            elif outcome is Outcome.DUPLICATE:
                self.duplicates += 1
            elif outcome is Outcome.REJECTED:
                rejected[result.reason] = rejected.get(result.reason, 0) + 1
            else:  # a fork: the message proved its feed invalid and is kept as evidence
                proofs[result.reason] = proofs.get(result.reason, 0) + 1

    # -- peers --------------------------------------------------------------------

    def traffic(self, key: bytes, *, ours: bool = False) -> PeerTraffic:
        """`key`'s own counters while fewer than `max_peers` peers have theirs, else `other`;
        a peer we dial (`ours`: the operator's) always gets its own, so keys made up by
        strangers cannot push it into `other`."""
        found = self.peers.get(key)
        if found is not None:
            return found
        if len(self.peers) >= self.max_peers and not ours:
            return self.other
        found = self.peers[key] = PeerTraffic()
        return found

    def label(self, key: bytes) -> str:
        """The `peer` label of `key`: its feed id, or `other`."""
        return feed_text(key) if key in self.peers else OTHER

    @contextlib.contextmanager
    def session(self, peer: PeerState) -> Iterator[PeerTraffic]:
        """Register a gossip session with `peer` while it runs (its lag is read from `peer`);
        yields the traffic counters it adds to."""
        token = self._next_session
        self._next_session += 1
        self._sessions[token] = peer
        try:
            yield self.traffic(peer.key, ours=peer.dialed)
        finally:
            del self._sessions[token]

    def lags(
        self,
        ours: dict[bytes, int],
        forked: set[bytes],
        carries: Callable[[bytes], bool] | None = None,
    ) -> dict[str, int]:
        """Messages of the feeds we carry (`carries`; all without it) that each connected
        peer has and we lack (as `status`' `behind_messages`), by `peer` label; each peer
        counted once however many connections it has."""
        lags: dict[str, int] = {}
        counted: set[bytes] = set()
        for peer in self._sessions.values():
            if peer.key in counted:
                continue
            counted.add(peer.key)
            label = self.label(peer.key)
            lags[label] = lags.get(label, 0) + sum(peer.behind(ours, forked, carries).values())
        return lags

    # -- IPC streams --------------------------------------------------------------

    @contextlib.contextmanager
    def ipc_queue(self, receiver: Any) -> Iterator[None]:
        """Register an IPC stream's queue (a `trio.MemoryReceiveChannel`) while it is open."""
        self._queues.add(receiver)
        try:
            yield
        finally:
            self._queues.discard(receiver)

    def queued_frames(self) -> tuple[int, int]:
        """Frames waiting in the open IPC streams' queues: the sum, and the most in one."""
        depths = [receiver.statistics().current_buffer_used for receiver in self._queues]
        return sum(depths), max(depths, default=0)
