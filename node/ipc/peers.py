"""The IPC ops about the node and its peers: `status`, `peers`, `clock`, `connect`, `disconnect`.

Theory of operation
-------------------
`node/ipc/server.py` serves the socket and dispatches every op through one table
(`OPS`, node/ipc/ops.py); these handlers are its rows for the ops only a running node
answers. Each is `handler(area, request)`: `area.node` is the
`RunningNode`, what the daemon has beyond its store (the peers, the
network, what `status` adds). Every reply is bounded
whatever peers advertise: at most `STATUS_LIST` forks, suspected forks,
stalls and peers in a status (the rest counted), pages of peers and
clocks, `BEHIND_SHOWN` feeds of each peer's behind-map, and as many of
its not-followed and blocked feeds.

A peer's clock names the feeds it carries. Those we carry too and hold
less of are what we are `behind` on: a lag, which replication closes. The
rest our scope leaves out (docs/PEERS.md, "Scope"): `not_followed` (no
follow of ours reaches them: `tangled follow` carries one) and `blocked`.
They are a choice, not a lag, so they never count as behind, and a peer
whose carried feeds we hold all of is caught up whatever else it shows.
Each map lists the peer's own feed first when it is one of them (following
the peer itself is what a user who connected to it most likely meant),
then the first in key order; `*_feeds` and `*_messages` count them all.

A suspected fork (storage.feeds.processor) is a (feed, seq) that a message names
with a tag other than the one of the message held there: `status` shows
each as `{feed, seq, named_tag, held_tag, named_by}` (the tags are the
first bytes of the two ids, `named_by` the feed whose next message waits
for the proof), until a proof settles it; gossip asks peers for the other
message meanwhile (node/gossip/session.py). That wait is a stall too, whose
`waits_for_tag` is the tag named (None for a wait on a feed proven invalid
to reach its end), `suspected` whether the message held there has another
tag (a suspected fork: the wait ends with a proof).

A peer is shown by its key; its `address` is the one we dial it at (None
for a peer that only dialed us: its source port is temporary and tells a
reader nothing). `last_error` is why its last connection or dial failed,
with `last_error_age` in seconds; a peer that connected since has none.

What `status` reads of the store (its stalls, suspected forks and the
spacetime's finality watermark) changes only when a write transaction
commits, and a client that waits for a count may poll `status` many times
between two commits (bench/replication.py, every 20 ms). So the three are
read together in one worker-thread call and kept (`StoreFacts`, one per
service, the IPC's and the web view's alike) with the number of the last
transaction the store had committed before they were read (LMDB's
`last_txnid`, read on the loop: no I/O); a later `status` reads them again
only once that number moved, whoever wrote: the node's writer or anything
else holding the store. What they were read at is never older than that
number, so a `status` never shows less than the commits made before it
began.

`status` with `digests: true` adds each timeline's digest (storage/views/digest.py:
computed on demand, cached by version): the spacetime's, then at most
`STATUS_DIGESTS` tangles'. They are not free on a large, changing store,
so a client that polls status for counts does not ask for them.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from tanglenode.node.ipc.scope_notes import standing
from tanglenode.node.net.peers import PeerRegistry, PeerState
from tanglenode.protocol.identity import feed_text
from tanglenode.protocol.ipc import (
    BEHIND_SHOWN,
    STATUS_DIGESTS,
    STATUS_LIST,
    ClockRequest,
    ConnectRequest,
    DisconnectRequest,
    ErrorKind,
    PeersRequest,
    RequestError,
    StatusRequest,
    digest_body,
    short,
)
from tanglenode.storage.scope import EVERY_FEED, Scope

if TYPE_CHECKING:
    from tanglenode.node.gossip.network import Network
    from tanglenode.node.ipc.area import Area
    from tanglenode.node.service.store_service import StoreService

__all__ = [
    "RunningNode",
    "StoreFacts",
    "clock",
    "connect",
    "disconnect",
    "peer_summary",
    "peers",
    "status",
]


def _first(feeds: dict[bytes, int], key: bytes) -> dict[bytes, int]:
    """At most `BEHIND_SHOWN` of `feeds`: the peer's own (`key`) first, then in key order."""
    first = sorted(feeds if len(feeds) <= BEHIND_SHOWN else heapq.nsmallest(BEHIND_SHOWN, feeds))
    if key in feeds:
        first = [key, *(feed for feed in first if feed != key)]
    return {feed: feeds[feed] for feed in first[:BEHIND_SHOWN]}


def peer_summary(
    peer: PeerState, ours: dict[bytes, int], forked: set[bytes], scope: Scope = EVERY_FEED
) -> dict[str, Any]:
    """One peer as `status` and `peers` show it: what it has of the feeds we carry that we
    lack (`behind`), and apart from that the feeds it shows that our `scope` leaves out,
    not followed or blocked (never "behind": not holding them is our choice)."""
    behind = peer.behind(ours, forked, scope.carries)
    not_followed, blocked = peer.outside(ours, scope.carries, scope.blocked)
    age = peer.error_age()
    seen = peer.seen_age()
    return {
        "key": peer.key,
        "address": short(peer.address),
        "connected": peer.connected,
        "direction": peer.direction,
        "dialed": peer.dialed,
        "received": peer.received,
        "sent": peer.sent,
        "bytes_in": peer.bytes_in,
        "bytes_out": peer.bytes_out,
        "caught_up": peer.connected and not behind and bool(peer.clock or peer.since),
        "behind": dict(sorted(behind.items())[:BEHIND_SHOWN]),
        "behind_feeds": len(behind),
        "behind_messages": sum(behind.values()),
        "not_followed": _first(not_followed, peer.key),
        "not_followed_feeds": len(not_followed),
        "not_followed_messages": sum(not_followed.values()),
        "blocked": _first(blocked, peer.key),
        "blocked_feeds": len(blocked),
        "clock_feeds": len(peer.clock),
        "last_error": short(peer.last_error),
        "last_error_age": None if age is None else round(age, 1),
        "connected_seconds": round(time.time() - peer.since) if peer.connected else None,
        "last_seen_age": None if seen is None else round(seen, 1),
    }


@dataclass
class RunningNode:
    """What only the running node has: its peers, its network, what `status` adds (the
    address it listens on, the web view's), and the nursery `connect`'s dialers run in
    (the IPC server's, once it serves)."""

    registry: PeerRegistry
    network: Network
    status_extra: dict[str, Any] = field(default_factory=dict)
    dialers: trio.Nursery | None = None
    config_file: Path | None = None  # where `connect` with `save` adds the peer


@dataclass
class StoreFacts:
    """What `status` shows of the store, as of a committed transaction (module doc)."""

    txnid: int = -1  # the last transaction committed before `facts` were read
    facts: tuple[list[Any], list[Any], int] = ([], [], 0)  # stalls, suspects, final
    reads: int = 0  # how many times they were read (for tests)

    async def read(self, service: StoreService) -> tuple[list[Any], list[Any], int]:
        """Stalls, suspected forks and the spacetime's finality watermark, read again only
        if a write transaction committed since they were last read."""
        committed = service.store.ctx.env.info()["last_txnid"]
        if committed != self.txnid:
            facts = await service.read(
                lambda store: (
                    store.feeds.stalls(),
                    store.feeds.suspected_forks(),
                    store.timelines.spacetime_final(),
                )
            )
            self.reads += 1
            if committed >= self.txnid:  # a read that started later may have finished first
                self.txnid, self.facts = committed, facts
            return facts
        return self.facts


def _running(area: Area) -> RunningNode:
    assert area.node is not None, "served only by the running node (node.ipc.ops.OPS)"
    return area.node


async def status(area: Area, request: StatusRequest) -> dict[str, Any]:
    """A summary: counts, and at most `STATUS_LIST` forks, suspected forks, stalls and
    peers each."""
    node, service = _running(area), area.service
    invalid = dict(service.invalid)
    stalled, suspected, final = await service.shared(StoreFacts).read(service)
    forked = set(invalid)
    ours = service.clock
    peers = list(node.registry.peers.values())
    shown = [peer_summary(peer, ours, forked, service.scope) for peer in peers[:STATUS_LIST]]
    reply = {
        "feed": area.keypair.public,  # type: ignore[union-attr]  # a running node has its own
        "feeds": len(ours),
        "messages": sum(ours.values()),
        "forks": [[author, seq] for author, seq in list(invalid.items())[:STATUS_LIST]],
        "forks_total": len(invalid),
        "suspected_forks": [
            {
                "feed": x.feed,
                "seq": x.seq,
                "named_tag": x.named_tag,
                "held_tag": x.held_tag,
                "named_by": x.by_feed,
            }
            for x in suspected[:STATUS_LIST]
        ],
        "suspected_forks_total": len(suspected),
        "final": final,
        "stalls": [
            {
                "feed": x.feed,
                "seq": x.seq,
                "waits_for": [x.needs_feed, x.needs_seq],
                "waits_for_tag": x.needs_tag,  # the tag named (None: past an invalid end)
                "suspected": x.suspected,  # held with another tag: waits for a proof
                "witness": x.witness,  # a feed not carried: waits for its witness
            }
            for x in stalled[:STATUS_LIST]
        ],
        "stalls_total": len(stalled),
        "documents_backlog": service.store.writes.backlog(),  # processed, not woven yet
        "store_full": service.full,  # why the last write found no room; None: it found room
        "own_head_unrecorded": service.store.writes.own_head_unrecorded,  # storage/feeds/ownhead
        "peers": shown,
        "peers_total": len(peers),
        "peers_connected": sum(peer.connected for peer in peers),
        "truncated": max(len(invalid), len(suspected), len(stalled), len(peers)) > STATUS_LIST,
        **node.status_extra,
    }
    if request.digests:
        found, more = await service.read(
            lambda store: store.digests.timeline_digests(STATUS_DIGESTS)
        )
        reply["digests"] = [
            ({"spacetime": True} if root is None else {"tangle": name, "root": root})
            | digest_body(digest.version, digest.count, digest.digest)
            for root, name, digest in found
        ]
        reply["digests_truncated"] = more
    return reply


async def peers(area: Area, request: PeersRequest) -> dict[str, Any]:
    """A page of peers (`start`, `limit` up to `MAX_PEERS_PAGE`), each summarised."""
    start, limit = request.start, request.limit
    forked = set(area.service.invalid)
    every = list(_running(area).registry.peers.values())
    page = every[start : start + limit]
    following = start + len(page)
    return {
        "peers": [
            peer_summary(peer, area.service.clock, forked, area.service.scope) for peer in page
        ],
        "total": len(every),
        "next": following if following < len(every) else None,
    }


async def clock(area: Area, request: ClockRequest) -> dict[str, Any]:
    """A page of a vector clock, in feed order: ours, or the one `peer` advertised."""
    start, limit = request.start, request.limit
    registry = _running(area).registry
    if request.peer is None:
        vector = area.service.clock
    else:
        if request.peer not in registry.peers:
            raise RequestError(ErrorKind.NOT_FOUND, "no such peer")
        vector = registry.peers[request.peer].clock
    feeds = sorted(vector)
    page = feeds[start : start + limit]
    following = start + len(page)
    return {
        "entries": [[feed, vector[feed]] for feed in page],
        "total": len(feeds),
        "next": following if following < len(feeds) else None,
    }


async def connect(area: Area, request: ConnectRequest) -> dict[str, Any]:
    """Dial a peer (and keep redialing it); a second connect to one key replaces the first.
    The reply's `standing` says whether our scope carries the peer's feed, and why
    (node/ipc/scope_notes.py): connecting replicates only what the scope carries.

    With `save`, the peer is first added to the node's config file (config/peers.py), so
    that it is dialed from every start on; a peer that cannot be saved is not dialed."""
    from tanglenode.node.gossip.network import TooManyDialers  # loaded with the daemon

    node = _running(area)
    assert node.dialers is not None
    if area.keypair is not None and request.key == area.keypair.public:
        raise RequestError(ErrorKind.BAD_REQUEST, "that feed is this node's own: nothing to dial")
    reply: dict[str, Any] = {"dialing": request.address}
    if request.save:
        reply["saved"] = await save_in_config(node, request)
    try:
        node.network.dial(node.dialers, request.address, request.key)
    except TooManyDialers as error:
        raise RequestError(ErrorKind.BAD_REQUEST, str(error)) from None
    reply["standing"] = standing(area.service.scope, request.key)  # what of theirs we carry
    return reply


async def save_in_config(node: RunningNode, request: ConnectRequest) -> bool:
    """Add the peer to the config file; False if it was there already."""
    from tanglenode.config.peers import ConfigNotWritten, save_peer
    from tanglenode.config.settings import ConfigError

    config = node.config_file
    if config is None:
        raise RequestError(ErrorKind.NOT_FOUND, "this node was started without a config file")
    try:
        return await trio.to_thread.run_sync(
            save_peer, config, request.address, feed_text(request.key)
        )
    except FileNotFoundError:
        raise RequestError(
            ErrorKind.NOT_FOUND, f"no config at {config}; run `tangled init` first"
        ) from None
    except ConfigError as error:
        raise RequestError(ErrorKind.CONFLICT, short("; ".join(error.problems))) from None
    except ConfigNotWritten as error:
        raise RequestError(ErrorKind.REFUSED, short(str(error))) from None


async def disconnect(area: Area, request: DisconnectRequest) -> dict[str, Any]:
    """Stop dialing a peer and end its connections (replying once they ended);
    `not-found` if it had neither."""
    dialed, closed = await _running(area).network.disconnect(request.key)
    if not dialed and not closed:
        raise RequestError(ErrorKind.NOT_FOUND, "not dialing or connected to that peer")
    return {"dialed": dialed, "connections": closed}
