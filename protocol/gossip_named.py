"""The gossip frames that name feeds by position: checked as they come, made to send.

Theory of operation
-------------------
Once two nodes walked their clocks together (protocol/reconcile.py), a
frame may name a feed by its position in a list both ends hold, a few bytes
where its key takes 34 (docs/PEERS.md, "Reconciling clocks"): the
walk's first WANT by position among the feeds it found alike (WANT_AGREED,
a selection: protocol/reconcile.py), then CLOCK and WANT by position in
the connection's tables (CLOCK_NAMED, WANT_NAMED, which
node/gossip/feed_names.py keeps). protocol/gossip.py's table of frames
shows all three.

protocol/gossip.py's machine hands this module those three kinds of
frame, and what it knows of the peer: whether it offered the walk (none of
them comes from, nor goes to, a peer that did not) and how many feeds a
frame may name. Here each frame's shape is checked, flat entries of a
fixed width, each a position and a seq first (`clock_named`, `want_named`,
`want_agreed`), and ours go out in frames of at most `CLOCK_CHUNK`
entries (`named_frames`). A frame of the wrong shape raises `GossipError`,
as every frame's does; which feed a position names, and whether a
selection fits the list, is the session's to check (node/gossip/walk.py,
node/gossip/feed_names.py).
"""

from __future__ import annotations

from typing import Any

from tanglenode.protocol.errors import LocalProtocolError
from tanglenode.protocol.framing import encode_frame
from tanglenode.protocol.gossip_kinds import (
    CLOCK_CHUNK,
    Breach,
    FrameKind,
    GossipError,
    is_seq,
)
from tanglenode.protocol.identity import TAG_BYTES


def want_agreed(frame: list[Any], offered: bool) -> bytes | list[int]:
    """A WANT_AGREED frame's selection (its fit is the walk's to check)."""
    if not offered:
        raise GossipError(Breach.RECONCILE, "WANT_AGREED from a peer that did not walk")
    if len(frame) != 2 or not isinstance(frame[1], bytes | list):
        raise GossipError(Breach.RECONCILE, "WANT_AGREED carries one selection")
    return frame[1]


def clock_named(frame: list[Any], offered: bool, max_feeds: int) -> list[tuple[int, int, bytes]]:
    """A CLOCK_NAMED frame's notes: (position, seq, tag) each."""
    flat = _flat(frame, 3, offered, max_feeds)
    for at in range(0, len(flat), 3):
        if not (isinstance(flat[at + 2], bytes) and len(flat[at + 2]) == TAG_BYTES):
            raise GossipError(Breach.MALFORMED, f"CLOCK_NAMED: a tag is not {TAG_BYTES} bytes")
    return [tuple(flat[at : at + 3]) for at in range(0, len(flat), 3)]


def want_named(frame: list[Any], offered: bool, max_feeds: int) -> list[tuple[int, int]]:
    """A WANT_NAMED frame's wants: (position, after) each."""
    flat = _flat(frame, 2, offered, max_feeds)
    return [tuple(flat[at : at + 2]) for at in range(0, len(flat), 2)]


def _flat(frame: list[Any], width: int, offered: bool, max_feeds: int) -> list[Any]:
    """A frame naming feeds by position: `width` values an entry, each a position and a
    seq first."""
    kind = FrameKind(frame[0]).name
    if not offered:
        raise GossipError(Breach.RECONCILE, f"{kind} from a peer that did not walk")
    flat = frame[1] if len(frame) == 2 else None
    if not (isinstance(flat, list) and flat and len(flat) % width == 0):
        raise GossipError(Breach.MALFORMED, f"{kind} carries entries of {width} values")
    if len(flat) > width * max_feeds:
        raise GossipError(Breach.TOO_MANY_FEEDS, f"{kind} names over {max_feeds} feeds")
    for at in range(0, len(flat), width):
        if not (is_seq(flat[at]) and is_seq(flat[at + 1])):
            raise GossipError(Breach.MALFORMED, f"{kind}: a position or seq is not a count")
    return flat


def named_frames(
    kind: FrameKind, flat: list[Any], width: int, offered: bool, max_frame: int
) -> bytes:
    """Our CLOCK_NAMED or WANT_NAMED, flat `width` values an entry, in as many frames as
    `CLOCK_CHUNK` entries a frame ask; only to a peer that offered the walk."""
    if not offered:
        raise LocalProtocolError(f"{kind.name} to a peer that did not offer the walk")
    step = width * CLOCK_CHUNK
    return b"".join(
        encode_frame([kind, flat[start : start + step]], max_frame)
        for start in range(0, len(flat), step)
    )
