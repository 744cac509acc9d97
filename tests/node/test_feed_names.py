"""The per-connection tables that name feeds by position (node/gossip/feed_names.py)."""

from __future__ import annotations

import pytest

from tanglenode.node.gossip import feed_names
from tanglenode.node.gossip.feed_names import FeedNames
from tanglenode.protocol.gossip import GossipError

A, B, C, D = (bytes([n]) * 32 for n in range(1, 5))
TAG = b"t" * 16


def test_two_ends_keep_their_tables_in_step_and_name_by_position_after_a_key():
    ours, theirs = FeedNames([A, B]), FeedNames([A, B])
    flat, keyed = ours.notes_out({B: (3, TAG), C: (1, TAG)})
    assert flat == [1, 3, TAG] and keyed == {C: (1, TAG)}
    theirs.keyed_in(keyed)
    assert theirs.notes_in([(1, 3, TAG)]) == {B: (3, TAG)}
    flat, keyed = ours.notes_out({C: (2, TAG)})  # named by key before: by position now
    assert flat == [2, 2, TAG] and keyed == {}
    assert theirs.notes_in([(2, 2, TAG)]) == {C: (2, TAG)}
    # a WANT names the feeds the peer named to us, read back through its own table
    flat, keyed = theirs.wants_out({C: 2, D: 0})
    assert flat == [2, 2] and keyed == {D: 0}
    assert ours.wants_in([(2, 2)]) == {C: 2}


def test_a_position_not_given_is_the_peers_breach():
    names = FeedNames([A])
    with pytest.raises(GossipError, match="no feed is named 1"):
        names.notes_in([(1, 1, TAG)])
    with pytest.raises(GossipError, match="no feed is named 5"):
        names.wants_in([(5, 1)])


def test_a_table_stops_growing_at_its_bound_at_both_ends(monkeypatch):
    monkeypatch.setattr(feed_names, "MAX_NAMES", 2)
    ours, theirs = FeedNames([A]), FeedNames([A])
    _, keyed = ours.notes_out({B: (1, TAG), C: (1, TAG)})
    theirs.keyed_in(keyed)
    assert ours.ours.feeds == theirs.theirs.feeds == [A, B]  # C stays named by key
    assert ours.notes_out({C: (2, TAG)}) == ([], {C: (2, TAG)})
