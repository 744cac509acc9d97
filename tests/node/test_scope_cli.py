"""`tangled scope` says what the scope's bounds left out and why (storage/scope.py); `init`
writes the scope's settings; `follow` says when a feed was never seen, and `publish` whose a
root not held is (node/ipc/scope_notes.py). Run as a real process against a real data directory
(the node stopped: the store answers)."""

import json
import tomllib

from tanglenode.config.settings import load_settings
from tanglenode.protocol.identity import feed_text, message_text
from tanglenode.protocol.message import TangleLink
from tanglenode.storage.scope import MAX_FOLLOWS_READ
from tanglenode.storage.store import FeedStore
from tests.factories import Feed, keypair
from tests.node.test_cli import node, ready
from tests.storage.test_scope_bounds import flooding_feed

__all__ = ["node", "ready"]  # the fixtures, used by name


def test_scope_says_which_feeds_follows_were_left_out_and_why(ready):
    flood = flooding_feed(MAX_FOLLOWS_READ + 1)  # one more than is read of a feed
    with FeedStore(ready.data_dir / "store") as store:
        store.writes.ingest([message.raw for message in flood.messages])
    flood_id = feed_text(flood.public)
    assert "(carried now)" in ready.ok("follow", flood_id)

    found = json.loads(ready.ok("scope", "--json"))
    assert found["hops"] == 2 and found["count"] == 2 + MAX_FOLLOWS_READ
    assert found["left_out_count"] == 1
    assert found["left_out"] == [
        {"via": flood_id, "hop": 2, "count": 0, "unread": True, "reasons": ["bound"]}
    ]
    shown = ready.ok("scope").splitlines()
    assert "left out (at most 20,000 feeds carried, 5,000 read of one feed):" in shown
    assert f"hop 2, feeds {flood_id} follows: names more than 5,000: the rest unread (bound)" in (
        shown
    )


def test_init_writes_the_replication_section_with_its_defaults(node):
    node.ok("init")
    path = node.data_dir / "tangled.toml"
    text = path.read_text()
    assert tomllib.loads(text)["replication"] == {"hops": 2}  # follow_invited: a comment
    lines = text.splitlines()
    section = lines[lines.index("[replication]") :]
    assert "hops = 2" in section and "# follow_invited = false" in section
    assert "# A community peer (pub): follow whoever redeems our invites." in section
    assert all(line.startswith("#") for line in section[1 : section.index("hops = 2")])
    assert load_settings(path, environ={}).replication.hops == 2
    pub = path.with_name("pub.toml")  # the commented line, uncommented, is a valid setting
    pub.write_text(text.replace("# follow_invited = false", "follow_invited = true"))
    assert load_settings(pub, environ={}).replication.follow_invited is True
    every = load_settings(path, environ={"TANGLED_REPLICATION__HOPS": "all"})
    assert every.replication.hops == "all"  # the environment still overrides it


def test_follow_on_a_stopped_node_says_once_that_a_feed_was_never_seen(node):
    peer = feed_text(keypair("scope-cli-configured-peer").public)
    node.ok("init", "--peer", f"127.0.0.1:9@{peer}")
    stranger = feed_text(keypair("scope-cli-stranger").public)
    said = node.ok("follow", stranger).strip()
    assert said == f"follow: {stranger} (carried now; never seen here: following anyway)"
    assert node.ok("follow", stranger).strip() == f"follow: {stranger} (carried now)"  # once
    assert json.loads(node.ok("follow", peer, "--json"))["seen"] is True  # a configured peer
    assert "never seen" not in node.ok("follow", peer)
    other = feed_text(keypair("scope-cli-other").public)
    assert json.loads(node.ok("block", other, "--json"))["seen"] is False


def test_publish_into_a_root_not_held_says_whose_it_is_on_a_stopped_node(ready):
    bob, dave = Feed("scope-cli-bob"), Feed("scope-cli-dave")
    root = bob.root("thread", {"text": "dinner?"})
    reply = dave.append(
        {"text": "yes"},
        tangles={"thread": TangleLink(root.id, (root.id,))},
        timeframe={bob.public: root},  # dave had read bob's root: his reply names it
    )
    ready.ok("follow", feed_text(dave.public))
    with FeedStore(ready.data_dir / "store") as store:
        store.writes.ingest([reply.raw])
    done = ready.run("publish", '{"text": "me too"}', "--tangle", f"thread={message_text(root.id)}")
    assert done.returncode == 3
    assert f"its author {feed_text(bob.public)} (as a reply held names it) is not followed" in (
        done.stderr
    )
    assert f"tangled follow {feed_text(bob.public)}" in done.stderr
    unknown = message_text(keypair("scope-cli-no-root").public)
    done = ready.run("publish", '{"text": "me too"}', "--tangle", f"thread={unknown}")
    assert done.returncode == 3 and "nor is its author known" in done.stderr
