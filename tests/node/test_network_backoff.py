"""The dialer's backoff, on trio's autojump clock, against real sockets on 127.0.0.1.

Nothing listens on the port dialed, so every attempt is refused by the
kernel at once, in no virtual time; the gaps between attempts are then
exactly the dialer's waits. The `Network` is given a seeded RNG that notes
the virtual time of each jitter it draws (the dialer draws one as each
attempt ends), so the test knows when each attempt ended and what jitter it
got: the waits must be 0.25 s doubling up to 30 s, times that jitter, which
must lie within ±20 %.

A steady connection is a real one: a listener opened on the same port takes
one dial, does the real handshake, holds the connection for a while, then
closes itself and its listener (later dials are refused again). The client
side runs the real gossip on a real store, whose worker threads let the
autojump clock jump to the next deadline, so these tests set no
`trio.fail_after` (it would fire while a store call runs); a real-time
`pytest.mark.timeout` bounds each instead.
"""

from __future__ import annotations

import random
import socket

import pytest
import trio

from tanglenode.node.gossip.network import FIRST_RETRY, LAST_RETRY, STEADY_SECONDS, Network
from tanglenode.node.net.peers import PeerRegistry
from tanglenode.node.net.transport import server_handshake
from tanglenode.node.service.store_service import StoreService
from tanglenode.storage.store import FeedStore
from tests.factories import keypair

pytestmark = pytest.mark.timeout(20)

NETWORK_KEY = bytes(range(32))
SEED = 12


class RecordingRandom(random.Random):
    """A seeded RNG that notes when (virtual time) and what it drew with `uniform`."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.draws: list[tuple[float, float]] = []
        self._drawn = trio.Event()

    def uniform(self, a: float, b: float) -> float:
        value = super().uniform(a, b)
        self.draws.append((trio.current_time(), value))
        self._drawn.set()
        self._drawn = trio.Event()
        return value

    async def until(self, count: int) -> None:
        """Until `count` jitters were drawn, that is `count` attempts ended."""
        while len(self.draws) < count:
            await self._drawn.wait()


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (it was free a moment ago)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def dialer(tmp_path):
    """A `Network` on a real store, its registry, and the `RecordingRandom` it jitters with."""
    me = keypair("backoff-dialer")
    store = FeedStore(tmp_path / "dialer", keypair=me, map_size=2**24)
    rng = RecordingRandom(SEED)
    registry = PeerRegistry()
    network = Network(NETWORK_KEY, me, StoreService(store), registry, rng=rng)
    yield network, registry, rng
    store.close()


def expected_waits(count: int, first: float = FIRST_RETRY) -> list[float]:
    waits = [first]
    while len(waits) < count:
        waits.append(min(waits[-1] * 2, LAST_RETRY))
    return waits


def check_gaps(draws: list[tuple[float, float]], waits: list[float]) -> None:
    """Each gap between attempts is its wait times the jitter drawn as the first ended."""
    for (ended, jitter), (next_ended, _), wait in zip(draws, draws[1:], waits, strict=False):
        gap = next_ended - ended
        assert 0.8 <= jitter <= 1.2
        assert gap == pytest.approx(wait * jitter)


async def test_redial_waits_double_from_a_quarter_second_to_thirty_with_jitter(
    dialer, autojump_clock
):
    network, registry, rng = dialer
    target = keypair("backoff-target").public
    address = f"127.0.0.1:{closed_port()}"
    async with trio.open_nursery() as nursery:
        began = trio.current_time()
        nursery.start_soon(network.dial_forever, address, target)
        await rng.until(12)
        nursery.cancel_scope.cancel()
    waits = expected_waits(11)
    assert waits == [0.25, 0.5, 1, 2, 4, 8, 16, 30, 30, 30, 30]
    assert rng.draws[0][0] == began  # the first dial at once, refused at once
    check_gaps(rng.draws, waits)
    # The jitter came from the injected RNG alone: the same seed draws the same numbers.
    again = random.Random(SEED)
    assert [jitter for _time, jitter in rng.draws] == [again.uniform(0.8, 1.2) for _ in range(12)]
    error = registry.peers[target].last_error or ""
    assert error.startswith(f"dial {address}:")


async def hold_one_connection(
    listener: trio.SocketListener, server, seconds: float, task_status=trio.TASK_STATUS_IGNORED
) -> None:
    """Take one dial, handshake as `server`, hold it `seconds`, then close it and the listener."""
    task_status.started()
    stream = await listener.accept()
    await listener.aclose()  # the next dials are refused again
    secure = await server_handshake(stream, NETWORK_KEY, server)
    await trio.sleep(seconds)
    await secure.aclose()


@pytest.mark.parametrize(
    ("held", "resets"),
    [(STEADY_SECONDS + 2, True), (STEADY_SECONDS / 2, False)],
    ids=["steady-resets", "brief-does-not"],
)
async def test_the_wait_starts_again_after_a_steady_connection_only(
    dialer, autojump_clock, held, resets
):
    network, registry, rng = dialer
    server = keypair("backoff-server")
    port = closed_port()
    address = f"127.0.0.1:{port}"
    failures = 6  # waits 0.25 .. 8 s: the dial after the sixth failure connects
    async with trio.open_nursery() as nursery:
        nursery.start_soon(network.dial_forever, address, server.public)
        await rng.until(failures)
        (listener,) = await trio.open_tcp_listeners(port, host="127.0.0.1")
        await nursery.start(hold_one_connection, listener, server, held)
        await rng.until(failures + 4)
        nursery.cancel_scope.cancel()
    before, after = rng.draws[:failures], rng.draws[failures:]
    check_gaps(before, expected_waits(failures))
    (connected_at, _), (left_at, _) = before[-1], after[0]
    peer = registry.peers[server.public]
    assert peer.connections == 0 and not peer.connected
    waited = before[-1][1] * 8.0
    assert left_at - connected_at == pytest.approx(waited + held)  # the connection's life
    if resets:
        check_gaps(after, expected_waits(4))  # from 0.25 s again
    else:
        check_gaps(after, expected_waits(4, first=16))  # on from where it was
