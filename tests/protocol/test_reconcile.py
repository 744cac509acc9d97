"""The walk that reconciles two clocks (protocol/reconcile.py), on plain data: what each side
learns, what it costs, and what a peer breaking the rules meets."""

from __future__ import annotations

import random

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tanglenode.protocol.reconcile import Reconciliation, selected, selection
from tanglenode.protocol.reconcile_shape import (
    FINGERPRINT,
    HASHES,
    LIST,
    SKIP,
    ReconcileError,
    weigh,
)

SALT = b"a salt both know"


def clocks(rng: random.Random, n: int, differ: int, only_a: int = 0, only_b: int = 0):
    feeds = [rng.randbytes(32) for _ in range(n)]
    a = {feed: (rng.randint(1, 1000), rng.randbytes(16)) for feed in feeds}
    b = dict(a)
    for feed in rng.sample(feeds, differ):
        b[feed] = (a[feed][0] + 1, rng.randbytes(16))
    for _ in range(only_a):
        a[rng.randbytes(32)] = (1, rng.randbytes(16))
    for _ in range(only_b):
        b[rng.randbytes(32)] = (1, rng.randbytes(16))
    return a, b


def walk(a: dict, b: dict, **options) -> tuple[int, int]:
    """Walk `a` (the leader) and `b` to the end, every message through msgpack; both learn
    the other's clock exactly. Returns (one-way flights, bytes in all)."""
    leader = Reconciliation(a, SALT, True, **options)
    follower = Reconciliation(b, SALT, False, **options)
    inbox = {
        leader: [msgpack.packb(follower.opening())],
        follower: [msgpack.packb(leader.opening())],
    }
    flights, sent = 1, sum(len(m) for ms in inbox.values() for m in ms)
    while inbox[leader] or inbox[follower]:
        outbox: dict = {leader: [], follower: []}
        for me, other in ((leader, follower), (follower, leader)):
            for message in inbox[me]:
                reply = me.receive(msgpack.unpackb(message))
                if reply is not None:
                    outbox[other].append(msgpack.packb(reply))
        if outbox[leader] or outbox[follower]:
            flights += 1
        sent += sum(len(m) for ms in outbox.values() for m in ms)
        inbox = outbox
    assert leader.done and follower.done
    assert leader.peer_heads() == b
    assert follower.peer_heads() == a
    return flights, sent


heads = st.dictionaries(
    st.binary(min_size=32, max_size=32),
    st.tuples(st.integers(1, 2**40), st.binary(min_size=16, max_size=16)),
    max_size=80,
)


@settings(max_examples=150, deadline=None)
@given(heads, heads, st.integers(0, 60), st.integers(1, 6), st.integers(2, 5), st.integers(0, 30))
def test_any_two_clocks_learn_each_other_exactly(a, b, shared, leaf, branch, full_list):
    """Whatever the two hold (some feeds in common, at the same or other heads, some on one
    side only), and however the walk is tuned, each ends knowing the other's clock."""
    for feed, head in list(a.items())[:shared]:
        b.setdefault(feed, head)
    walk(a, b, leaf=leaf, branch=branch, full_list=full_list)


def test_nothing_differing_costs_one_flight_each_way_and_under_200_bytes():
    a, b = clocks(random.Random(1), 5000, 0)
    flights, sent = walk(a, b)
    assert flights == 1 and sent < 200


def test_one_differing_of_5000_costs_under_2_kib_and_one_of_20000_no_more():
    rng = random.Random(2)
    flights, sent = walk(*clocks(rng, 5000, 1))
    assert sent < 2048 and flights <= 5
    _, sent = walk(*clocks(rng, 20000, 1))
    assert sent < 2048


def test_a_hundred_differing_of_5000_cost_under_64_kib_listed_by_hashes():
    a, b = clocks(random.Random(3), 5000, 100)
    _, sent = walk(a, b)
    assert sent < 64 * 1024
    _, in_full = walk(a, b, full_list=10**6)  # every leaf listed in full instead
    assert sent < in_full / 2


def test_feeds_one_side_alone_carries_are_learned_both_ways():
    walk(*clocks(random.Random(4), 3000, 5, only_a=40, only_b=300))
    walk({}, clocks(random.Random(5), 200, 0)[0])


# -- a peer breaking the rules ------------------------------------------------------------


def opened(**options) -> Reconciliation:
    ours, _ = clocks(random.Random(6), 500, 0)
    side = Reconciliation(ours, SALT, False, **options)
    side.opening()
    return side


@pytest.mark.parametrize(
    "message, reason",
    [
        ([], "non-empty list"),
        ([[None, 9, None]], "unknown range mode"),
        ([[b"\x01", SKIP, None], [b"\x01", SKIP, None], [None, SKIP, None]], "increasing order"),
        ([[b"\x01", SKIP, None]], "only the last range"),
        ([[None, FINGERPRINT, b"short"]], "fingerprint is 8 bytes"),
        ([[None, SKIP, b"x"]], "SKIP carries nothing"),
        ([[None, FINGERPRINT, bytes(8)], [None, SKIP, None]], "only the last range"),
    ],
)
def test_a_malformed_message_is_refused_with_its_reason(message, reason):
    with pytest.raises(ReconcileError, match=reason):
        opened().receive(message)


def test_items_out_of_their_range_unsorted_or_answering_nothing_are_refused():
    outside = [[b"\x10", LIST, [[b"\xff" * 32, 1, bytes(16)]]], [None, SKIP, None]]
    with pytest.raises(ReconcileError, match="outside its range"):
        opened_twice().receive(outside)
    unsorted = [[b"\x02" * 32, 1, bytes(16)], [b"\x01" * 32, 1, bytes(16)]]
    with pytest.raises(ReconcileError, match="sorted"):
        opened_twice().receive([[None, LIST, unsorted]])
    with pytest.raises(ReconcileError, match="did not list"):
        opened_twice().receive([[None, 4, [[], b""]]])
    with pytest.raises(ReconcileError, match="HASHES is not a run"):
        opened_twice().receive([[None, HASHES, b"123"]])


def opened_twice() -> Reconciliation:
    """A leader of a small clock past the crossing openings: it fingerprinted every key, and
    waits for the follower's answer."""
    ours, _ = clocks(random.Random(6), 500, 0)
    side = Reconciliation(ours, SALT, True)
    side.opening()
    assert side.receive([[None, FINGERPRINT, bytes(8)]]) is None  # the follower's: ignored
    return side


def test_a_peer_that_never_agrees_is_stopped_by_the_message_bound():
    """A liar answering every fingerprint with fingerprints that never match walks until
    we list (it must then answer the list, or be refused) or the bound, never further."""
    ours, _ = clocks(random.Random(10), 20_000, 0)
    side = Reconciliation(ours, SALT, False, max_messages=3)
    side.opening()
    message = [[None, FINGERPRINT, bytes(8)]]
    with pytest.raises(ReconcileError, match=r"more than 3|unanswered"):
        for _ in range(10):
            reply = side.receive(message)
            assert reply is not None
            message = [
                [upper, FINGERPRINT, bytes(8)] if mode == FINGERPRINT else [upper, SKIP, None]
                for upper, mode, _ in reply
            ]


def test_a_message_after_the_walk_ended_is_refused():
    a, _ = clocks(random.Random(7), 10, 0)
    side, other = Reconciliation(a, SALT, True), Reconciliation(a, SALT, False)
    side.opening()
    assert side.receive(other.opening()) is None and side.done  # the same: done at once
    with pytest.raises(ReconcileError, match="after the walk ended"):
        side.receive([[None, SKIP, None]])


@given(st.lists(st.booleans(), max_size=300))
def test_a_selection_names_the_same_positions_in_whichever_form_is_shorter(chosen):
    encoded = selection(chosen)
    assert selected(msgpack.unpackb(msgpack.packb(encoded)), len(chosen)) == chosen
    if len(chosen) >= 64 and all(chosen):
        assert encoded == [0, len(chosen)]  # "all": one run, where the bitmap takes 8 bytes


@pytest.mark.parametrize("payload", [[1, 2], [5, -1], [True, 4], b"\xff", "x"])
def test_a_selection_that_does_not_fit_its_list_is_refused(payload):
    with pytest.raises(ReconcileError):
        selected(payload, 4)


def test_a_peer_may_ask_only_inside_what_we_fingerprinted_last():
    """A LIST (or fingerprint) of everything, after we split it in parts: refused, so a
    peer cannot have us list our whole clock in one range, nor again and again."""
    ours, _ = clocks(random.Random(8), 500, 0)
    side = Reconciliation(ours, SALT, False)
    side.opening()
    parts = side.receive([[None, FINGERPRINT, bytes(8)]])  # the leader's opening differs
    assert parts is not None and len(parts) > 1
    with pytest.raises(ReconcileError, match="did not fingerprint"):
        side.receive([[None, LIST, []]])


def test_a_list_of_ours_left_unanswered_is_refused():
    ours, _ = clocks(random.Random(9), 10, 0)
    side = Reconciliation(ours, SALT, False)
    side.opening()
    reply = side.receive([[None, FINGERPRINT, bytes(8)]])
    assert reply is not None and reply[0][1] == LIST  # ten items: listed at once
    with pytest.raises(ReconcileError, match="unanswered"):
        side.receive([[None, SKIP, None]])


@pytest.mark.parametrize(
    "frame",
    [
        [[None, LIST, [[b"x", 1, bytes(16)]]]],
        [[None, LIST, [[bytes(32), 1, bytes(16)], [[[1]]]]]],
        [[None, 4, [[[bytes(32), 1]], b""]]],
        [[None, HASHES, [1, 2]]],
        [[b"", SKIP, None]],
        [[None, 7, None]],
        "ranges",
    ],
)
def test_a_frame_of_the_wrong_shape_is_refused_as_it_comes(frame):
    with pytest.raises(ReconcileError):
        weigh(frame)


def test_a_frame_is_weighed_by_its_ranges_and_items():
    item = [bytes(32), 1, bytes(16)]
    frame = [[b"\x01", LIST, [item, item]], [b"\x02", HASHES, bytes(24)], [None, 4, [[item], b""]]]
    assert weigh(frame) == (3, 6)
