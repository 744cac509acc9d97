"""`/metrics` of real nodes (`tangled run` with `web.listen`): two nodes replicate, a hostile
peer's forged message is refused, and each scrape, parsed by prometheus-client, shows it."""

from __future__ import annotations

import trio
from prometheus_client.parser import text_string_to_metric_families

from tanglenode.node.localnet import REQUEST_SECONDS, Node
from tanglenode.protocol.identity import Keypair, feed_text
from tests.factories import Feed, break_signature
from tests.integration.test_chaos import hostile
from tests.integration.test_web_live import get
from tests.node.test_hostile_peers import until_hung_up

WEB = {"TANGLED_WEB__LISTEN": "127.0.0.1:0"}
PUBLISHED = 5


async def scrape(node: Node) -> dict[tuple[str, tuple], float]:
    """The node's /metrics: (sample name, sorted labels) -> value."""
    with trio.fail_after(REQUEST_SECONDS):
        async with await node.client() as client:
            base = (await client.status())["web"]
    token = (node.data_dir / "web-token").read_text().strip()
    code, _headers, text = await get(f"{base}metrics?token={token}")
    assert code == 200
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def test_two_nodes_replicate_refuse_a_forgery_and_the_metrics_show_it(tmp_path):
    a, b = Node(tmp_path, "a"), Node(tmp_path, "b")
    await a.start(extra_env=WEB)
    await b.start(peers=[a], extra_env=WEB)
    for n in range(PUBLISHED):
        await a.publish({"n": n})
    await b.wait_for_size(PUBLISHED, spacetime=True)

    mallory = Keypair.generate()
    forged = break_signature(Feed("forger").append("forged").raw)
    async with hostile(b, mallory) as (secure, gossip):
        await secure.send_all(gossip.messages([forged]))
        await until_hung_up(secure, gossip)  # b drops the peer that sent it

    seen_by_b = await scrape(b)
    from_a = (("peer", a.feed_id),)
    from_mallory = (("peer", feed_text(mallory.public)),)
    assert seen_by_b["tanglenode_messages_ingested_total", ()] == PUBLISHED
    assert seen_by_b["tanglenode_messages_rejected_total", (("reason", "bad-signature"),)] == 1
    refused = [v for (name, _l), v in seen_by_b.items() if name.endswith("rejected_total")]
    assert sum(refused) == 1
    assert seen_by_b["tanglenode_ingest_latency_seconds_count", ()] >= 1
    assert seen_by_b["tanglenode_ingest_latency_seconds_sum", ()] > 0
    assert seen_by_b["tanglenode_ingest_latency_seconds_bucket", (("le", "+Inf"),)] >= 1
    assert seen_by_b["tanglenode_peer_received_bytes_total", from_a] > 0
    assert seen_by_b["tanglenode_peer_sent_bytes_total", from_a] > 0
    assert seen_by_b["tanglenode_peer_received_messages_total", from_a] == PUBLISHED
    assert seen_by_b["tanglenode_peer_lag_messages", from_a] == 0  # caught up
    assert seen_by_b["tanglenode_peer_received_messages_total", from_mallory] == 1
    assert ("tanglenode_peer_lag_messages", from_mallory) not in seen_by_b  # gone
    assert seen_by_b["tanglenode_messages", ()] == PUBLISHED  # the status gauges stay
    used = seen_by_b["tanglenode_store_used_bytes", ()]
    assert 0 < used < seen_by_b["tanglenode_store_map_bytes", ()]

    seen_by_a = await scrape(a)
    to_b = (("peer", b.feed_id),)
    assert seen_by_a["tanglenode_publish_latency_seconds_count", ()] == PUBLISHED
    assert seen_by_a["tanglenode_publish_latency_seconds_bucket", (("le", "+Inf"),)] == PUBLISHED
    assert seen_by_a["tanglenode_publish_latency_seconds_sum", ()] > 0
    assert seen_by_a["tanglenode_peer_sent_messages_total", to_b] == PUBLISHED
    assert seen_by_a["tanglenode_peer_sent_bytes_total", to_b] > 0
    assert seen_by_a["tanglenode_messages_ingested_total", ()] == 0  # it only published
    assert await b.stop() == 0 and await a.stop() == 0
