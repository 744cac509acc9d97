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
  showed the highest head, from our own seq, so nothing is lost.
- **Falling behind.** A streamer that leaves us behind a head another peer
  advertised for `switch_after` seconds, storing nothing of the feed
  meanwhile (`stalled`: the time runs from when a session first saw the
  head we lack, and restarts at each progress), loses the feed to that
  peer's session, which asks for it from our seq; the old streamer is told
  to stop (a WANT after `STOP_AFTER`, which an honest peer of any version
  reads as "nothing more": no message of a feed has that seq), and never
  streams that feed again while its session lasts: a peer that claims
  heads it never sends costs each feed one wait of `switch_after`, once.

The plan holds no store state: progress is noted by the streaming session
as it stores what it received (`progressed`), and times are trio's clock,
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


@dataclass
class StreamPlan:
    """Feed -> the session that streams it, and since when it last made progress."""

    switch_after: float = SWITCH_AFTER
    once: bool = True  # False: every session streams every feed (flooding, for comparison)
    sessions: set = field(default_factory=set)  # the live sessions, which may stream
    streamers: dict[bytes, Hashable] = field(default_factory=dict)
    # (feed, session) of each streamer that stalled on the feed: it never streams it again
    failed: set[tuple[bytes, Hashable]] = field(default_factory=set)
    # feed -> since when (trio time) a peer showed a head we lack, with no progress since
    behind_since: dict[bytes, float] = field(default_factory=dict)

    def streamer(self, feed: bytes) -> Hashable | None:
        return self.streamers.get(feed)

    def claim(self, feed: bytes, session: Hashable) -> bool:
        """`session` streams `feed` if nobody does; whether it does now."""
        if not self.once:
            return True
        if (feed, session) in self.failed:
            return False
        return self.streamers.setdefault(feed, session) is session

    def may_take(self, feed: bytes, session: Hashable) -> bool:
        """Whether `session` may take `feed` over: not if it stalled on it before (a peer
        that claims heads it never sends cannot win the feed back, again and again)."""
        return (feed, session) not in self.failed and self.stalled(feed)

    def take(self, feed: bytes, session: Hashable, *, stalled: bool = False) -> Hashable | None:
        """`session` streams `feed` from now on; the session that did, if another (which,
        `stalled`, never streams the feed again)."""
        before = self.streamers.get(feed)
        if stalled and before is not None and before is not session:
            self.failed.add((feed, before))
        self.streamers[feed] = session
        self.behind_since.pop(feed, None)  # the new streamer gets its own time
        return None if before is session else before

    def progressed(self, feed: bytes) -> None:
        """Messages of `feed` were stored from its streamer: it is not stalled."""
        self.behind_since.pop(feed, None)

    def stalled(self, feed: bytes) -> bool:
        """A peer shows a head of `feed` we lack: whether the streamer left us behind for
        `switch_after` seconds with no progress (a feed nobody streams: at once)."""
        if not self.once:
            return False
        if feed not in self.streamers:
            return True
        since = self.behind_since.setdefault(feed, trio.current_time())
        return trio.current_time() - since >= self.switch_after

    def release(self, session: Hashable) -> list[bytes]:
        """`session` ended: the feeds it streamed, now streamed by nobody."""
        feeds = [feed for feed, streamer in self.streamers.items() if streamer is session]
        self.failed = {(feed, other) for feed, other in self.failed if other is not session}
        for feed in feeds:
            del self.streamers[feed]
            self.behind_since.pop(feed, None)
        return feeds
