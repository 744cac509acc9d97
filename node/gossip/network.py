"""Peer connections: the TCP listener and one dialer per known peer, with backoff.

Both ends run the same gossip once the handshake is done; only who dials
differs. A dialer reconnects after any failure, waiting 0.25 s, doubling up
to 30 s (with jitter so restarted nodes do not dial in lockstep), and
starts again from the shortest wait after a connection that lasted. The
jitter comes from the network's own `random.Random` (`rng`), which a test
can seed, never from the global one.

Dialers are kept by peer key (`dial`): the configured peers' and those
`connect` adds, one each, a second dial of a key replacing the first.
`disconnect(key)` stops a peer's dialer and ends its connections, each
with its goodbye; a peer that dials us may come back (we do not refuse it).

Inbound connections are counted from the moment one is accepted until it
ends, its handshake (under its deadline) included: past `max_inbound` in
all, or `max_inbound_per_address` from one remote address, a connection is
closed as soon as it is accepted, so a flood of idle connections holds no
more descriptors than its share (node/net/descriptors.py).

With an invite door (node/invites/door.py), an accepted connection's first
frame is read before gossip starts: a redemption of one of our invites is
answered there and closed; anything else is handed back to gossip unread.

Logs name a peer by its feed id, `@…`, as the command line does.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import structlog
import trio

from tanglenode.node.failures import leaves
from tanglenode.node.gossip.session import gossip
from tanglenode.node.invites.door import InviteDoor, first_frame
from tanglenode.node.net.peers import PeerRegistry
from tanglenode.node.net.transport import (
    BoxStreamError,
    HandshakeFailed,
    client_handshake,
    server_handshake,
)
from tanglenode.node.service.store_service import StoreService
from tanglenode.protocol.address import BadAddress, parse_address
from tanglenode.protocol.gossip import DEFAULT_MAX_FEEDS
from tanglenode.protocol.identity import Keypair, feed_text
from tanglenode.protocol.invite import is_redemption
from tanglenode.storage.errors import StoreFull

log = structlog.get_logger("network")

FIRST_RETRY = 0.25
LAST_RETRY = 30.0
CONNECT_SECONDS = 5.0
STEADY_SECONDS = 10.0
MAX_DIALERS = 1000
DISCONNECT_SECONDS = 5.0  # a goodbye takes at most transport.GOODBYE_SECONDS


class TooManyDialers(Exception):
    """`dial` of a new key while `MAX_DIALERS` keys are dialed already."""


@dataclass
class Network:
    """What every connection needs."""

    network_key: bytes
    keypair: Keypair
    service: StoreService
    registry: PeerRegistry
    handshake_seconds: float = 10.0
    max_peer_feeds: int = DEFAULT_MAX_FEEDS
    max_inbound: int = 512  # connections accepted at once, handshakes included
    max_inbound_per_address: int = 32  # of them, from one remote address
    on_change: Callable[[], None] = lambda: None  # told when a peer connects or leaves
    door: InviteDoor | None = None  # answers redemptions of our invites (node/invites/door.py)
    rng: random.Random = field(default_factory=random.Random)  # the dialers' retry jitter
    closing: bool = field(default=False, init=False)  # set by `say_goodbye`: no new peers
    _sessions: dict[trio.CancelScope, bytes] = field(default_factory=dict, init=False, repr=False)
    _dialing: dict[bytes, trio.CancelScope] = field(default_factory=dict, init=False, repr=False)
    _ended: trio.Event = field(default_factory=trio.Event, init=False, repr=False)
    _inbound: Counter[str] = field(default_factory=Counter, init=False, repr=False)
    refused_inbound: int = field(default=0, init=False)  # closed at once: over a cap

    async def _converse(self, secure, direction: str, address: str | None) -> None:
        if self.closing:
            await secure.aclose()
            return
        peer = self.registry.connected(secure.peer, direction, address)
        log.info("peer connected", peer=feed_text(secure.peer), direction=direction)
        self.on_change()
        reason = None
        try:
            with trio.CancelScope() as session:  # `say_goodbye` and `disconnect` cancel it
                self._sessions[session] = secure.peer
                reason = await gossip(
                    secure, self.service, peer, max_peer_feeds=self.max_peer_feeds
                )
        except Exception as error:
            full = [leaf for leaf in leaves(error) if isinstance(leaf, StoreFull)]
            if full:  # a state, not a bug: one line; the session resumes when there is room
                reason = f"store-full: {full[0]}"
                log.warning("peer dropped", peer=feed_text(secure.peer), reason=reason)
            else:  # a bug of ours: drop this peer, keep serving the others
                log.exception("peer connection failed", peer=feed_text(secure.peer))
                reason = f"internal error: {error!r}"
        finally:
            if reason is None and session.cancel_called and not self.closing:
                reason = "closed here (tangled disconnect)"
            self._sessions.pop(session, None)
            self._ended.set()
            self._ended = trio.Event()
            self.registry.disconnected(secure.peer, reason)
            log.info("peer disconnected", peer=feed_text(secure.peer), reason=reason)
            self.on_change()

    async def say_goodbye(self) -> None:
        """Take no new peers and end every connection, each with its goodbye.

        Returns once all have ended; each ends within `transport.GOODBYE_SECONDS`
        of being cancelled, unless a store write it started is still running.
        """
        self.closing = True
        for session in list(self._sessions):
            session.cancel()
        while self._sessions:
            await self._ended.wait()

    async def serve(self, host: str, port: int, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Accept peers; reports the bound (host, port) when listening."""
        listeners = await trio.open_tcp_listeners(port, host=host)
        task_status.started(listeners[0].socket.getsockname()[:2])
        await trio.serve_listeners(self._accept, listeners)

    async def _accept(self, stream: trio.SocketStream) -> None:
        try:
            host, port = stream.socket.getpeername()[:2]
        except OSError:  # gone already
            await stream.aclose()
            return
        if (
            self._inbound.total() >= self.max_inbound
            or self._inbound[host] >= self.max_inbound_per_address
        ):  # a descriptor held for nothing would be one the store or a client lacks
            self.refused_inbound += 1
            await trio.aclose_forcefully(stream)
            return
        self._inbound[host] += 1
        try:
            await self._accepted(stream, f"{host}:{port}")
        finally:
            self._inbound[host] -= 1
            if not self._inbound[host]:
                del self._inbound[host]

    async def _accepted(self, stream: trio.SocketStream, address: str) -> None:
        try:
            secure = await server_handshake(
                stream, self.network_key, self.keypair, seconds=self.handshake_seconds
            )
        except HandshakeFailed as failure:
            log.info("handshake refused", address=address, reason=str(failure))
            await stream.aclose()
            return
        if self.door is not None and not await self._gossip_first(secure, address):
            return
        await self._converse(secure, "in", address)

    async def _gossip_first(self, secure, address: str) -> bool:
        """Read the first frame: a redemption goes to the door (False: answered and closed),
        anything else back to the stream for gossip (True)."""
        assert self.door is not None
        try:
            first = await first_frame(secure, self.handshake_seconds)
        except (trio.TooSlowError, trio.BrokenResourceError, BoxStreamError):
            await secure.aclose()
            return False
        if first is None:
            await secure.aclose()
            return False
        frame, read = first
        if is_redemption(frame):
            await self.door.answer(secure, frame, address.rpartition(":")[0])
            return False
        secure.unread(read)
        return True

    def dial(self, nursery: trio.Nursery, address: str, key: bytes) -> None:
        """Keep a connection to `key` at `address` (`dial_forever`, in `nursery`), replacing
        any dialer of that key; `TooManyDialers` past `MAX_DIALERS` keys."""
        if key not in self._dialing and len(self._dialing) >= MAX_DIALERS:
            raise TooManyDialers(f"already dialing {MAX_DIALERS} peers")
        if key in self._dialing:
            self._dialing.pop(key).cancel()
        scope = trio.CancelScope()
        self._dialing[key] = scope
        self.registry.dialing(key, address)  # shown (dialed) from now on
        nursery.start_soon(self._dial, scope, address, key)

    async def _dial(self, scope: trio.CancelScope, address: str, key: bytes) -> None:
        try:
            with scope:
                await self.dial_forever(address, key)
        finally:
            if self._dialing.get(key) is scope:
                del self._dialing[key]

    async def disconnect(self, key: bytes) -> tuple[bool, int]:
        """Stop dialing `key` and end its connections, each with its goodbye; returns once
        they ended (within `DISCONNECT_SECONDS`): whether it was dialed, and how many."""
        dialer = self._dialing.pop(key, None)
        if dialer is not None:
            dialer.cancel()
            self.registry.undialed(key)
        sessions = [scope for scope, peer in self._sessions.items() if peer == key]
        for session in sessions:
            session.cancel()
        with trio.move_on_after(DISCONNECT_SECONDS):
            while any(session in self._sessions for session in sessions):
                await self._ended.wait()
        return dialer is not None, len(sessions)

    async def dial_forever(self, address: str, key: bytes) -> None:
        """Keep a connection to the peer at `address` whose public key is `key`.

        Never raises (short of cancellation), and stops once the network is
        `closing`: every failure, expected or not, a
        bad address included, becomes the peer's `last_error` and the next dial
        waits longer, up to `LAST_RETRY`.
        """
        wait = FIRST_RETRY
        peer = self.registry.dialing(key, address)
        while not self.closing:
            began = trio.current_time()
            try:
                await self._dial_once(address, key)
            except (OSError, trio.TooSlowError, HandshakeFailed, BadAddress) as failure:
                peer.failed(f"dial {address}: {failure}"[:300])
            except Exception as failure:  # a bug of ours, or a resolver's surprise: retry
                log.warning("dial failed", address=address, error=repr(failure)[:300])
                peer.failed(f"dial {address}: {failure!r}"[:300])
            else:
                if trio.current_time() - began > STEADY_SECONDS:
                    wait = FIRST_RETRY
            await trio.sleep(wait * self.rng.uniform(0.8, 1.2))
            wait = min(wait * 2, LAST_RETRY)

    async def _dial_once(self, address: str, key: bytes) -> None:
        host, port = parse_address(address)
        with trio.fail_after(CONNECT_SECONDS):
            stream = await trio.open_tcp_stream(host, port)
        try:
            secure = await client_handshake(
                stream, self.network_key, self.keypair, key, seconds=self.handshake_seconds
            )
        except BaseException:
            await stream.aclose()
            raise
        await self._converse(secure, "out", address)
