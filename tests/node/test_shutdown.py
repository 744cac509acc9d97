"""Shutdown is bounded: a peer that never reads cannot hold the node past its deadline.

The peer's end is `trio.testing.lockstep_stream_pair`, whose `send_all`
returns only once the other end has read everything: a peer that never
reads blocks every send for good, as a full TCP window would. The clock is
`autojump_clock`, so the deadlines cost no real time.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from tanglenode.node.daemon import SHUTDOWN_SECONDS, stop
from tanglenode.node.gossip.network import Network
from tanglenode.node.net.peers import PeerRegistry
from tanglenode.node.net.transport import GOODBYE_SECONDS, SecureStream
from tanglenode.node.service.store_service import StoreService
from tanglenode.protocol.boxstream import BoxStreamReader
from tanglenode.protocol.shs import Session
from tanglenode.storage.store import FeedStore
from tests.factories import keypair

pytestmark = pytest.mark.timeout(20)


def secure_to_a_peer_that_never_reads() -> tuple[SecureStream, trio.abc.Stream]:
    ours, theirs = trio.testing.lockstep_stream_pair()
    peer = keypair("shutdown-peer").public
    session = Session(peer, bytes(32), bytes(24), bytes(range(32)), bytes(range(24)))
    return SecureStream(ours, session, b""), theirs


async def test_close_gives_up_on_a_blocked_send_after_the_goodbye_deadline(autojump_clock):
    secure, _theirs = secure_to_a_peer_that_never_reads()
    failed: list[BaseException] = []

    async def stuck_writer() -> None:  # holds the send lock, blocked for good
        try:
            await secure.send_all(b"never read")
        except trio.ClosedResourceError as error:
            failed.append(error)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(stuck_writer)
        await trio.testing.wait_all_tasks_blocked()
        began = trio.current_time()
        await secure.aclose()
        assert trio.current_time() - began == pytest.approx(GOODBYE_SECONDS)
    assert failed  # closing the stream freed the blocked send


async def test_stop_ends_a_connection_to_a_peer_that_never_reads_within_the_deadline(
    tmp_path, autojump_clock
):
    me = keypair("shutdown-node")
    with FeedStore(tmp_path / "node", keypair=me, map_size=2**24) as store:
        store.writes.publish({"something": "to send"})
        network = Network(bytes(32), me, StoreService(store), PeerRegistry())
        secure, _theirs = secure_to_a_peer_that_never_reads()
        ended = trio.Event()

        async def connection() -> None:
            await network._converse(secure, "in", None)
            ended.set()

        with trio.CancelScope() as running:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(connection)
                await trio.testing.wait_all_tasks_blocked()  # its HELLO is stuck
                assert not ended.is_set()
                began = trio.current_time()
                await stop(running, network)
                stopped_after = trio.current_time() - began
                assert ended.is_set() and running.cancel_called
        assert stopped_after <= GOODBYE_SECONDS < SHUTDOWN_SECONDS
        assert network.closing


async def test_a_send_cancelled_as_it_starts_leaves_the_goodbye_readable():
    """A session dropped while another of its tasks was taking the send lock: the cancelled
    send costs no nonce, so the peer still reads our goodbye (not a frame that does not
    open). Trio runs a batch of tasks in either order, so the race is run 20 times: the
    cancellation lands between the lock and the write in about half of them."""
    for _ in range(20):
        ours, theirs = trio.testing.memory_stream_pair()
        session = Session(bytes(32), bytes(32), bytes(24), bytes(range(32)), bytes(range(24)))
        secure = SecureStream(ours, session, b"")
        scope = trio.CancelScope()

        async def sender(secure=secure, scope=scope) -> None:
            with scope:
                await secure.send_all(b"cancelled on its way")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(sender)
            await trio.lowlevel.checkpoint()  # the sender takes the lock, yields once
            scope.cancel()
        await secure.aclose()
        reader = BoxStreamReader(bytes(32), bytes(24))
        while not reader.said_goodbye:
            reader.receive_data(await theirs.receive_some())
            while reader.next_chunk() is not None:  # a frame that left whole, then goodbye
                pass
