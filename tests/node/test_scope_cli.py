"""`tangled scope` says what the scope's bounds left out and why (storage/scope.py), run as
a real process against a real data directory (the node stopped: the store answers)."""

import json

from tanglenode.protocol.identity import feed_text
from tanglenode.storage.scope import MAX_FOLLOWS_READ
from tanglenode.storage.store import FeedStore
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
