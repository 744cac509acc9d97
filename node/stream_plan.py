"""Which connected peer streams each feed to us: every new message received once.

Theory of operation
-------------------
Without a plan every session subscribes to every feed its peer is ahead on,
and each peer then pushes each new message: a node with k peers receives
each message k times. The plan (one per store service, shared by its
sessions: `service.shared(StreamPlan)`) gives each feed one *streamer*, the session that
holds the feed's open subscription (WANT); the other sessions only read
the feed's heads in their peers' CLOCK notes, as epidemic broadcast trees
(EBT) and Plumtree do.

- **Claiming.** A session whose peer is ahead on a feed subscribes only if
  no live session streams the feed yet (`claim`); the first peer to show a
  feed ahead streams it.
- **Leaving.** When a session ends, each feed it streamed goes to another
  session (`release` returns them): the caller asks the one whose peer
  showed the highest head (one that did not fail the feed lately, if there
  is one), from our own seq, so nothing is lost. A feed that leaves the
  scope is dropped (`drop`) and its subscription stopped.
- **Falling behind.** A streamer that leaves us behind a head another peer
  advertised for `switch_after` seconds, storing nothing of the feed
  meanwhile (`stalled`: the time runs from when a session first saw the
  head we lack, and restarts at each progress), loses the feed to that
  peer's session, which asks for it from our seq; the old streamer is told
  to stop (a WANT after `STOP_AFTER`, which an honest peer of any version
  reads as "nothing more": no message of a feed has that seq). If its own
  peer had shown more than we held, it failed: it may not stream that feed
  again for `FAILED_FOR` seconds, so a peer that claims heads it never
  sends costs each feed one wait of `switch_after` in that time. A
  streamer whose peer had nothing more (we were held up by another peer's
  news) is not blamed.

The plan holds no store state: a session asking whether a feed stalled
says how much of it we hold, so progress through any session restarts the
wait, and times are trio's clock,
so the simulator's virtual time drives it as a real one does. With `once`
off every session streams every feed it is behind on, as before the plan:
the flooding baseline `tangled sim --flood` compares against.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

import trio

SWITCH_AFTER = 2.0  # seconds a streamer may leave us behind another peer's head
STOP_AFTER = (1 << 63) - 1  # a WANT after this seq asks for nothing: the subscription ends
FAILED_FOR = 30.0  # seconds a streamer that failed a feed may not stream it again


@dataclass
class StreamPlan:
    """Feed -> the session that streams it; who failed to stream what, and for how long."""

    switch_after: float = SWITCH_AFTER
    once: bool = True  # False: every session streams every feed (flooding, for comparison)
    sessions: set = field(default_factory=set)  # the live sessions, which may stream
    streamers: dict[bytes, Hashable] = field(default_factory=dict)
    # (feed, session) -> when a streamer whose own peer showed more than we held sent none
    # of it for `switch_after`: it may not stream the feed again for `FAILED_FOR` seconds
    failed: dict[tuple[bytes, Hashable], float] = field(default_factory=dict)
    # feed -> (our seq, since when): how long we have been held at that seq while a peer
    # showed more; any progress (through whichever session) starts the time again
    behind_since: dict[bytes, tuple[int, float]] = field(default_factory=dict)

    def streamer(self, feed: bytes) -> Hashable | None:
        return self.streamers.get(feed)

    def has_failed(self, feed: bytes, session: Hashable) -> bool:
        at = self.failed.get((feed, session))
        if at is not None and trio.current_time() - at >= FAILED_FOR:
            del self.failed[(feed, session)]
            return False
        return at is not None

    def claim(self, feed: bytes, session: Hashable) -> bool:
        """`session` streams `feed` if nobody does; whether it does now."""
        if not self.once:
            return True
        if self.has_failed(feed, session):
            return False
        return self.streamers.setdefault(feed, session) is session

    def may_take(self, feed: bytes, session: Hashable, have: int) -> bool:
        """Whether `session` (whose peer shows more of `feed` than our `have`) may take it
        over: the streamer left us at `have` for `switch_after` seconds, and `session` did
        not fail the feed lately (a peer that claims heads it never sends cannot win it
        back again and again)."""
        return not self.has_failed(feed, session) and self.stalled(feed, have)

    def take(self, feed: bytes, session: Hashable, *, failed: bool = False) -> Hashable | None:
        """`session` streams `feed` from now on; the session that did, if another (which,
        `failed`, may not stream the feed for a while)."""
        before = self.streamers.get(feed)
        if failed and before is not None and before is not session:
            self.failed[(feed, before)] = trio.current_time()
        self.streamers[feed] = session
        self.behind_since.pop(feed, None)  # the new streamer gets its own time
        return None if before is session else before

    def stalled(self, feed: bytes, have: int) -> bool:
        """A peer shows more of `feed` than our `have`: whether we have been held at `have`
        for `switch_after` seconds (a feed nobody streams: at once)."""
        if not self.once:
            return False
        if feed not in self.streamers:
            return True
        now = trio.current_time()
        held = self.behind_since.get(feed)
        if held is None or held[0] != have:
            self.behind_since[feed] = (have, now)
            return False
        return now - held[1] >= self.switch_after

    def release(self, session: Hashable) -> list[bytes]:
        """`session` ended: the feeds it streamed, now streamed by nobody."""
        feeds = [feed for feed, streamer in self.streamers.items() if streamer is session]
        self.failed = {key: at for key, at in self.failed.items() if key[1] is not session}
        for feed in feeds:
            self.drop(feed, session)
        return feeds

    def drop(self, feed: bytes, session: Hashable) -> None:
        """`session` no longer streams `feed` (the feed left the scope, or the session ended)."""
        if self.streamers.get(feed) is session:
            del self.streamers[feed]
            self.behind_since.pop(feed, None)
