"""The stream plan's rules on their own (node/stream_plan.py), and the log of heads that
moved (node/head_changes.py), on trio's virtual clock."""

from __future__ import annotations

import trio
import trio.testing

from tanglenode.node.head_changes import HeadChanges
from tanglenode.node.stream_plan import FAILED_FOR, StreamPlan

F = b"f" * 32


def on_virtual_time(test) -> None:
    trio.run(test, clock=trio.testing.MockClock(autojump_threshold=0))


def test_the_first_claim_streams_and_a_feed_nobody_streams_is_stalled_at_once():
    async def test() -> None:
        plan = StreamPlan()
        assert plan.claim(F, "a") and not plan.claim(F, "b") and plan.claim(F, "a")
        assert plan.release("a") == [F] and plan.streamer(F) is None
        assert plan.stalled(F, 0)  # nobody streams it: take it now

    on_virtual_time(test)


def test_a_streamer_is_stalled_only_after_holding_us_at_one_seq_for_the_wait():
    async def test() -> None:
        plan = StreamPlan(switch_after=2.0)
        plan.claim(F, "a")
        assert not plan.stalled(F, 5)  # the wait starts
        await trio.sleep(1.5)
        assert not plan.stalled(F, 6)  # progress (through any session): it starts again
        await trio.sleep(1.5)
        assert not plan.stalled(F, 6)
        await trio.sleep(0.5)
        assert plan.stalled(F, 6) and plan.may_take(F, "b", 6)

    on_virtual_time(test)


def test_a_streamer_that_failed_a_feed_may_not_stream_it_again_for_a_while():
    async def test() -> None:
        plan = StreamPlan(switch_after=1.0)
        plan.claim(F, "liar")
        assert plan.take(F, "honest", failed=True) == "liar"
        assert not plan.claim(F, "liar") and plan.has_failed(F, "liar")
        plan.release("honest")
        assert not plan.claim(F, "liar")  # still failed, though nobody streams the feed
        await trio.sleep(FAILED_FOR)
        assert plan.claim(F, "liar")  # its time is up
        plan.take(F, "other")  # a switch that blames nobody
        assert not plan.has_failed(F, "liar")

    on_virtual_time(test)


def test_flooding_streams_every_feed_from_every_session_and_never_switches():
    async def test() -> None:
        plan = StreamPlan(once=False)
        assert plan.claim(F, "a") and plan.claim(F, "b")
        assert not plan.stalled(F, 0)

    on_virtual_time(test)


def test_a_cursor_sees_each_head_that_moved_after_it_once():
    heads = HeadChanges(keep=4)
    start = heads.cursor()
    heads.moved(b"a")
    heads.moved(b"b")
    middle = heads.cursor()
    heads.moved(b"a")
    assert heads.since(start) == {b"a", b"b"}
    assert heads.since(middle) == {b"a"}
    assert heads.since(heads.cursor()) == set()
    assert heads.since(None) is None  # never looked: every feed


def test_a_cursor_too_old_or_from_before_a_reset_reads_every_feed():
    heads = HeadChanges(keep=2)
    old = heads.cursor()
    for feed in (b"a", b"b", b"c", b"d", b"e"):
        heads.moved(feed)
    assert heads.since(old) is None  # the log no longer reaches back to it
    recent = heads.cursor()
    heads.moved(b"f")
    assert heads.since(recent) == {b"f"}
    heads.reset()  # the whole clock was read again
    assert heads.since(recent) is None
    assert heads.since(heads.cursor()) == set()
