"""`/metrics`: the node's figures in Prometheus' text format (prometheus-client).

Theory of operation
-------------------
Two sources, in a registry of our own (not prometheus-client's global one,
which would mix in the process collectors and outlive the node in tests):

- gauges set from the node's status (the IPC `status` handler's reply) at
  each scrape: messages, feeds, peers, forks, suspected forks, stalls,
  finality, subscribers;
- `NodeCollector`, a custom collector that reads the node's counters
  (node/service/counters.py: plain ints and bucket lists, which the hot paths add
  to without importing anything of this) and the store's size, and turns
  them into counter, histogram and gauge families while the registry
  renders.

`render` awaits the status and the store's figures first (a store read runs
in a worker thread), then sets and renders everything with no `await`
between, so concurrent scrapes cannot interleave and a scrape never sees a
count half updated. A context without a store service (the status page's
tests) has the status gauges only.

Every family, with its labels and meaning, is listed in docs/METRICS.md;
`tests/node/test_metrics.py` checks the list against this registry.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

from prometheus_client import CollectorRegistry, Gauge, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.utils import floatToGoString

from tanglenode.node.ipc.presence import presence_drops
from tanglenode.node.service.counters import OTHER, Histogram, NodeCounters, PeerTraffic

METRICS_HEADERS = [(b"content-type", CONTENT_TYPE_LATEST.encode()), (b"cache-control", b"no-store")]

# name -> (help, the attribute of PeerTraffic): one counter family each, labelled by peer
PEER_COUNTERS: dict[str, tuple[str, str]] = {
    "tanglenode_peer_received_bytes": ("Bytes of gossip frames received from a peer", "bytes_in"),
    "tanglenode_peer_sent_bytes": ("Bytes of gossip frames sent to a peer", "bytes_out"),
    "tanglenode_peer_received_messages": ("Messages a peer sent us", "received"),
    "tanglenode_peer_sent_messages": ("Messages we sent a peer", "sent"),
}


class NodeCollector:
    """The node's counters and the store's size as metric families, read at each scrape."""

    def __init__(self, service: Any) -> None:
        self.service = service  # node.service.store_service.StoreService
        self.store_figures: dict[str, int] = {}  # store.feeds.statistics(), read by `render`

    def describe(self) -> Iterator[Metric]:
        return self._families(NodeCounters(), {}, presence_drops(None))

    def collect(self) -> Iterator[Metric]:
        service = self.service  # the lag of the feeds carried: the rest is our choice
        lags = service.counters.lags(service.clock, set(service.invalid), service.scope.carries)
        return self._families(service.counters, lags, presence_drops(service))

    def _families(
        self, counters: NodeCounters, lags: dict[str, int], presence: dict[str, int]
    ) -> Iterator[Metric]:
        yield CounterMetricFamily(
            "tanglenode_messages_ingested",
            "Messages from peers the store accepted",
            value=counters.ingested,
        )
        yield CounterMetricFamily(
            "tanglenode_contents_refused",
            "Messages from peers stored as their header alone: the content beside it did not"
            " match the header's hash and size",
            value=counters.contents_refused,
        )
        yield CounterMetricFamily(
            "tanglenode_messages_duplicate",
            "Messages from peers the store held already",
            value=counters.duplicates,
        )
        yield _labelled(
            CounterMetricFamily(
                "tanglenode_messages_rejected",
                "Messages from peers the store refused, by reason code",
                labels=["reason"],
            ),
            counters.rejected,
        )
        yield _labelled(
            CounterMetricFamily(
                "tanglenode_messages_proof",
                "Messages from peers that proved a fork, kept as evidence",
                labels=["reason"],
            ),
            counters.proofs,
        )
        yield _histogram(
            "tanglenode_ingest_latency_seconds",
            "From a peer's messages arriving to the commit that stored them",
            counters.ingest_latency,
        )
        yield _histogram(
            "tanglenode_publish_latency_seconds",
            "A publish's service time, queueing for the group commit included",
            counters.publish_latency,
        )
        traffic: dict[str, PeerTraffic] = {
            counters.label(key): each for key, each in counters.peers.items()
        }
        if len(counters.peers) >= counters.max_peers:  # later peers are summed as `other`
            traffic[OTHER] = counters.other
        for name, (text, field) in PEER_COUNTERS.items():
            family = CounterMetricFamily(name, text, labels=["peer"])
            yield _labelled(family, {label: getattr(t, field) for label, t in traffic.items()})
        yield _labelled(
            GaugeMetricFamily(
                "tanglenode_peer_lag_messages",
                "Messages a connected peer has that we lack",
                labels=["peer"],
            ),
            lags,
        )
        queued, deepest = counters.queued_frames()
        yield GaugeMetricFamily(
            "tanglenode_ipc_queued_frames",
            "Frames waiting in the IPC streams' queues, all together",
            value=queued,
        )
        yield GaugeMetricFamily(
            "tanglenode_ipc_queued_frames_max",
            "Frames waiting in the fullest IPC stream's queue",
            value=deepest,
        )
        yield _labelled(
            CounterMetricFamily(
                "tanglenode_invite_redemptions",
                "Redemptions of this node's invites: redeemed, or the refusal's reason",
                labels=["outcome"],
            ),
            counters.invites,
        )
        yield _labelled(
            CounterMetricFamily(
                "tanglenode_presence_dropped",
                "Peers' presence frames dropped (the peer kept), by reason",
                labels=["reason"],
            ),
            presence,
        )
        yield CounterMetricFamily(
            "tanglenode_ipc_lagged",
            "IPC streams closed because the client fell behind",
            value=counters.ipc_lagged,
        )
        yield GaugeMetricFamily(
            "tanglenode_store_used_bytes",
            "Bytes of the store's data file in use, up to its last page",
            value=self.store_figures.get("bytes_on_disk", 0),
        )
        yield GaugeMetricFamily(
            "tanglenode_store_map_bytes",
            "The store's map size: the most its data file may grow to",
            value=self.store_figures.get("map_size", 0),
        )


class WebCollector:
    """The web view's own live streams (node/web/events.py): open, the bound, refused."""

    def __init__(self, streams: Any) -> None:
        self.streams = streams  # node.web.events.Streams

    def collect(self) -> Iterator[Metric]:
        yield GaugeMetricFamily(
            "tanglenode_web_streams", "Live pages' event streams open now", value=self.streams.open
        )
        yield GaugeMetricFamily(
            "tanglenode_web_streams_max",
            "Event streams the web view allows at once",
            value=self.streams.limit,
        )
        yield CounterMetricFamily(
            "tanglenode_web_streams_refused",
            "Event streams refused (503) because the most allowed were open",
            value=self.streams.refused,
        )


def _labelled(family: Metric, values: dict[str, int]) -> Metric:
    for label, value in values.items():
        family.add_metric([label], value)
    return family


def _histogram(name: str, text: str, histogram: Histogram) -> HistogramMetricFamily:
    buckets = [(floatToGoString(bound), count) for bound, count in histogram.cumulative()]
    return HistogramMetricFamily(name, text, buckets=buckets, sum_value=histogram.total)


class Metrics:
    """The registry: status gauges, the node's counters when a store service is given, and
    the web view's streams when they are."""

    GAUGES: ClassVar[dict[str, tuple[str, str]]] = {
        "messages": ("tanglenode_messages", "Messages in the store"),
        "feeds": ("tanglenode_feeds", "Feeds in the store"),
        "peers_connected": ("tanglenode_peers_connected", "Peers connected now"),
        "peers_total": ("tanglenode_peers", "Peers known (connected, dialed or seen)"),
        "forks_total": ("tanglenode_forks", "Feeds caught forking"),
        "suspected_forks_total": (
            "tanglenode_suspected_forks",
            "Seqs named with a tag other than the held message's, awaiting a fork proof",
        ),
        "stalls_total": ("tanglenode_stalls", "Messages waiting for one they depend on"),
        "final": ("tanglenode_final_positions", "Spacetime positions that can no longer change"),
        "subscribers": ("tanglenode_ipc_subscribers", "IPC streams open (subscribe, watches)"),
        "store_full": ("tanglenode_store_full", "1 when the last write found the store full"),
    }

    def __init__(self, service: Any = None, streams: Any = None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._gauges = {
            key: Gauge(name, text, registry=self.registry)
            for key, (name, text) in self.GAUGES.items()
        }
        self.service = service
        self.collector = None
        if service is not None:
            self.collector = NodeCollector(service)
            self.registry.register(self.collector)
        if streams is not None:
            self.registry.register(WebCollector(streams))

    async def render(self, web: Any) -> bytes:
        """The text of one scrape; `web` is the app's `WebContext` (its `status`)."""
        status = await web.status(False)
        figures = None
        if self.collector is not None:
            figures = await self.service.read(lambda store: store.feeds.statistics())
        # From here to the end, no await: one consistent moment.
        for key, gauge in self._gauges.items():
            gauge.set(bool(status[key]) if key == "store_full" else status[key])
        if self.collector is not None:
            self.collector.store_figures = figures
        return generate_latest(self.registry)
