"""One gossip connection: the sans-IO `GossipConnection` driven over a `SecureStream`.

Theory of operation
-------------------
Two tasks share the connection:

- the reader turns the peer's frames into actions: its clock (HELLO, then
  CLOCK changes) goes into its `PeerState`, and for every feed where it is
  ahead of us and not yet asked for we send WANT (from our highest seq); a
  WANT starts a subscription; MESSAGES go through the store's full
  validation in one batch, then we grant that many credits back, so the
  window refills only as fast as we store;
- the writer wakes whenever the store changes or the reader pokes it. It
  sends CLOCK for feeds that grew since it last told the peer, then sends
  what the subscriptions lack in our processed order (causal, so the peer's
  spacetime sees few references to messages still to come; see
  `storage.replication`), in batches, as far as the credit allows.
  After catching up, a subscription stays open, so new messages are pushed
  live.

A message the store rejects for any reason but `forked-feed` or
`chain-mismatch` (which an honest peer holding the other branch of a fork
can cause) means the peer is broken or hostile: `PeerMisbehaved` ends the
connection with the reason, and only this connection.
"""

from __future__ import annotations

import structlog
import trio

from node.failures import leaves, only
from node.peers import PeerState
from node.service import StoreService
from node.transport import SecureStream
from protocol.errors import Reason, RemoteProtocolError
from protocol.gossip import (
    GossipConnection,
    PeerClock,
    PeerCredit,
    PeerHello,
    PeerMessages,
    PeerWants,
)
from storage.ingest import Outcome
from storage.replication import next_batch, start_of

log = structlog.get_logger("gossip")

WINDOW = 512  # messages a peer may send before we grant more
BATCH = 128  # messages per MESSAGES frame at most
_FORGIVEN = {Reason.FORKED_FEED, Reason.CHAIN_MISMATCH}


class PeerMisbehaved(RemoteProtocolError):
    """The peer sent something invalid; the connection is dropped."""


class GossipSession:
    def __init__(
        self,
        secure: SecureStream,
        service: StoreService,
        peer: PeerState,
        *,
        window: int = WINDOW,
        batch: int = BATCH,
    ) -> None:
        self.secure = secure
        self.service = service
        self.peer = peer
        self.batch = batch
        self.connection = GossipConnection(window)
        self.advertised: dict[bytes, int] = {}  # our clock as the peer last heard it
        self.asked: set[bytes] = set()  # feeds we sent WANT for
        self.subscriptions: dict[bytes, int] = {}  # feed -> last seq sent
        self.resume: int | None = None  # where the walk of our processed order goes on
        self._poke = trio.Event()

    async def run(self) -> None:
        self.advertised = dict(self.service.clock)
        await self.secure.send_all(self.connection.hello(self.advertised))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._read)
            await self._write()

    def poke(self) -> None:
        self._poke.set()

    # -- reading -------------------------------------------------------------

    async def _read(self) -> None:
        while True:
            data = await self.secure.receive_some()
            if not data:
                raise _PeerLeft
            for event in self.connection.receive_data(data):
                await self._handle(event)

    async def _handle(self, event) -> None:
        if isinstance(event, PeerHello | PeerClock):
            changes = event.clock if isinstance(event, PeerHello) else event.changes
            self.peer.clock.update(changes)
            ours = self.service.clock
            wants = {
                feed: ours.get(feed, 0)
                for feed, seq in changes.items()
                if seq > ours.get(feed, 0) and feed not in self.asked
            }
            if wants:
                self.asked.update(wants)
                await self.secure.send_all(self.connection.want(wants))
        elif isinstance(event, PeerWants):
            for feed, after in event.wants.items():
                self.subscriptions[feed] = after
            self.resume = None  # the new subscriptions may start earlier in the walk
            self.poke()
        elif isinstance(event, PeerCredit):
            self.poke()
        elif isinstance(event, PeerMessages):
            await self._store(event.raws)

    async def _store(self, raws: list[bytes]) -> None:
        if not raws:
            return
        results = await self.service.ingest(raws)
        for result in results:
            if result.outcome is Outcome.REJECTED and result.reason not in _FORGIVEN:
                raise PeerMisbehaved(f"sent an invalid message: {result.reason}: {result.detail}")
        self.peer.received += sum(result.outcome is Outcome.ACCEPTED for result in results)
        await self.secure.send_all(self.connection.grant(len(raws)))

    # -- writing -------------------------------------------------------------

    async def _write(self) -> None:
        while True:
            self._poke = trio.Event()
            seen = self.service.version
            await self._send_clock_changes()
            await self._pump()
            await self._wait_for_work(seen, self._poke)

    async def _wait_for_work(self, seen: int, poke: trio.Event) -> None:
        """Until the store moves past version `seen` or the reader pokes us."""
        async with trio.open_nursery() as waiter:

            async def store_moved() -> None:
                await self.service.wait_changed(seen)
                waiter.cancel_scope.cancel()

            async def poked() -> None:
                await poke.wait()
                waiter.cancel_scope.cancel()

            waiter.start_soon(store_moved)
            waiter.start_soon(poked)

    async def _send_clock_changes(self) -> None:
        changes = {
            feed: seq
            for feed, seq in self.service.clock.items()
            if seq > self.advertised.get(feed, 0) and seq > self.peer.clock.get(feed, 0)
        }
        if changes:
            self.advertised.update(changes)
            await self.secure.send_all(self.connection.clock(changes))

    async def _pump(self) -> None:
        """Send what subscriptions lack, in our processed (causal) order, while credit lasts."""
        store = self.service.store
        while self.connection.send_credit > 0 and any(
            self.service.clock.get(feed, 0) > sent for feed, sent in self.subscriptions.items()
        ):
            if self.resume is None:
                self.resume = await self.service.read(start_of, store, dict(self.subscriptions))
            batch = await self.service.read(
                next_batch,
                store,
                dict(self.subscriptions),
                self.resume,
                min(self.connection.send_credit, self.batch),
                self.connection.max_frame - 1024,
            )
            self.resume = batch.resume
            if not batch.raws:
                return
            await self.secure.send_all(self.connection.messages(batch.raws))
            self.subscriptions.update(batch.sent)
            self.peer.sent += len(batch.raws)


class _PeerLeft(Exception):
    """The peer said goodbye."""


_LOST = (trio.BrokenResourceError, trio.ClosedResourceError, OSError)


async def gossip(
    secure: SecureStream, service: StoreService, peer: PeerState, **options
) -> str | None:
    """Run one connection to its end; returns why it ended (None for a clean goodbye)."""
    session = GossipSession(secure, service, peer, **options)
    try:
        await session.run()
    except Exception as error:  # sorted below; anything unexpected is re-raised
        if not only(error, (_PeerLeft, RemoteProtocolError, *_LOST)):
            raise
        broken = [leaf for leaf in leaves(error) if isinstance(leaf, RemoteProtocolError)]
        if broken:
            reason = "; ".join(str(leaf) for leaf in broken)
            log.warning("peer dropped", peer=secure.peer.hex()[:16], reason=reason)
            return reason
        lost = [leaf for leaf in leaves(error) if isinstance(leaf, _LOST)]
        return f"connection lost: {lost[0]}" if lost else None
    finally:
        with trio.CancelScope(shield=True):
            await secure.aclose()
    return None
