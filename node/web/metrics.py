"""`/metrics`: the node's figures in Prometheus' text format (prometheus-client).

Theory of operation
-------------------
Gauges are set from the node's status at each scrape, in a registry of our
own (not prometheus-client's global one, which would mix in the process
collectors and outlive the node in tests), and rendered with no `await`
between, so concurrent scrapes cannot interleave.
"""

from __future__ import annotations

from typing import Any, ClassVar

from prometheus_client import CollectorRegistry, Gauge, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

METRICS_HEADERS = [(b"content-type", CONTENT_TYPE_LATEST.encode()), (b"cache-control", b"no-store")]


class Metrics:
    """The gauges, in a registry of our own, set from a status at each scrape."""

    GAUGES: ClassVar[dict[str, tuple[str, str]]] = {
        "messages": ("tanglenode_messages", "Messages in the store"),
        "feeds": ("tanglenode_feeds", "Feeds in the store"),
        "peers_connected": ("tanglenode_peers_connected", "Peers connected now"),
        "peers_total": ("tanglenode_peers", "Peers known (connected, dialed or seen)"),
        "forks_total": ("tanglenode_forks", "Feeds caught forking"),
        "stalls_total": ("tanglenode_stalls", "Messages waiting for one they depend on"),
        "final": ("tanglenode_final_positions", "Spacetime positions that can no longer change"),
        "subscribers": ("tanglenode_ipc_subscribers", "IPC streams open (subscribe, watches)"),
    }

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._gauges = {
            key: Gauge(name, text, registry=self.registry)
            for key, (name, text) in self.GAUGES.items()
        }

    def render(self, status: dict[str, Any]) -> bytes:
        for key, gauge in self._gauges.items():
            gauge.set(status[key])
        return generate_latest(self.registry)
