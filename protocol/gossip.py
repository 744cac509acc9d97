"""The gossip protocol between two nodes, as a sans-IO state machine.

Theory of operation
-------------------
After the secret handshake both sides speak frames (`protocol.framing`),
each a msgpack array whose first element is its kind:

    [HELLO, version, clock, credit]   first frame of each side: its whole
                                      vector clock (feed -> highest seq) and
                                      how many messages it lets the other send
    [CLOCK, changes]                  feeds whose highest seq grew since
    [WANT, {feed: after}]             send me feed's messages after seq
                                      `after`, then keep pushing new ones
    [MESSAGES, [signed bytes, ...]]   messages, each feed's in seq order
    [CREDIT, n]                       you may send n more messages

Flow control is a credit window counted in messages: a side may only send
as many messages as the other has granted, and grants more only after it
has stored what it received, so a fast sender cannot flood a slow
receiver. Everything about *which* messages to send lives with the caller
(it has the store); this machine checks the shape of every frame and the
credit, and turns frames into events. Anything malformed, out of order or
over credit raises `GossipError`; the caller then drops the peer.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from protocol.errors import LocalProtocolError, RemoteProtocolError
from protocol.framing import DEFAULT_MAX_FRAME, FrameDecoder, encode_frame

VERSION = 1
FEED_BYTES = 32


class Kind(enum.IntEnum):
    HELLO = 0
    CLOCK = 1
    WANT = 2
    MESSAGES = 3
    CREDIT = 4


class GossipError(RemoteProtocolError):
    """The peer broke the gossip protocol."""


@dataclass(frozen=True, slots=True)
class PeerHello:
    clock: dict[bytes, int]


@dataclass(frozen=True, slots=True)
class PeerClock:
    changes: dict[bytes, int]


@dataclass(frozen=True, slots=True)
class PeerWants:
    wants: dict[bytes, int]  # feed -> the seq after which to send


@dataclass(frozen=True, slots=True)
class PeerMessages:
    raws: list[bytes]


@dataclass(frozen=True, slots=True)
class PeerCredit:
    granted: int


Event = PeerHello | PeerClock | PeerWants | PeerMessages | PeerCredit


def _clock(value: Any, what: str) -> dict[bytes, int]:
    if not isinstance(value, dict):
        raise GossipError(f"{what}: expected a map of feed to seq")
    for feed, seq in value.items():
        if not (isinstance(feed, bytes) and len(feed) == FEED_BYTES):
            raise GossipError(f"{what}: a feed key is not {FEED_BYTES} bytes")
        if not (isinstance(seq, int) and not isinstance(seq, bool) and 0 <= seq < 1 << 63):
            raise GossipError(f"{what}: a seq is not a non-negative integer")
    return value


def _count(value: Any, what: str) -> int:
    if not (isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 32):
        raise GossipError(f"{what}: not a count")
    return value


class GossipConnection:
    """One side of one gossip connection: frames in, events out; helpers make frames to send."""

    def __init__(self, window: int, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.window = window
        self.max_frame = max_frame
        self._decoder = FrameDecoder(max_frame)
        self.peer_said_hello = False
        self.send_credit = 0  # messages we may still send
        self.receive_allowance = 0  # messages the peer may still send us

    # -- what we send --------------------------------------------------------

    def hello(self, clock: dict[bytes, int]) -> bytes:
        self.receive_allowance = self.window
        return encode_frame([Kind.HELLO, VERSION, clock, self.window], self.max_frame)

    def clock(self, changes: dict[bytes, int]) -> bytes:
        return encode_frame([Kind.CLOCK, changes], self.max_frame)

    def want(self, wants: dict[bytes, int]) -> bytes:
        return encode_frame([Kind.WANT, wants], self.max_frame)

    def messages(self, raws: list[bytes]) -> bytes:
        if len(raws) > self.send_credit:
            raise LocalProtocolError(f"{len(raws)} messages but only {self.send_credit} credit")
        self.send_credit -= len(raws)
        return encode_frame([Kind.MESSAGES, raws], self.max_frame)

    def grant(self, count: int) -> bytes:
        """Let the peer send `count` more messages (after we stored what it sent)."""
        self.receive_allowance += count
        return encode_frame([Kind.CREDIT, count], self.max_frame)

    # -- what we receive -----------------------------------------------------

    def receive_data(self, data: bytes) -> list[Event]:
        self._decoder.receive_data(data)
        events = []
        while (frame := self._decoder.next_frame()) is not None:
            events.append(self._event(frame))
        return events

    def _event(self, frame: Any) -> Event:
        if not isinstance(frame, list) or not frame or not isinstance(frame[0], int):
            raise GossipError("a frame is not a [kind, ...] array")
        try:
            kind = Kind(frame[0])
        except ValueError:
            raise GossipError(f"unknown frame kind {frame[0]}") from None
        if not self.peer_said_hello and kind is not Kind.HELLO:
            raise GossipError("the first frame must be HELLO")
        if kind is Kind.HELLO:
            if self.peer_said_hello or len(frame) != 4:
                raise GossipError("a second or malformed HELLO")
            if frame[1] != VERSION:
                raise GossipError(f"gossip version {frame[1]!r}, we speak {VERSION}")
            self.peer_said_hello = True
            self.send_credit = _count(frame[3], "HELLO credit")
            return PeerHello(_clock(frame[2], "HELLO clock"))
        if len(frame) != 2:
            raise GossipError(f"{kind.name} takes one argument")
        if kind is Kind.CLOCK:
            return PeerClock(_clock(frame[1], "CLOCK"))
        if kind is Kind.WANT:
            return PeerWants(_clock(frame[1], "WANT"))
        if kind is Kind.CREDIT:
            granted = _count(frame[1], "CREDIT")
            self.send_credit += granted
            return PeerCredit(granted)
        raws = frame[1]
        if not isinstance(raws, list) or not all(isinstance(raw, bytes) for raw in raws):
            raise GossipError("MESSAGES must carry a list of byte strings")
        if len(raws) > self.receive_allowance:
            raise GossipError(
                f"{len(raws)} messages sent with only {self.receive_allowance} credit granted"
            )
        self.receive_allowance -= len(raws)
        return PeerMessages(raws)
