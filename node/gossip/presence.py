"""Presence between nodes and pages: where each author's caret is in a document, live.

Theory of operation
-------------------
Presence is ephemeral (protocol/presence.py): never a message of a feed, never
stored, gone with the node. The node keeps the latest of each (document, author)
for `TTL` seconds in one `PresenceHub` (`service.shared(PresenceHub)`, so the
IPC op, the gossip sessions and the web view's streams find the same one),
bounded to `MAX_KEPT` entries, the oldest forgotten first.

- Our own pages tell the node where our author is: IPC `doc-presence` (the web
  view's `POST /api/doc-presence`, node/ipc/docs.py), positions in the current
  text turned into atoms. The hub hands it to every gossip session (`senders`)
  and wakes the document pages' streams (node/web/doc_events.py), which send it
  to the browser as positions of their own text.
- Each gossip session sends our author's presence to its peer, in a PRESENCE
  frame, only if the peer offered presence (protocol/gossip.py: `[CREDIT, 0]`
  after its HELLO; a peer that predates presence is never sent the frame) and
  only if the peer may see the document (public, or the peer is a member of its
  group), at most `SEND_RATE` a second (a move skipped then is superseded by the
  next, and the page says where it is again every 15 s).
- What a peer sends is judged here, on plain data, before it reaches the hub:
  `judge_frame` (the peer offered presence; the payload's size and shape; the
  peer's rate, `PresenceRate`; the author is the peer's own feed: a node speaks
  only for its own author, and presence is never passed on) and `judge_access`
  (we hold the document, and it is public or the peer is a member of its
  group). A frame that fails is dropped with its `PresenceDrop` reason, counted
  in `PresenceHub.dropped` and logged at debug; the peer is kept. (A frame whose
  envelope is not one payload of bytes, 1 to 160, never gets here: the protocol
  machine ends the connection, protocol/gossip.py.)
- Who may see a document comes from `PresenceHub.access_of`: every held
  document's audience, read in one walk at most every `ACCESS_SECONDS` (or
  `MISSED_SECONDS` when a frame names one not among them), so frames naming
  random documents cost lookups in memory, not walks of the store.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import trio

from tanglenode.protocol.identity import feed_text
from tanglenode.protocol.presence import (
    Presence,
    PresenceDrop,
    PresenceRefused,
    parse_presence,
)
from tanglenode.storage.groups.state import GroupError, read_group

TTL = 30.0  # seconds a presence is shown without being said again
MAX_KEPT = 4096  # (document, author) entries kept, at most
RATE = 20.0  # presence frames a second a peer may send, on average ...
BURST = 40  # ... and at once
SEND_RATE = 10.0  # what we send a peer, at most, a second (and SEND_BURST at once)
SEND_BURST = 20
PRESENCE_QUEUED = 64  # frames queued for a peer past which our presence is not added
ACCESS_SECONDS = 5.0  # how long the documents' audiences are kept before they are read again
MISSED_SECONDS = 1.0  # ... or, when a document is not among them, at most this often

PUBLIC = "public"
UNKNOWN = "unknown"
# Who may see a document: PUBLIC, UNKNOWN (not held here), or its group's members.
Access = str | frozenset[bytes]


@dataclass
class PresenceRate:
    """A token bucket: `rate` a second on average, `burst` at once."""

    rate: float = RATE
    burst: float = BURST
    tokens: float = BURST
    last: float = 0.0

    def take(self, now: float) -> bool:
        self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
        self.last = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


def judge_frame(
    payload: Any, offered: bool, peer: bytes, now: float, rate: PresenceRate
) -> Presence:
    """A peer's PRESENCE payload as a `Presence`, or `PresenceRefused` with its reason:
    NOT_OFFERED, OVERSIZED, MALFORMED, TOO_FREQUENT, NOT_THE_PEERS (in that order; a
    frame over the rate is not even parsed)."""
    if not offered:
        raise PresenceRefused(PresenceDrop.NOT_OFFERED, "PRESENCE before the peer offered it")
    if not rate.take(now):
        raise PresenceRefused(
            PresenceDrop.TOO_FREQUENT, f"more than {rate.burst:g} at once or {rate.rate:g} a second"
        )
    presence = parse_presence(payload)
    if presence.author != peer:
        raise PresenceRefused(
            PresenceDrop.NOT_THE_PEERS,
            f"it names {feed_text(presence.author)[:12]}…, not the peer's own feed",
        )
    return presence


def judge_access(presence: Presence, peer: bytes, access: Access) -> None:
    """`PresenceRefused` unless we hold the document and the peer may see it."""
    if access == UNKNOWN:
        raise PresenceRefused(PresenceDrop.UNKNOWN_DOCUMENT, "no such document here")
    if access != PUBLIC and peer not in access:
        raise PresenceRefused(PresenceDrop.NOT_A_MEMBER, "a private document of another group")


def may_tell(peer: bytes, access: Access) -> bool:
    """Whether our presence in a document of `access` may go to `peer`."""
    return access == PUBLIC or (not isinstance(access, str) and peer in access)


@dataclass
class Seen:
    presence: Presence
    at: float  # trio's clock
    seq: int  # the hub's count when it came


Sender = Callable[[Presence, Access], None]


@dataclass
class PresenceHub:
    """The node's presence: the latest of each (document, author), for `TTL` seconds."""

    seq: int = 0
    kept: collections.OrderedDict[tuple[bytes, bytes], Seen] = field(
        default_factory=collections.OrderedDict
    )
    senders: set[Sender] = field(default_factory=set)  # the gossip sessions'
    dropped: collections.Counter[str] = field(default_factory=collections.Counter)
    audiences: dict[bytes, Access] = field(default_factory=dict)  # every held document's
    audiences_at: float = float("-inf")  # when they were read (trio's clock)
    _reading: trio.Lock = field(default_factory=trio.Lock)
    _changed: trio.Event = field(default_factory=trio.Event)

    def put(self, presence: Presence, now: float, *, access: Access | None = None) -> None:
        """Keep `presence`, wake the pages; `access` given: it is our own, for the peers."""
        self.seq += 1
        key = (presence.doc, presence.author)
        self.kept.pop(key, None)
        self.kept[key] = Seen(presence, now, self.seq)
        while len(self.kept) > MAX_KEPT:
            self.kept.popitem(last=False)
        changed, self._changed = self._changed, trio.Event()
        changed.set()
        if access is not None:
            for send in list(self.senders):
                send(presence, access)

    def of(self, doc: bytes, after: int, now: float) -> list[Seen]:
        """The document's presence that came after `after` (a `seq`) and is not stale."""
        return [
            seen
            for seen in self.kept.values()
            if seen.seq > after and seen.presence.doc == doc and now - seen.at < TTL
        ]

    def latest(self, seen: Seen) -> bool:
        """Whether `seen` is still its author's latest in its document, and not stale."""
        key = (seen.presence.doc, seen.presence.author)
        found = self.kept.get(key)
        return found is seen and trio.current_time() - seen.at < TTL

    async def wait_changed(self, seen: int) -> None:
        while self.seq <= seen:
            await self._changed.wait()

    def drop(self, refused: PresenceRefused) -> None:
        self.dropped[str(refused.reason)] += 1

    async def access_of(self, service: Any, doc: bytes) -> Access:
        """Who may see `doc`, from every held document's audience, read from the store at
        most once every `ACCESS_SECONDS` (or `MISSED_SECONDS` when `doc` was not among
        them), whatever the frames name: a peer naming random documents costs a lookup
        in memory, never a walk of the store's documents per frame."""
        async with self._reading:
            age = trio.current_time() - self.audiences_at
            if age >= ACCESS_SECONDS or (doc not in self.audiences and age >= MISSED_SECONDS):
                self.audiences = await service.read(read_audiences)
                self.audiences_at = trio.current_time()
        return self.audiences.get(doc, UNKNOWN)


def read_audiences(store: Any) -> dict[bytes, Access]:
    """Each held document's audience as the store says: PUBLIC, or its group's members
    (none when this node cannot read the group)."""
    keypair = store.keypair
    members: dict[bytes, Access] = {}
    audiences: dict[bytes, Access] = {}
    for info in store.documents.held():
        if info.group is None:
            audiences[info.id] = PUBLIC
            continue
        if info.group not in members:
            try:
                found = read_group(store, keypair, info.group) if keypair is not None else None
            except GroupError:
                found = None
            members[info.group] = frozenset() if found is None else frozenset(found.state.members)
        audiences[info.id] = members[info.group]
    return audiences
