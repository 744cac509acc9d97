"""Which feeds' heads moved since a session last looked, without a scan of every feed.

Each gossip session tells its peer the heads that changed since it last
told it (CLOCK). Rebuilding the whole clock at every store change costs
every session O(feeds) per change: a node of a thousand feeds and many
peers would spend its time there. `HeadChanges` is the service's log of
feeds whose head moved, in order; a session keeps a cursor into it
(`since`) and reads only what moved after. The log keeps its newest
`KEEP` entries; a cursor older than that, or from before the whole clock
was read again (`reset`, after a proof cut feeds back), gets None: look at
every feed once.
"""

from __future__ import annotations

KEEP = 1 << 16  # entries kept; a session further behind scans the clock once


class HeadChanges:
    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep
        self._feeds: list[bytes] = []
        self._base = 0  # the position of _feeds[0] in the whole log
        self._epoch = 0  # bumped by `reset`: every cursor before it is stale

    def moved(self, feed: bytes) -> None:
        self._feeds.append(feed)
        if len(self._feeds) > 2 * self.keep:
            dropped = len(self._feeds) - self.keep
            del self._feeds[:dropped]
            self._base += dropped

    def reset(self) -> None:
        """Any head may have moved (the clock was read again): every cursor starts over."""
        self._epoch += 1
        self._base += len(self._feeds)
        self._feeds.clear()

    def cursor(self) -> tuple[int, int]:
        """Where the log ends now."""
        return self._epoch, self._base + len(self._feeds)

    def since(self, cursor: tuple[int, int] | None) -> set[bytes] | None:
        """The feeds whose head moved after `cursor`; None: unknown, look at every feed."""
        if cursor is None:
            return None
        epoch, position = cursor
        if epoch != self._epoch or position < self._base:
            return None
        return set(self._feeds[position - self._base :])
