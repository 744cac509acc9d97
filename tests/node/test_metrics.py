"""The node's counters (node/service/counters.py) and the `/metrics` collector over them,
in process.

A real store in a tmp dir behind a real `StoreService`: the counts come from
what the store did (accepted, duplicate, refused, a fork), the latencies
from a real inbox and a real group commit, the families from prometheus-
client's own parser. docs/METRICS.md is checked against the registry.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from contextlib import aclosing
from pathlib import Path

import pytest
import trio
import trio.testing
from prometheus_client.parser import text_string_to_metric_families

from tanglenode.node.gossip.inbox import Inbox, Kind
from tanglenode.node.gossip.network import Network
from tanglenode.node.ipc.client import NodeError, connect
from tanglenode.node.ipc.server import IpcServer
from tanglenode.node.net.peers import PeerRegistry, PeerState
from tanglenode.node.service.counters import (
    LATENCY_BOUNDS,
    MAX_PEERS_LABELLED,
    OTHER,
    Histogram,
    NodeCounters,
)
from tanglenode.node.service.store_service import StoreService
from tanglenode.node.web.events import Streams
from tanglenode.node.web.http import WebContext
from tanglenode.node.web.metrics import Metrics
from tanglenode.protocol.errors import Reason
from tanglenode.protocol.identity import feed_text
from tanglenode.storage.feeds.ingest import Outcome
from tanglenode.storage.store import FeedStore
from tests.factories import Feed, break_signature, keypair
from tests.node.test_web import a_status

pytestmark = pytest.mark.timeout(60)
ROOT = Path(__file__).resolve().parents[2]
MAP_SIZE = 2**26
ME = keypair("metrics")
WAIT = 30
HELD = 0.2  # seconds a test holds the store's writer, so that a latency must include it


@pytest.fixture
def service(tmp_path):
    with FeedStore(tmp_path / "store", keypair=ME, map_size=MAP_SIZE) as store:
        yield StoreService(store)


async def scrape(service: StoreService | None) -> dict[str, tuple[str, dict]]:
    """/metrics as prometheus-client parses it: family -> (type, {(sample, labels): value})."""

    async def status(digests: bool) -> dict:
        return a_status(digests)

    web = WebContext(status, "token", service=service, streams=Streams() if service else None)
    text = (await Metrics(service, web.streams).render(web)).decode()
    return {
        family.name: (
            family.type,
            {(s.name, tuple(sorted(s.labels.items()))): s.value for s in family.samples},
        )
        for family in text_string_to_metric_families(text)
    }


# -- the counters --------------------------------------------------------------------


def test_a_histogram_counts_each_value_in_the_first_bucket_whose_bound_holds_it():
    histogram = Histogram((0.1, 1.0))
    for value in (0.0, 0.1, 0.10001, 1.0, 1.5, 99.0):
        histogram.observe(value)
    assert histogram.buckets == [2, 2, 2]  # bounds are inclusive (Prometheus' `le`)
    assert histogram.cumulative() == [(0.1, 2), (1.0, 4), (float("inf"), 6)]
    assert histogram.count == 6 and histogram.total == pytest.approx(101.70001)
    with pytest.raises(ValueError):
        Histogram((1.0, 0.5))
    assert len(Histogram().buckets) == len(LATENCY_BOUNDS) + 1


async def test_ingest_is_counted_by_outcome_and_reason(service):
    alice, mallory = Feed("alice"), Feed("mallory")
    first, second = alice.append("one"), alice.append("two")
    results = await service.ingest([first.raw, second.raw])
    assert [r.outcome for r in results] == [Outcome.ACCEPTED] * 2
    gap = Feed("gap")
    gap_one, _gap_two, gap_three = gap.append("1"), gap.append("2"), gap.append("3")
    forged = break_signature(mallory.append("forged").raw)
    results = await service.ingest([first.raw, forged, gap_one.raw, gap_three.raw])
    assert [r.outcome for r in results] == [
        Outcome.DUPLICATE,
        Outcome.REJECTED,
        Outcome.ACCEPTED,
        Outcome.REJECTED,
    ]
    branch = Feed(alice.keypair)
    branch.append("one")
    await service.ingest([branch.append("another two").raw])  # a fork at seq 2
    counters = service.counters
    assert counters.ingested == 3  # alice 1, 2 and gap 1
    assert counters.duplicates == 1
    assert counters.proofs == {"forked-feed": 1}  # a fork's is the only proof there is
    refused_now = {reason: n for reason, n in counters.rejected.items() if n}
    assert refused_now == {"bad-signature": 1, "missing-previous": 1}
    assert set(counters.rejected) == {str(reason) for reason in Reason}  # all, from zero


async def test_content_not_matching_its_header_is_counted_and_the_header_kept(service):
    alice = Feed("garbled")
    post = alice.append({"text": "as signed"})
    garbled = post.raw[:-1] + bytes([post.raw[-1] ^ 1])  # the content's last byte
    [result] = await service.ingest([garbled])
    assert result.outcome is Outcome.ACCEPTED and result.message.content_refused
    assert service.counters.contents_refused == 1 and service.counters.ingested == 1
    held = await service.read(lambda store: store.feeds.get(post.id))
    assert held.header == post.header and not held.has_content
    _kind, samples = (await scrape(service))["tanglenode_contents_refused"]
    assert samples[("tanglenode_contents_refused_total", ())] == 1


class GatedService(StoreService):
    """Stores a batch only once `gate` is open: a slow disk the test controls."""

    def __init__(self, store: FeedStore) -> None:
        super().__init__(store)
        self.gate, self.storing = trio.Event(), trio.Event()

    async def ingest_prepared(self, batch):
        self.storing.set()
        await self.gate.wait()
        return await super().ingest_prepared(batch)


async def test_ingest_latency_runs_from_the_frames_arrival_to_its_commit(tmp_path):
    stored: list[int] = []
    both = trio.Event()

    async def on_messages(raws, results) -> None:
        stored.append(len(results))
        if len(stored) == 2:
            both.set()

    async def on_evidence(raws) -> None:
        raise AssertionError("no evidence was sent")

    with FeedStore(tmp_path / "store", map_size=MAP_SIZE) as store:
        service = GatedService(store)
        inbox = Inbox(service, on_messages, on_evidence)
        with trio.fail_after(WAIT):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(inbox.run)
                began = time.perf_counter()
                await inbox.put(Kind.MESSAGES, [Feed("first").append("hello").raw])
                await service.storing.wait()  # the storer holds the first batch
                await inbox.put(Kind.MESSAGES, [Feed("second").append("hello").raw])
                await trio.sleep(HELD)  # real time passes: the second waits behind the first
                service.gate.set()
                await both.wait()
                elapsed = time.perf_counter() - began
                nursery.cancel_scope.cancel()
    latency = service.counters.ingest_latency
    assert stored == [1, 1] and service.counters.ingested == 2
    assert latency.count == 2 and latency.total <= 2 * elapsed
    # Each waited HELD at least: the first in the store, the second queued behind it.
    assert dict(latency.cumulative())[0.1] == 0


async def test_publish_latency_counts_each_publish_with_its_wait_refusals_included(service):
    holder = object()
    replies: list = []

    async def publish(content) -> None:
        try:
            replies.append(await service.publish(content, None))
        except Exception as error:
            replies.append(error)

    with trio.fail_after(WAIT):
        await service._writer.acquire_on_behalf_of(holder)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(publish, "hello")
            await trio.testing.wait_all_tasks_blocked()
            await trio.sleep(HELD)  # real time passes while the publish waits for the writer
            service._writer.release_on_behalf_of(holder)
        await publish("x" * 20_000)  # refused: too large
    assert replies[0].seq == 1 and "too-large" in str(replies[1])
    latency = service.counters.publish_latency
    assert latency.count == 2 and latency.total >= HELD
    assert dict(latency.cumulative())[0.1] == 1  # only the refusal was quick


def test_peers_past_the_bound_share_one_label_and_counters_only_grow():
    counters = NodeCounters(max_peers=2)
    a, b, c, d = (bytes([n]) * 32 for n in range(1, 5))
    counters.traffic(a).bytes_in += 10
    counters.traffic(b).bytes_in += 20
    counters.traffic(c).bytes_in += 30
    counters.traffic(d).bytes_in += 40
    counters.traffic(a).bytes_in += 1
    assert {counters.label(k): t.bytes_in for k, t in counters.peers.items()} == {
        feed_text(a): 11,
        feed_text(b): 20,
    }
    assert counters.label(c) == counters.label(d) == OTHER and counters.other.bytes_in == 70
    assert MAX_PEERS_LABELLED == NodeCounters().max_peers == 256


def test_a_peer_we_dial_keeps_its_label_when_strangers_took_every_slot():
    counters = NodeCounters(max_peers=2)
    for n in range(1, 4):  # keys anyone can make, connecting first
        with counters.session(PeerState(bytes([n]) * 32)):
            pass
    ours = PeerState(b"o" * 32, dialed=True)
    with counters.session(ours) as traffic:
        traffic.bytes_out += 5
    assert counters.label(ours.key) == feed_text(ours.key)
    assert counters.peers[ours.key].bytes_out == 5 and counters.other.bytes_out == 0


def test_lag_is_read_from_the_sessions_open_now_each_peer_once():
    counters = NodeCounters(max_peers=1)
    feed, other_feed, forked = b"f" * 32, b"g" * 32, b"x" * 32
    near, far, third = PeerState(b"a" * 32), PeerState(b"b" * 32), PeerState(b"c" * 32)
    near.clock = {feed: 5, other_feed: 1, forked: 9}
    far.clock = {feed: 7}
    third.clock = {other_feed: 4}
    ours = {feed: 3, other_feed: 1}
    with counters.session(near) as traffic, counters.session(near), counters.session(far):
        assert traffic is counters.peers[near.key]
        with counters.session(third):
            assert counters.lags(ours, {forked}) == {feed_text(near.key): 2, OTHER: 4 + 3}
        assert counters.lags(ours, set()) == {feed_text(near.key): 2 + 9, OTHER: 4}
    assert counters.lags(ours, set()) == {}


async def test_queued_frames_are_read_from_the_open_streams_queues():
    counters = NodeCounters()
    one_send, one = trio.open_memory_channel(8)
    two_send, two = trio.open_memory_channel(8)
    with counters.ipc_queue(one):
        for frame in range(3):
            one_send.send_nowait(frame)
        with counters.ipc_queue(two):
            two_send.send_nowait("x")
            assert counters.queued_frames() == (4, 3)
        assert counters.queued_frames() == (3, 3)
    assert counters.queued_frames() == (0, 0)


async def test_a_stalled_subscribers_queue_is_seen_and_its_lag_counted(service, tmp_path, nursery):
    server = IpcServer(service, PeerRegistry(), Network(bytes(32), ME, service, PeerRegistry()), ME)
    server.queue_frames = 2
    path = await nursery.start(server.serve, tmp_path / "ipc.sock")
    counters = service.counters
    with trio.fail_after(WAIT):
        async with await connect(path) as writer, await connect(path) as reader:
            root = (await writer.publish("root", {"chat": None}))["id"]
            events = reader.subscribe(since=0, tangle="chat", root=root)
            assert "started" in await events.__anext__()
            assert counters.queued_frames() == (0, 0)
            for n in range(400):  # the reader reads nothing meanwhile: its socket fills up
                await writer.publish({"n": n, "pad": "x" * 8000}, {"chat": root})
                if counters.ipc_lagged:
                    break
            assert counters.ipc_lagged == 1
            assert counters.queued_frames() == (2, 2)  # full: that is what cut it off
            async with aclosing(events):
                with pytest.raises(NodeError, match="disconnected"):
                    async for _event in events:
                        pass
    assert counters.queued_frames() == (0, 0)  # the stream ended, its queue with it
    nursery.cancel_scope.cancel()


def test_the_daemons_paths_do_not_load_prometheus_client():
    probe = (
        "import sys\n"
        "import tanglenode.node.service.store_service, tanglenode.node.service.counters\n"
        "import tanglenode.node.gossip.session, tanglenode.node.gossip.inbox\n"
        "import tanglenode.node.gossip.network, tanglenode.node.ipc.server\n"
        "print(sorted(name for name in sys.modules if name.startswith('prometheus')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]"


# -- the collector -------------------------------------------------------------------


async def test_the_collector_turns_the_counts_into_families(service):
    await service.ingest([Feed("alice").append("one").raw, break_signature(Feed("m").append().raw)])
    counters = service.counters
    counters.ingest_latency.observe(0.003)
    counters.ingest_latency.observe(7.0)
    counters.ipc_lagged += 2
    peer = PeerState(b"p" * 32, clock={b"f" * 32: 4})
    with counters.session(peer) as traffic:
        traffic.bytes_in, traffic.bytes_out, traffic.received, traffic.sent = 100, 200, 3, 4
        families = await scrape(service)
    label = (("peer", feed_text(peer.key)),)

    def value(family: str, labels: tuple = ()) -> float:
        """The one sample of `family` with `labels` (a counter's is named `..._total`)."""
        kind, samples = families[family]
        return samples[(family + "_total" if kind == "counter" else family, labels)]

    assert value("tanglenode_messages") == 42  # the status gauges are still there
    assert families["tanglenode_messages_ingested"][0] == "counter"
    assert value("tanglenode_messages_ingested") == 1
    assert value("tanglenode_messages_duplicate") == 0
    assert value("tanglenode_messages_rejected", (("reason", "bad-signature"),)) == 1
    rejected = families["tanglenode_messages_rejected"][1]
    assert len(rejected) == len(Reason) and sum(rejected.values()) == 1
    assert value("tanglenode_messages_proof", (("reason", "forked-feed"),)) == 0
    kind, ingest = families["tanglenode_ingest_latency_seconds"]
    assert kind == "histogram"
    name = "tanglenode_ingest_latency_seconds"
    assert ingest[(name + "_bucket", (("le", "0.0025"),))] == 0
    assert ingest[(name + "_bucket", (("le", "0.005"),))] == 1
    assert ingest[(name + "_bucket", (("le", "10.0"),))] == 2
    assert ingest[(name + "_bucket", (("le", "+Inf"),))] == 2
    assert ingest[(name + "_count", ())] == 2 and ingest[(name + "_sum", ())] == 7.003
    assert value("tanglenode_peer_received_bytes", label) == 100
    assert value("tanglenode_peer_sent_bytes", label) == 200
    assert value("tanglenode_peer_received_messages", label) == 3
    assert value("tanglenode_peer_sent_messages", label) == 4
    assert value("tanglenode_peer_lag_messages", label) == 4
    assert value("tanglenode_ipc_lagged") == 2
    assert value("tanglenode_ipc_queued_frames") == value("tanglenode_ipc_queued_frames_max") == 0
    assert value("tanglenode_store_map_bytes") == MAP_SIZE
    assert 0 < value("tanglenode_store_used_bytes") < MAP_SIZE
    after = await scrape(service)  # the session ended: no lag; its traffic stays counted
    assert after["tanglenode_peer_lag_messages"][1] == {}
    assert after["tanglenode_peer_sent_bytes"][1] == families["tanglenode_peer_sent_bytes"][1]


async def test_without_a_store_service_only_the_status_gauges_are_exposed():
    families = await scrape(None)
    assert set(families) == {name for name, _text in Metrics.GAUGES.values()}


async def test_metrics_md_lists_every_family_its_type_and_labels(service):
    """docs/METRICS.md's table: `name` | type | labels | meaning, one row per family, a
    counter by its sample's name (`_total`), as a query names it."""
    peer = PeerState(b"p" * 32, clock={b"f" * 32: 1})
    with service.counters.session(peer):
        families = await scrape(service)
    exposed = {}
    for name, (kind, samples) in families.items():
        labels = {label for _sample, pairs in samples for label, _value in pairs} - {"le"}
        exposed[name] = (kind, ", ".join(f"`{label}`" for label in sorted(labels)) or "none")
    lines = (ROOT / "docs" / "METRICS.md").read_text().splitlines()
    rows = [line for line in lines if re.match(r"\| `tanglenode_", line)]
    listed = {}
    for row in rows:
        name, kind, labels, meaning = (cell.strip() for cell in row.strip("|").split("|"))
        assert meaning, name
        name = name.strip("`")
        if kind == "counter":
            assert name.endswith("_total"), name
            name = name.removesuffix("_total")
        listed[name] = (kind, labels)
    assert len(listed) == len(rows)  # no family listed twice
    assert listed == exposed
