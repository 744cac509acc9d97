"""The simulator's measures of issue 47: how a message spread (copies, hops: rmr and ldh),
churn by crashes and restarts, and what a reconnection costs (node/sim/spread.py,
node/sim/scenarios.py, node/sim/reconnect.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tanglenode.node.sim.network import SimConfig, simulate
from tanglenode.node.sim.spread import Spread, message_key
from tanglenode.node.sim.wiring import MAP_SIZE
from tanglenode.protocol.identity import Keypair
from tanglenode.protocol.message import sign_message
from tanglenode.storage.store import FeedStore

TANGLED = Path(sys.executable).with_name("tangled")
NODES = [Keypair(bytes([n]) * 32) for n in range(4)]


def signed(author: Keypair, seq: int) -> bytes:
    return sign_message(
        author,
        seq=seq,
        prev=None if seq == 1 else b"\x01" * 32,
        timestamp=1_800_000_000_000,
        timeframe={},
        tangles={},
        content={"type": "post", "n": seq},
    ).raw


@pytest.mark.parametrize("seq", [1, 127, 128, 255, 256, 65_536, 2**32 + 5])
def test_a_copy_is_known_by_its_author_and_seq_without_decoding(seq):
    assert message_key(signed(NODES[0], seq)) == (NODES[0].public, seq)
    assert message_key(b"\x93not a message") is None


def test_hops_and_redundancy_on_a_known_topology():
    """Node 0 publishes on the path 0 - 1 - 2 - 3 with one chord 0 - 2: node 1 and node 2
    receive it from 0 (hop 1), node 3 from 2 (hop 2), and node 2 a second copy from 1. Four
    copies reached three nodes: rmr = 4 / 3 - 1; the last node reached was at hop 2."""
    raw = signed(NODES[0], 1)
    key = message_key(raw)
    spread = Spread({node.public: n for n, node in enumerate(NODES)}, {key}.__contains__)
    spread.received([raw], receiver=1, sender=0)
    spread.received([raw], receiver=2, sender=0)
    spread.received([raw], receiver=3, sender=2)
    spread.received([raw], receiver=2, sender=1)  # a duplicate: counted, hops unchanged
    spread.received([signed(NODES[1], 1)], receiver=0, sender=1)  # not measured: ignored
    assert spread.hops[key] == {1: 1, 2: 1, 3: 2}
    assert spread.figures() == {"rmr": round(4 / 3 - 1, 4), "ldh": 2}


def test_a_copy_relayed_hop_by_hop_counts_each_hop():
    """On a line, the last node is as many hops away as the line is long; one copy each."""
    raw = signed(NODES[3], 1)
    key = message_key(raw)
    spread = Spread({node.public: n for n, node in enumerate(NODES)}, {key}.__contains__)
    for sender, receiver in ((3, 2), (2, 1), (1, 0)):
        spread.received([raw], receiver, sender)
    assert spread.figures() == {"rmr": 0.0, "ldh": 3}


def test_a_run_reports_rmr_and_ldh_beside_the_copies():
    result = simulate(SimConfig(nodes=12, degree=3, messages=10, seed=2))
    assert result.converged and result.sessions_dropped == 0
    assert result.rmr is not None and 0 <= result.rmr <= 0.2
    assert result.rmr == pytest.approx(result.copies_per_message - 1, abs=0.05)
    assert 2 <= result.ldh <= 11  # further than a neighbour, within the 12 nodes
    assert result.delivered_share_up is None and result.sync_bytes is None  # not these scenarios


def test_nodes_that_crash_and_restart_miss_nothing_and_the_others_everything():
    """40 % of 20 nodes crash (their unstored input lost) and restart from their stores:
    every node that stayed up holds every message, and in the end every node does."""
    config = SimConfig(nodes=20, degree=4, messages=30, scenario="churn", churn=0.4, seed=3)
    result = simulate(config)
    assert result.delivered_share_up == 1.0
    assert result.converged and result.delivered == 1.0 and result.sessions_dropped == 0
    assert result.latency_ms_max > 1000  # what a crashed node missed came after its restart
    assert result.rmr is not None and result.ldh is not None and result.ldh >= 2
    calm = simulate(SimConfig(**{**config.__dict__, "churn": 0.0}))
    assert calm.delivered_share_up is None and calm.latency_ms_max < result.latency_ms_max


def test_a_reconnection_is_measured_from_connecting_until_both_hold_the_same():
    config = SimConfig(nodes=2, degree=1, scenario="reconnect", feeds=300, differ=4, seed=4)
    result = simulate(config)
    assert result.converged and result.delivered == 1.0 and result.messages == 4
    # every byte on the link until then: at least the four messages, and the 300 feeds'
    # heads named in some form (today's HELLO lists them; a reconciliation fingerprints them)
    assert result.sync_bytes >= 4 * result.message_bytes_mean
    assert result.sync_bytes == pytest.approx(result.wire_bytes_per_message * 4, abs=4)
    assert result.sync_seconds >= 2 * config.latency  # a request and its answer at least
    assert result.sync_round_trips == pytest.approx(result.sync_seconds / 0.2, abs=0.01)
    more = simulate(SimConfig(**{**config.__dict__, "feeds": 3000}))
    assert more.sync_bytes > result.sync_bytes  # the feeds in common cost something


def test_a_reconnection_that_differs_in_nothing_ends_when_the_links_fall_quiet():
    result = simulate(SimConfig(nodes=3, degree=2, scenario="reconnect", feeds=50, differ=0))
    assert result.messages == 0 and result.converged
    assert result.sync_bytes > 0 and result.sync_seconds > 0


def test_a_simulated_store_holds_one_file_descriptor(tmp_path):
    def descriptors() -> int:
        return len(os.listdir("/proc/self/fd"))

    before = descriptors()
    store = FeedStore(tmp_path / "s", map_size=MAP_SIZE, durable=False, single_descriptor=True)
    try:
        assert descriptors() - before == 1
        assert store.feeds.held() == []
    finally:
        store.close()
    assert descriptors() == before


def test_the_command_runs_a_reconnection_and_refuses_more_differing_than_carried():
    arguments = ["--nodes", "2", "--degree", "1", "--scenario", "reconnect", "--feeds", "100"]
    done = subprocess.run(
        [TANGLED, "sim", *arguments, "--differ", "2", "--json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["sync_bytes"] > 0 and result["sync_round_trips"] >= 1
    refused = subprocess.run(
        [TANGLED, "sim", "--scenario", "reconnect", "--feeds", "3", "--differ", "4"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert refused.returncode == 3 and "--differ" in refused.stderr
