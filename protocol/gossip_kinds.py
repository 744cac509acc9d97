"""The gossip protocol's words: the frame kinds, and the breaches a peer is dropped for.

Theory of operation
-------------------
protocol/gossip.py is the machine that turns a connection's frames into
events; protocol/gossip_named.py checks and makes the frames that name
feeds by position. Both speak of the same things, which live here, below
them both, so that neither imports the other's: what kind a frame is
(`FrameKind`, its first element on the wire), what rule a peer broke
(`Breach`, stable strings for logs and `tangled peers`) and the error that
says so (`GossipError`, a `RemoteProtocolError`: the caller drops the peer),
how many feeds a frame we send names at most (`CLOCK_CHUNK`), and what a
seq or a count in a frame may be (`is_seq`). protocol/gossip.py names them
all for its importers.
"""

from __future__ import annotations

import enum
from typing import Any

from tanglenode.protocol.errors import RemoteProtocolError

CLOCK_CHUNK = 8_192  # feeds per HELLO or CLOCK frame we send (well under the frame cap)


class FrameKind(enum.IntEnum):
    HELLO = 0
    CLOCK = 1
    WANT = 2
    MESSAGES = 3
    CREDIT = 4
    EVIDENCE = 5
    ASK = 6
    WITNESS = 7
    UNHELD = 8
    PRESENCE = 9  # offered with [CREDIT, 0] (protocol/gossip.py)
    RECONCILE = 10  # offered with [CLOCK, {}] right after HELLO (protocol/gossip.py)
    WANT_AGREED = 11  # WANT by position among the feeds the walk found alike
    CLOCK_NAMED = 12  # CLOCK naming feeds by position (node/gossip/feed_names.py)
    WANT_NAMED = 13  # WANT naming feeds by position


class Breach(enum.StrEnum):
    """Which rule of the gossip protocol a peer broke. The values are stable log strings."""

    NOT_A_FRAME = "not-a-frame"  # a frame is not a [kind, ...] array
    UNKNOWN_KIND = "unknown-kind"
    NO_HELLO = "no-hello"  # something came before HELLO
    SECOND_HELLO = "second-hello"
    VERSION = "gossip-version"  # a HELLO of another protocol version
    BAD_HELLO = "bad-hello"  # a HELLO of our version, not [HELLO, version, clock, credit]
    MALFORMED = "malformed"  # a frame's argument has the wrong shape
    TOO_MANY_FEEDS = "too-many-feeds"  # one frame names more feeds than allowed
    OVER_CREDIT = "over-credit"  # more messages than we granted
    BAD_EVIDENCE = "bad-evidence"  # EVIDENCE of another size than a fork proof's
    TOO_MANY_ASKS = "too-many-asks"  # more entries asked than `MAX_ASK` / `MAX_ASKING`
    UNASKED = "unasked"  # a WITNESS or UNHELD answering nothing we asked
    RECONCILE = "reconcile"  # RECONCILE unoffered, malformed, or breaking the walk's rules


class GossipError(RemoteProtocolError):
    """The peer broke the gossip protocol; `reason` says which rule, `detail` says how."""

    def __init__(self, reason: Breach, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def is_seq(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 63
