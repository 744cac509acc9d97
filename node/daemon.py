"""`tangled run`: the node as one Trio process.

Services, each started with `nursery.start` so that READY=1 goes out only
once all of them are up: the peer listener (TCP), the IPC listener (Unix
socket), the web view when `web.listen` is set (node/web/app.py, loaded only then),
one dialer per configured peer, and the systemd watchdog. SIGTERM
or SIGINT stops it: first every peer connection ends with a goodbye
(`Network.say_goodbye`, each goodbye bounded by `transport.GOODBYE_SECONDS`
even for a peer that does not read, all of it under `SHUTDOWN_SECONDS`),
then the nursery is cancelled, the socket file removed and the store
closed. Only a store write already under way can make it longer: worker
threads are never abandoned mid-transaction, so it finishes first. The data
directory's lock (storage/feeds/datalock.py) is taken before anything else and
held until the end, so a second node on the same data refuses to start
rather than take over its socket.
"""

from __future__ import annotations

import contextlib
import signal
from pathlib import Path

import structlog
import trio

from tanglenode.config.settings import Settings
from tanglenode.node.failures import leaves
from tanglenode.node.gossip.network import Network
from tanglenode.node.invites.door import InviteDoor
from tanglenode.node.ipc.area import Area
from tanglenode.node.ipc.peers import RunningNode
from tanglenode.node.ipc.peers import status as node_status
from tanglenode.node.ipc.queue_budget import QueueBudget
from tanglenode.node.ipc.server import IpcServer
from tanglenode.node.net.descriptors import Descriptors, raise_soft_limit
from tanglenode.node.net.peers import PeerRegistry
from tanglenode.node.sdnotify import Notifier
from tanglenode.node.service.store_service import StoreService
from tanglenode.node.web.token import load_or_create_token
from tanglenode.protocol.address import parse_address
from tanglenode.protocol.errors import TanglenodeError
from tanglenode.protocol.identity import Keypair, feed_text, parse_feed
from tanglenode.protocol.ipc import StatusRequest
from tanglenode.storage.engine.command_log import LogRetention
from tanglenode.storage.feeds.datalock import DataDirLock
from tanglenode.storage.feeds.ownhead import behind
from tanglenode.storage.store import FeedStore

log = structlog.get_logger("node")

SHUTDOWN_SECONDS = 10.0


async def _stop_on_signal(
    cancel_scope: trio.CancelScope, notifier: Notifier, network: Network
) -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            log.info("stopping", signal=signal.Signals(signum).name)
            notifier.send("STOPPING=1", "STATUS=stopping")
            await stop(cancel_scope, network)
            return


async def stop(cancel_scope: trio.CancelScope, network: Network) -> None:
    """The graceful part first, under the deadline: every peer gets its goodbye; then the
    rest is cancelled (the IPC listener removes its socket as it ends)."""
    with trio.move_on_after(SHUTDOWN_SECONDS):
        await network.say_goodbye()
    cancel_scope.cancel()


class StartupFailed(TanglenodeError):
    """The node cannot start: an address in use, a socket path it cannot bind, ..."""


def _cannot(what: str, error: BaseException) -> BaseException:
    """A one-line `StartupFailed` for an OS error; anything else is left as it was."""
    failures = leaves(error)
    errors = [failure for failure in failures if isinstance(failure, OSError)]
    if len(errors) != len(failures):
        return error
    reason = "; ".join(str(failure.strerror or failure) for failure in errors)
    return StartupFailed(f"cannot {what}: {reason}")


@contextlib.contextmanager
def _startup_failures():
    """Let a startup failure leave the nursery as itself, not inside an exception group."""
    try:
        yield
    except BaseExceptionGroup as group:
        failures = leaves(group)
        if len(failures) == 1 and isinstance(failures[0], StartupFailed):
            raise failures[0] from None
        raise


async def _start_web(
    nursery: trio.Nursery,
    settings: Settings,
    token: str,
    area: Area,
    ipc: IpcServer,
) -> str:
    """The web view (node/web/, loaded only now) in `nursery`; its base URL, no token."""
    from tanglenode.node.web.app import serve_web
    from tanglenode.node.web.events import Streams
    from tanglenode.node.web.http import WebContext

    listen = settings.web.listen
    assert listen is not None

    async def status(digests: bool) -> dict:
        found = await node_status(area, StatusRequest(digests=digests))
        return found | {"subscribers": ipc.streams_open}

    web = WebContext(
        status,
        token,
        service=ipc.service,
        keypair=ipc.keypair,
        data_dir=settings.data_dir,
        streams=Streams(queues=ipc.queues),
        area=ipc.area,
    )
    try:
        return await nursery.start(serve_web, listen, web, settings.web.hosts)
    except (OSError, BaseExceptionGroup) as error:
        raise _cannot(f"serve the web view on {listen}", error) from None


async def run_node(
    settings: Settings,
    keypair: Keypair,
    notifier: Notifier | None = None,
    *,
    config_file: Path | None = None,
) -> None:
    """Run until cancelled; refuses at once (DataDirInUse) if another process holds the data dir.

    `config_file` is where `settings` were read from: `connect` with `save` adds peers there."""
    with DataDirLock(settings.data_dir, "run"):
        token = None  # made or read before anything starts: one others may read stops it
        if settings.web.listen is not None:
            token = load_or_create_token(settings.web_token_path)
        await _run_node(settings, keypair, notifier or Notifier(), token, config_file)


def _warn_if_own_feed_behind(store: FeedStore, me: bytes) -> None:
    recorded = behind(store.own_head_path, me, store.feeds.frontier().get(me, 0))
    if recorded is not None:
        log.warning(
            "own feed behind: publishing refused until peers (or `tangled import`) restore it",
            stored_seq=store.feeds.frontier().get(me, 0),
            published_seq=recorded.seq,
            head_file=str(store.own_head_path),
        )


def _warn_if_views_unbuilt(store: FeedStore) -> None:
    """An optional view turned on and not built is not kept until `tangled reindex` builds it."""
    state = store.ctx.views
    for name in sorted(state.wanted - state.kept):
        log.warning("view not built", view=name, why=state.why_off(state.optional(name)))


async def _run_node(
    settings: Settings,
    keypair: Keypair,
    notifier: Notifier,
    web_token: str | None,
    config_file: Path | None,
) -> None:
    store = FeedStore(
        settings.store_path,
        keypair=keypair,
        limits=settings.limits.to_protocol(),
        map_size=settings.storage.map_size,
        views=settings.views.wanted(),
        retention=LogRetention.keeping(settings.timelines.keep_commands),
    )
    try:
        _warn_if_own_feed_behind(store, keypair.public)
        _warn_if_views_unbuilt(store)
        service = StoreService(store, hops=settings.replication.scope_hops())
        service.verifier.processes &= settings.gossip.verify_in_process
        registry = PeerRegistry()
        descriptors = Descriptors.shares(
            raise_soft_limit(),
            settings.gossip.max_inbound,
            settings.gossip.max_inbound_per_address,
        )
        network = Network(
            settings.network_key_bytes,
            keypair,
            service,
            registry,
            max_peer_feeds=settings.gossip.max_peer_feeds,
            max_inbound=descriptors.inbound,
            max_inbound_per_address=descriptors.per_address,
            door=InviteDoor(service, follow_all=settings.replication.follow_invited),
        )
        host, port = parse_address(settings.listen, lowest_port=0)
        with trio.CancelScope() as running, _startup_failures():
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_stop_on_signal, running, notifier, network)
                nursery.start_soon(service.verifier.run)  # verifying on a second core
                await nursery.start(service.keep_scope)  # what we carry, before any peer asks
                try:
                    bound_host, bound_port = await nursery.start(network.serve, host, port)
                except (OSError, BaseExceptionGroup) as error:
                    raise _cannot(f"listen on {settings.listen}", error) from None
                listen = f"{bound_host}:{bound_port}"

                def tell_status() -> None:
                    connected = sum(peer.connected for peer in registry.peers.values())
                    notifier.send(f"STATUS=listening on {listen}; {connected} peers connected")

                network.on_change = tell_status
                status_extra = {"listen": listen}  # shared: `web` joins it once bound
                ipc = IpcServer(
                    service,
                    registry,
                    network,
                    keypair,
                    status_extra=status_extra,
                    config_file=config_file,
                    max_clients=descriptors.ipc,
                    queues=QueueBudget(
                        settings.subscribers.queue_bytes, settings.subscribers.stream_bytes
                    ),
                )
                if web_token is not None:
                    node = RunningNode(
                        registry, network, dict(status_extra), config_file=config_file
                    )
                    # `status` without the web's URL; a write sent twice, through the IPC
                    # or the page, is done once
                    area = Area(service, keypair, node, ipc.area.once)
                    status_extra["web"] = await _start_web(nursery, settings, web_token, area, ipc)
                try:
                    socket_path = await nursery.start(ipc.serve, settings.ipc_socket_path)
                except (OSError, BaseExceptionGroup) as error:
                    raise _cannot(f"serve IPC on {settings.ipc_socket_path}", error) from None
                for peer in settings.peers:  # `tangled disconnect` may stop any of them
                    network.dial(nursery, peer.address, parse_feed(peer.key))
                nursery.start_soon(notifier.watchdog)
                notifier.send(
                    "READY=1",
                    f"STATUS=listening on {listen}; {len(settings.peers)} peers configured",
                )
                log.info(
                    "node ready",
                    feed=feed_text(keypair.public),
                    listen=listen,
                    ipc=str(socket_path),
                    web=status_extra.get("web"),
                    peers=len(settings.peers),
                    descriptors=descriptors.limit,
                    max_inbound=descriptors.inbound,
                    max_inbound_per_address=descriptors.per_address,
                    max_ipc_clients=descriptors.ipc,
                )
    finally:
        store.close()
        log.info("stopped")
