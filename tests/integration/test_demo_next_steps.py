"""What `make demo` tells a newcomer to try next works as shown: a node of one's own
started in the background and waited for (`status --wait`), and the kept nodes each on a
port of its own, redialing the peers they had in the demo."""

import os
import subprocess
import time

from tanglenode.config.settings import load_settings
from tanglenode.node.localnet import REQUEST_SECONDS, TANGLED
from tanglenode.node.localnet.demo import (
    KEPT_PEERS,
    create_nodes,
    follow_each_other,
    kept_listen,
    own_node_steps,
)


def test_a_node_of_ones_own_started_in_the_background_answers_once_waited_for(tmp_path):
    lines = [line.split("#")[0].strip() for line in own_node_steps()[1:]]  # past `make demo`
    assert [line.split()[-1] for line in lines] == ["init", "&", "10", "me"]
    lines = [line.replace("~/tn", str(tmp_path / "tn")) for line in lines]
    script = "\n".join(
        [
            "set -e",
            *lines[:2],
            "node=$!",
            "trap 'kill -TERM $node; wait $node' EXIT",
            *lines[2:],
        ]
    )
    env = {**os.environ, "TANGLED_LISTEN": "127.0.0.1:0", "TANGLED_LOG_LEVEL": "warning"}
    done = subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].startswith("%")  # `about me` published: its id


async def test_kept_nodes_listen_apart_and_redial_the_demos_peers(tmp_path):
    nodes = create_nodes(tmp_path)
    by_name = {node.name: node for node in nodes}
    listens = [kept_listen(node) for node in nodes]
    assert len(set(listens)) == len(nodes)  # all four can run at once
    for node in nodes:
        peers = load_settings(node.data_dir / "tangled.toml", environ={}).peers
        wanted = [
            (kept_listen(by_name[p]), by_name[p].feed_id) for p in KEPT_PEERS.get(node.name, ())
        ]
        assert [(peer.address, peer.key) for peer in peers] == wanted

    alice, bob = by_name["alice"], by_name["bob"]
    for node in (alice, bob):  # from their config files: port, peers and hops (the default)
        await node.start(peers=None, extra_env={"TANGLED_LISTEN": kept_listen(node)}, hops=None)
    assert alice.listen == kept_listen(alice)
    await follow_each_other([alice, bob])  # as the demo does: its stores keep the follows
    await alice.publish("hello bob")
    # bob dialed alice, and carries her feed: her follow of him, and the post
    await bob.wait_for_size(3, spacetime=True, seconds=REQUEST_SECONDS)
    for node in (alice, bob):
        assert await node.stop() == 0
    for node in (alice, bob):  # again, as the kept nodes start: the follows are in the stores
        await node.start(peers=None, extra_env={"TANGLED_LISTEN": kept_listen(node)}, hops=None)
    await alice.publish("hello again")
    await bob.wait_for_size(4, spacetime=True, seconds=REQUEST_SECONDS)  # alice 3, bob 1
    for node in (alice, bob):
        assert await node.stop() == 0


def test_status_wait_gives_up_on_a_node_that_does_not_start(tmp_path):
    began = time.monotonic()
    done = subprocess.run(
        [str(TANGLED), "--data-dir", str(tmp_path), "status", "--wait", "0.5"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "the node is not running" in done.stderr
    assert time.monotonic() - began >= 0.5
