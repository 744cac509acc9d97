"""Joining by invite, as a newcomer would: two real `tangled run` processes with the
default scope, the real CLI, no `follow` typed. Each carries the other afterwards, the
redeemer dials the inviter again after a restart, and neither log holds the code."""

from __future__ import annotations

import base64
import json

from tanglenode.config.settings import load_settings
from tanglenode.node.localnet import Node
from tests.integration.test_cli_live import cli

OTHER_NETWORK = base64.b64encode(bytes(range(32))).decode()
DEFAULT_SCOPE = {"TANGLED_REPLICATION__HOPS": "2"}  # localnet carries every feed otherwise


async def held(node: Node, feed: bytes) -> int:
    """The seq of `feed` the node holds (its clock)."""
    clock = await node.request("clock")
    return {bytes(f): seq for f, seq in clock["entries"]}.get(feed, 0)


async def test_two_default_nodes_join_by_one_invite_and_carry_each_other(tmp_path):
    inviter, newcomer = Node(tmp_path, "inviter"), Node(tmp_path, "newcomer")
    await inviter.start(extra_env=DEFAULT_SCOPE)
    await newcomer.start(peers=None, extra_env=DEFAULT_SCOPE)
    await inviter.publish({"type": "post", "text": "welcome"})
    await newcomer.publish({"type": "post", "text": "hi there"})

    shown = await cli(inviter, "invite", "create", "--uses", "2", "--expires", "12h")
    assert shown.returncode == 0, shown.stderr.decode()
    said = shown.stderr.decode()
    assert said.startswith("invite ") and "2 uses" in said and "follows back" in said
    assert "note: only this machine reaches" in said  # localnet listens on 127.0.0.1
    assert (await cli(inviter, "invite", "revoke", said.split()[1].rstrip(":"))).returncode == 0
    made = await cli(inviter, "invite", "create", "--json")
    assert made.returncode == 0, made.stderr.decode()
    code = json.loads(made.stdout)["code"]
    used = await cli(newcomer, "invite", "use", "-", stdin=code)
    assert used.returncode == 0, used.stderr.decode()
    line = used.stdout.decode()
    assert line.count("\n") == 1 and line.startswith(f"joined {inviter.feed_id}")
    assert "carried now" in line and "they follow you back" in line

    # both carry each other: the other's post and follow arrive, no `follow` typed
    for node in (inviter, newcomer):
        await node.wait_for_size(4, spacetime=True, seconds=60)  # 2 posts, 2 follows
    assert await held(newcomer, inviter.key) == 2 and await held(inviter, newcomer.key) == 2
    saved = load_settings(newcomer.data_dir / "tangled.toml", environ={}).peers
    assert [(p.address, p.key) for p in saved] == [(inviter.listen, inviter.feed_id)]

    listed = json.loads((await cli(inviter, "invite", "list", "--json")).stdout)
    assert [(row["state"], row["redeemed_by"]) for row in listed] == [
        ("used-up", [newcomer.feed_id]),
        ("revoked", []),
    ]
    again = await cli(Node(tmp_path, "late"), "invite", "use", code)
    assert again.returncode != 0  # the late one's node is not running: said, not hung

    # restarted with its config's peers, the newcomer dials the inviter by itself
    await newcomer.stop()
    await newcomer.start(peers=None, extra_env=DEFAULT_SCOPE)
    await inviter.publish({"type": "post", "text": "still there?"})
    await newcomer.wait_for_size(5, spacetime=True, seconds=60)
    assert await held(newcomer, inviter.key) == 3

    await inviter.stop()
    await newcomer.stop()
    for node in (inviter, newcomer):
        text = node.log_path.read_text()
        assert code not in text and code[5:30] not in text
    redeemed = [entry for entry in inviter.log_lines() if entry.get("event") == "invite redeemed"]
    assert [entry["peer"] for entry in redeemed] == [newcomer.feed_id]


async def test_hostile_and_mistaken_codes_are_refused_with_their_reason(tmp_path):
    inviter, other = Node(tmp_path, "inviter"), Node(tmp_path, "other")
    await inviter.start(extra_env=DEFAULT_SCOPE)
    await other.start(extra_env=DEFAULT_SCOPE)
    code = json.loads((await cli(inviter, "invite", "create", "--json")).stdout)["code"]
    ident = json.loads((await cli(inviter, "invite", "list", "--json")).stdout)[0]["id"]

    cases = {
        "invite-own": (inviter, code),
        "invite-malformed": (other, "inv1." + "A" * 2000),  # oversized
    }
    for reason, (node, text) in cases.items():
        done = await cli(node, "invite", "use", text)
        assert done.returncode == 3, (reason, done.stderr)
        assert done.stderr.decode().startswith(f"tangled: {reason}: ")
    revoked_now = await cli(inviter, "invite", "revoke", ident[:6], "--json")
    assert revoked_now.returncode == 0, revoked_now.stderr.decode()
    assert json.loads(revoked_now.stdout)["state"] == "revoked"
    revoked = await cli(other, "invite", "use", code)
    assert revoked.returncode == 3 and b"invite-revoked" in revoked.stderr
    assert (await cli(inviter, "invite", "revoke", "nope")).returncode == 4
    state = await other.request("status")
    assert state["peers_total"] == 0  # nothing saved, nothing dialed

    elsewhere = Node(tmp_path, "elsewhere")  # a node of another network
    await elsewhere.start(extra_env={**DEFAULT_SCOPE, "TANGLED_NETWORK_KEY": OTHER_NETWORK})
    fresh = json.loads((await cli(inviter, "invite", "create", "--json")).stdout)["code"]
    foreign = await cli(elsewhere, "invite", "use", fresh)
    assert foreign.returncode == 3 and b"invite-other-network" in foreign.stderr
    await elsewhere.stop()
    await inviter.stop()
    await other.stop()
