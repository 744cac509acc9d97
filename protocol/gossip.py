"""The gossip protocol between two nodes, as a sans-IO state machine.

Theory of operation
-------------------
After the secret handshake both sides speak frames (`protocol.framing`),
each a msgpack array whose first element is its kind:

    [HELLO, version, clock, credit]   first frame of each side: its vector
                                      clock (the rest follows in CLOCK frames
                                      when it is large) and how many messages
                                      it lets the other send
    [CLOCK, changes]                  feeds whose head changed since
    [WANT, {feed: after}]             send me feed's messages after seq
                                      `after`, then keep pushing new ones
    [MESSAGES, [signed bytes, ...]]   messages, each feed's in seq order
    [EVIDENCE, [signed bytes, ...]]   one proof that a feed is invalid: a fork,
                                      exactly `PROOF_MESSAGES` (2) messages
                                      (protocol.evidence)
    [CREDIT, n]                       you may send n more messages
    [ASK, [[feed, seq, tag], ...]]    send me these messages, each as a witness
                                      (up to `MAX_ASK` per frame, `MAX_ASKING`
                                      unanswered at once)
    [WITNESS, [signed bytes, ...]]    messages asked for with ASK
    [UNHELD, [[feed, seq, tag], ...]] asked for with ASK, and not held here
    [PRESENCE, payload]               where our author's caret is in a document
                                      (protocol/presence.py): ephemeral, unsigned,
                                      sent only to a peer that offered it
    [RECONCILE, [range, ...]]         (part of) one message of the walk that
                                      reconciles two clocks (protocol/reconcile.py)
    [WANT_AGREED, selection]          WANT by position among the feeds the walk
                                      found alike, each after the head both hold
    [CLOCK_NAMED, [pos, seq, tag, ...]]  CLOCK and WANT naming feeds by their
    [WANT_NAMED, [pos, after, ...]]      position in the connection's tables
                                         (node/gossip/feed_names.py)

The three frames by position are checked and made by protocol/gossip_named.py,
and the words every frame shares (`FrameKind`, `Breach`, `GossipError`) are
protocol/gossip_kinds.py's; this module names them all for its importers.

A clock maps a feed to `[seq, tag]`: its highest valid seq and that
message's tag, the first `TAG_BYTES` (16) bytes of its id, as timeframes name
messages (protocol.identity). Two nodes at one seq with different
tags hold two branches of a fork: each asks the other for that message, and
the pair becomes a proof. A clock may name at most `max_feeds` feeds per
frame (the caller caps the total it keeps per peer).

Version 5 goes with the signed message format 3 (a signed header, the
content beside it: messages travel in their wire form `[header, content]`,
protocol/wire.py), and is version 4 otherwise: version 4 carried format 2's
messages, which a node of format 3 refuses, one by one, as it would refuse
ours, so the two must not gossip at all. Version 4 added ASK, WITNESS and
UNHELD to version 3: a node fetches a message of a feed it does not carry
that a timeframe names, to learn what it implies (storage/feeds/witnesses.py).
A HELLO of any other version is refused before anything else about it is
looked at, with a reason naming both versions; an older peer refuses ours
the same way.

Presence is no new version: a version-5 node that predates it would refuse
version 6 outright, and a PRESENCE frame (an unknown kind) would drop us.
So a node that speaks it *offers* it within version 5, with a frame every
version-5 node reads as a no-op: `[CREDIT, 0]` (it grants nothing; no
version-5 node sends it otherwise, since a grant gives back what was stored,
at least one message). A PRESENCE frame goes only to a peer whose offer came
(`peer_offered_presence`). Its envelope is this machine's to check, as every
frame's: one payload of 1 to `MAX_PRESENCE_BYTES` bytes, else a breach (a
frame of junk costs its decoding once, and then the connection). What the
payload may say, and how often, is the node's to judge, which drops a bad
one alone (`presence.PresenceDrop`), keeping the peer.

The walk is offered the same way, with `[CLOCK, {}]` (no head changed) as
the first frame after HELLO, which offers presence too (a node that walks
offers presence with `[CREDIT, 0]` only to a peer that does not); a node
that walks sends an empty HELLO clock and walks with a peer whose offer
came (`peer_offered_reconcile`); RECONCILE and WANT_AGREED go to no other.
A walk's message may span frames (the range running to the end closes it):
each frame's shape is checked as it comes (protocol/reconcile_shape.py),
within bounds on a message's frames, ranges and items; what it says is
protocol/reconcile.py's to check.

Every ASK is answered, each entry once, by a WITNESS carrying it or an
UNHELD naming it; this machine keeps what we asked and has not had
answered, and a WITNESS (matched by its tag, the first bytes of its hash)
or UNHELD that answers nothing we asked drops the peer. Answers are not
counted against the credit: what we asked bounds them.

Flow control is a credit window counted in messages (those of EVIDENCE
frames too): a side may only send as many messages as the other has
granted, and grants more only after it has stored what it received, so a
fast sender cannot flood a slow receiver. Everything about *which*
messages to send lives with the caller (it has the store); this machine
checks the shape of every frame and the credit, and turns frames into
events. Anything malformed, out of order or over credit raises
`GossipError`, whose `reason` (a `Breach`) says which rule and whose
`detail` says how; the caller then drops the peer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tanglenode.protocol import gossip_named
from tanglenode.protocol.errors import LocalProtocolError
from tanglenode.protocol.evidence import PROOF_MESSAGES
from tanglenode.protocol.framing import DEFAULT_MAX_FRAME, FrameDecoder, encode_frame
from tanglenode.protocol.gossip_kinds import CLOCK_CHUNK as CLOCK_CHUNK  # these 4: for importers
from tanglenode.protocol.gossip_kinds import Breach as Breach
from tanglenode.protocol.gossip_kinds import FrameKind as FrameKind
from tanglenode.protocol.gossip_kinds import GossipError as GossipError
from tanglenode.protocol.gossip_kinds import is_seq
from tanglenode.protocol.identity import FEED_BYTES, TAG_BYTES, message_id
from tanglenode.protocol.identity import tag_of as tag_of  # a clock head's tag
from tanglenode.protocol.presence import MAX_PRESENCE_BYTES
from tanglenode.protocol.reconcile_shape import ReconcileError, weigh

VERSION = 5  # 4: messages of format 2; 3: of format 1
DEFAULT_MAX_FEEDS = 20_000
MAX_ASK = 64  # entries per ASK (and messages per WITNESS) frame
MAX_ASKING = 256  # entries asked and not yet answered, at most, each way
RECONCILE_FRAME_BYTES = 256 * 1024  # a walk's message goes in frames of about this much
MAX_RECONCILE_FRAMES = 8  # frames one message of the walk may span
MAX_WALK_RANGES = 16_384  # ranges one message of the walk may carry


Clock = dict[bytes, tuple[int, bytes]]  # feed -> (highest valid seq, tag of its id)
Entry = tuple[bytes, int, bytes]  # a message as a timeframe names it: feed, seq, tag


@dataclass(frozen=True, slots=True)
class PeerHello:
    clock: Clock


@dataclass(frozen=True, slots=True)
class PeerClock:
    changes: Clock


@dataclass(frozen=True, slots=True)
class PeerWants:
    wants: dict[bytes, int]  # feed -> the seq after which to send


@dataclass(frozen=True, slots=True)
class PeerMessages:
    raws: list[bytes]


@dataclass(frozen=True, slots=True)
class PeerEvidence:
    raws: list[bytes]


@dataclass(frozen=True, slots=True)
class PeerCredit:
    granted: int


@dataclass(frozen=True, slots=True)
class PeerAsks:
    entries: list[Entry]  # answer each with a WITNESS or an UNHELD


@dataclass(frozen=True, slots=True)
class PeerWitnesses:
    answered: dict[Entry, bytes]  # what we asked -> the signed bytes sent for it


@dataclass(frozen=True, slots=True)
class PeerUnheld:
    entries: list[Entry]  # what we asked and the peer does not hold


@dataclass(frozen=True, slots=True)
class PeerPresence:
    payload: bytes  # 1..MAX_PRESENCE_BYTES; node/gossip/presence.py judges what it says
    offered: bool  # whether the peer had offered presence when it sent this


@dataclass(frozen=True, slots=True)
class PeerOffersPresence:
    pass


@dataclass(frozen=True, slots=True)
class PeerOffersReconcile:
    pass


@dataclass(frozen=True, slots=True)
class PeerWantsAgreed:
    selection: bytes | list[int]  # positions among the walk's agreed feeds (protocol/reconcile.py)


@dataclass(frozen=True, slots=True)
class PeerClockNamed:
    entries: list[tuple[int, int, bytes]]  # (the feed's position in the peer's names, seq, tag)


@dataclass(frozen=True, slots=True)
class PeerWantsNamed:
    entries: list[tuple[int, int]]  # (the feed's position in our names, after)


@dataclass(frozen=True, slots=True)
class PeerReconcile:
    ranges: list[Any]  # one message of the walk, whole (protocol/reconcile.py checks it)


Event = (
    PeerHello
    | PeerClock
    | PeerWants
    | PeerMessages
    | PeerEvidence
    | PeerCredit
    | PeerAsks
    | PeerWitnesses
    | PeerPresence
    | PeerOffersPresence
    | PeerOffersReconcile
    | PeerReconcile
    | PeerWantsAgreed
    | PeerClockNamed
    | PeerWantsNamed
    | PeerUnheld
)


def _feeds(value: Any, what: str, max_feeds: int) -> dict[bytes, Any]:
    if not isinstance(value, dict):
        raise GossipError(Breach.MALFORMED, f"{what}: expected a map keyed by feed")
    if len(value) > max_feeds:
        raise GossipError(
            Breach.TOO_MANY_FEEDS, f"{what}: names {len(value)} feeds, the limit is {max_feeds}"
        )
    for feed in value:
        if not (isinstance(feed, bytes) and len(feed) == FEED_BYTES):
            raise GossipError(Breach.MALFORMED, f"{what}: a feed key is not {FEED_BYTES} bytes")
    return value


def _clock(value: Any, what: str, max_feeds: int) -> Clock:
    clock: Clock = {}
    for feed, head in _feeds(value, what, max_feeds).items():
        if not (
            isinstance(head, list)
            and len(head) == 2
            and is_seq(head[0])
            and isinstance(head[1], bytes)
            and len(head[1]) == TAG_BYTES
        ):
            raise GossipError(
                Breach.MALFORMED, f"{what}: a head is not [seq, {TAG_BYTES}-byte tag]"
            )
        clock[feed] = (head[0], head[1])
    return clock


def _wants(value: Any, max_feeds: int) -> dict[bytes, int]:
    wants = _feeds(value, "WANT", max_feeds)
    if not all(is_seq(after) for after in wants.values()):
        raise GossipError(Breach.MALFORMED, "WANT: a seq is not a non-negative integer")
    return wants


def _raws(value: Any, what: str) -> list[bytes]:
    if not isinstance(value, list) or not all(isinstance(raw, bytes) for raw in value):
        raise GossipError(Breach.MALFORMED, f"{what} must carry a list of byte strings")
    return value


def _entries(value: Any, what: str) -> list[Entry]:
    if not isinstance(value, list) or not value:
        raise GossipError(Breach.MALFORMED, f"{what} must carry a non-empty list of entries")
    if len(value) > MAX_ASK:
        raise GossipError(
            Breach.TOO_MANY_ASKS, f"{what} names {len(value)} messages, the limit is {MAX_ASK}"
        )
    for entry in value:
        if not (
            isinstance(entry, list)
            and len(entry) == 3
            and isinstance(entry[0], bytes)
            and len(entry[0]) == FEED_BYTES
            and is_seq(entry[1])
            and entry[1] > 0
            and isinstance(entry[2], bytes)
            and len(entry[2]) == TAG_BYTES
        ):
            raise GossipError(
                Breach.MALFORMED, f"{what}: an entry is not [feed, seq, {TAG_BYTES}-byte tag]"
            )
    return [(entry[0], entry[1], entry[2]) for entry in value]


def _weight(payload: Any) -> int:
    """About how many bytes a range's payload encodes to (to part a message in frames)."""
    if isinstance(payload, bytes):
        return len(payload)
    if isinstance(payload, list):
        return sum(_weight(each) for each in payload) + 4
    return 9


def _count(value: Any, what: str) -> int:
    if not (isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 32):
        raise GossipError(Breach.MALFORMED, f"{what}: not a count")
    return value


class GossipConnection:
    """One side of one gossip connection: frames in, events out; helpers make frames to send."""

    def __init__(
        self,
        window: int,
        max_frame: int = DEFAULT_MAX_FRAME,
        max_feeds: int = DEFAULT_MAX_FEEDS,
        *,
        walks: bool = True,
    ) -> None:
        self.window = window
        self.max_frame = max_frame
        self.max_feeds = max_feeds
        self._decoder = FrameDecoder(max_frame)
        self.peer_said_hello = False
        self.send_credit = 0  # messages we may still send
        self.receive_allowance = 0  # messages the peer may still send us
        self.asking: dict[bytes, Entry] = {}  # tag -> what we asked and was not answered
        self.asked_of_us = 0  # entries the peer asked and we have not answered
        self.peer_offered_presence = False  # its [CREDIT, 0] came: PRESENCE may go to it
        self.peer_offered_reconcile = False  # its [CLOCK, {}] came right after its HELLO
        self._frames_since_hello = 0
        self.walks = walks  # we walk with a peer that offers to (a node that does not: False)
        self.walk_over = False  # the session's walk ended: no RECONCILE may come
        self._walk_message: list[Any] = []  # ranges of the peer's message so far
        self._walk_frames = self._walk_items = 0

    # -- what we send --------------------------------------------------------

    def hello(self, clock: Clock) -> bytes:
        """HELLO with the first `CLOCK_CHUNK` feeds of our clock, CLOCK frames with the rest."""
        self.receive_allowance = self.window
        entries = [(feed, [seq, tag]) for feed, (seq, tag) in clock.items()]
        frames = [
            encode_frame(
                [FrameKind.HELLO, VERSION, dict(entries[:CLOCK_CHUNK]), self.window], self.max_frame
            )
        ]
        for start in range(CLOCK_CHUNK, len(entries), CLOCK_CHUNK):
            chunk = dict(entries[start : start + CLOCK_CHUNK])
            frames.append(encode_frame([FrameKind.CLOCK, chunk], self.max_frame))
        return b"".join(frames)

    def clock(self, changes: Clock) -> bytes:
        entries = [(feed, [seq, tag]) for feed, (seq, tag) in changes.items()]
        return b"".join(
            encode_frame(
                [FrameKind.CLOCK, dict(entries[start : start + CLOCK_CHUNK])], self.max_frame
            )
            for start in range(0, len(entries), CLOCK_CHUNK)
        )

    def want(self, wants: dict[bytes, int]) -> bytes:
        return encode_frame([FrameKind.WANT, wants], self.max_frame)

    def messages(self, raws: list[bytes]) -> bytes:
        if len(raws) > self.send_credit:
            raise LocalProtocolError(f"{len(raws)} messages but only {self.send_credit} credit")
        self.send_credit -= len(raws)
        return encode_frame([FrameKind.MESSAGES, raws], self.max_frame)

    def evidence(self, raws: list[bytes]) -> bytes:
        """One proof (a fork's two messages); they count against the credit like any others."""
        if len(raws) != PROOF_MESSAGES:
            raise LocalProtocolError(f"a proof is {PROOF_MESSAGES} messages, not {len(raws)}")
        if len(raws) > self.send_credit:
            raise LocalProtocolError(f"{len(raws)} messages but only {self.send_credit} credit")
        self.send_credit -= len(raws)
        return encode_frame([FrameKind.EVIDENCE, raws], self.max_frame)

    def ask(self, entries: list[Entry]) -> bytes:
        """ASK for these messages (a WITNESS or an UNHELD answers each). Answers are matched
        by tag, so no two entries asked and unanswered may share one (`may_ask`)."""
        if not 0 < len(entries) <= MAX_ASK or len(self.asking) + len(entries) > MAX_ASKING:
            raise LocalProtocolError(f"{len(entries)} asks, {len(self.asking)} unanswered")
        if len({entry[2] for entry in entries} | self.asking.keys()) != len(self.asking) + len(
            entries
        ):
            raise LocalProtocolError("two asks unanswered with one tag")
        for entry in entries:
            self.asking[entry[2]] = entry
        return encode_frame([FrameKind.ASK, [list(entry) for entry in entries]], self.max_frame)

    def may_ask(self, entries: list[Entry]) -> list[Entry]:
        """Those of `entries` that may be asked now: none whose tag an ask unanswered (or an
        earlier one of them) has, as many as the bounds allow."""
        tags, fit = set(self.asking), list[Entry]()
        room = min(MAX_ASK, MAX_ASKING - len(self.asking))
        for entry in entries:
            if len(fit) < room and entry[2] not in tags:
                tags.add(entry[2])
                fit.append(entry)
        return fit

    def witnesses(self, raws: list[bytes]) -> bytes:
        """Answer asks with the messages we hold (as many as one frame's bytes allow: the
        caller sends the rest in further frames)."""
        self.asked_of_us -= len(raws)
        return encode_frame([FrameKind.WITNESS, raws], self.max_frame)

    def unheld(self, entries: list[Entry]) -> bytes:
        """Answer asks for messages we do not hold."""
        self.asked_of_us -= len(entries)
        return encode_frame([FrameKind.UNHELD, [list(entry) for entry in entries]], self.max_frame)

    def grant(self, count: int) -> bytes:
        """Let the peer send `count` more messages (after we stored what it sent)."""
        self.receive_allowance += count
        return encode_frame([FrameKind.CREDIT, count], self.max_frame)

    def offer_presence(self) -> bytes:
        """We speak PRESENCE: `[CREDIT, 0]`, a no-op to a node that does not (above)."""
        return encode_frame([FrameKind.CREDIT, 0], self.max_frame)

    def offer_reconcile(self) -> bytes:
        """We reconcile clocks (protocol/reconcile.py), and speak presence: `[CLOCK, {}]`
        right after HELLO, a no-op to a node that does not (above)."""
        return encode_frame([FrameKind.CLOCK, {}], self.max_frame)

    def reconcile(self, ranges: list[Any]) -> bytes:
        """One message of the walk, in as many RECONCILE frames as its size asks (the last
        range, running to the end, closes it)."""
        if not self.peer_offered_reconcile:
            raise LocalProtocolError("RECONCILE to a peer that did not offer it")
        frames, chunk, size = [], list[Any](), 0
        for entry in ranges:
            weight = 64 + _weight(entry[2])
            if chunk and size + weight > RECONCILE_FRAME_BYTES:
                frames.append(encode_frame([FrameKind.RECONCILE, chunk], self.max_frame))
                chunk, size = [], 0
            chunk.append(entry)
            size += weight
        frames.append(encode_frame([FrameKind.RECONCILE, chunk], self.max_frame))
        if len(frames) > MAX_RECONCILE_FRAMES:
            raise LocalProtocolError(f"a walk's message of {len(frames)} frames")
        return b"".join(frames)

    def want_agreed(self, selection: bytes | list[int]) -> bytes:
        """WANT the feeds the walk found alike at these positions, each after the head both
        hold (protocol/reconcile.py, `selection`)."""
        if not self.peer_offered_reconcile:
            raise LocalProtocolError("WANT_AGREED to a peer that did not offer the walk")
        return encode_frame([FrameKind.WANT_AGREED, selection], self.max_frame)

    def clock_named(self, flat: list[Any]) -> bytes:
        """CLOCK notes naming feeds by position, flat `[position, seq, tag, ...]`."""
        offered = self.peer_offered_reconcile
        return gossip_named.named_frames(FrameKind.CLOCK_NAMED, flat, 3, offered, self.max_frame)

    def want_named(self, flat: list[Any]) -> bytes:
        """WANT naming feeds by position, flat `[position, after, ...]`."""
        offered = self.peer_offered_reconcile
        return gossip_named.named_frames(FrameKind.WANT_NAMED, flat, 2, offered, self.max_frame)

    def presence(self, payload: bytes) -> bytes:
        """Where our author is (protocol/presence.py); only once the peer offered it."""
        if not self.peer_offered_presence:
            raise LocalProtocolError("PRESENCE to a peer that did not offer it")
        return encode_frame([FrameKind.PRESENCE, payload], self.max_frame)

    # -- what we receive -----------------------------------------------------

    def receive_data(self, data: bytes) -> list[Event]:
        self._decoder.receive_data(data)
        events = []
        while (frame := self._decoder.next_frame()) is not None:
            if (event := self._event(frame)) is not None:
                events.append(event)
        return events

    def _event(self, frame: Any) -> Event | None:
        if (
            not isinstance(frame, list)
            or not frame
            or not isinstance(frame[0], int)
            or isinstance(frame[0], bool)  # msgpack's true is no frame kind
        ):
            raise GossipError(Breach.NOT_A_FRAME, "a frame is not a [kind, ...] array")
        try:
            kind = FrameKind(frame[0])
        except ValueError:
            raise GossipError(Breach.UNKNOWN_KIND, f"unknown frame kind {frame[0]}") from None
        if not self.peer_said_hello and kind is not FrameKind.HELLO:
            raise GossipError(Breach.NO_HELLO, "the first frame must be HELLO")
        if kind is FrameKind.HELLO:
            return self._hello(frame)
        self._frames_since_hello += 1
        if kind is FrameKind.RECONCILE:
            return self._reconcile(frame)
        offered = self.peer_offered_reconcile
        if kind is FrameKind.WANT_AGREED:
            return PeerWantsAgreed(gossip_named.want_agreed(frame, offered))
        if kind is FrameKind.CLOCK_NAMED:
            return PeerClockNamed(gossip_named.clock_named(frame, offered, self.max_feeds))
        if kind is FrameKind.WANT_NAMED:
            return PeerWantsNamed(gossip_named.want_named(frame, offered, self.max_feeds))
        if kind is FrameKind.PRESENCE:  # the envelope here; the payload the node judges
            if (
                len(frame) != 2
                or not isinstance(frame[1], bytes)
                or not 0 < len(frame[1]) <= MAX_PRESENCE_BYTES
            ):
                raise GossipError(
                    Breach.MALFORMED, f"PRESENCE takes one payload of 1..{MAX_PRESENCE_BYTES} bytes"
                )
            return PeerPresence(frame[1], self.peer_offered_presence)
        if len(frame) != 2:
            raise GossipError(Breach.MALFORMED, f"{kind.name} takes one argument")
        if kind is FrameKind.CLOCK:
            if self._frames_since_hello == 1 and frame[1] == {}:
                self.peer_offered_reconcile = True
                self.peer_offered_presence = True  # a node that walks speaks presence too
                return PeerOffersReconcile()
            return PeerClock(_clock(frame[1], "CLOCK", self.max_feeds))
        if kind is FrameKind.WANT:
            return PeerWants(_wants(frame[1], self.max_feeds))
        if kind is FrameKind.CREDIT:
            granted = _count(frame[1], "CREDIT")
            if granted == 0:
                self.peer_offered_presence = True
                return PeerOffersPresence()
            self.send_credit += granted
            return PeerCredit(granted)
        if kind is FrameKind.ASK:
            return self._asks(_entries(frame[1], "ASK"))
        if kind is FrameKind.UNHELD:
            return PeerUnheld(
                [self._answered(entry[2], "UNHELD") for entry in _entries(frame[1], "UNHELD")]
            )
        if kind is FrameKind.WITNESS:
            raws = _raws(frame[1], "WITNESS")
            if len(raws) > MAX_ASK:
                raise GossipError(Breach.TOO_MANY_ASKS, f"WITNESS carries {len(raws)} messages")
            return PeerWitnesses(
                {self._answered(tag_of(message_id(raw)), "WITNESS"): raw for raw in raws}
            )
        raws = _raws(frame[1], kind.name)
        if kind is FrameKind.EVIDENCE and len(raws) != PROOF_MESSAGES:
            raise GossipError(
                Breach.BAD_EVIDENCE,
                f"EVIDENCE carries {len(raws)} messages; a proof (a fork) is {PROOF_MESSAGES}",
            )
        if len(raws) > self.receive_allowance:
            raise GossipError(
                Breach.OVER_CREDIT,
                f"{len(raws)} messages sent with only {self.receive_allowance} credit granted",
            )
        self.receive_allowance -= len(raws)
        return PeerMessages(raws) if kind is FrameKind.MESSAGES else PeerEvidence(raws)

    def _reconcile(self, frame: list[Any]) -> PeerReconcile | None:
        """A RECONCILE frame: its shape checked as it comes, its ranges gathered until the
        one running to the end closes the message (whose rules protocol/reconcile.py
        checks), within bounds on frames, ranges and items a message."""
        if not (self.walks and self.peer_offered_reconcile) or self.walk_over:
            raise GossipError(Breach.RECONCILE, "RECONCILE outside a walk (did not offer it)")
        if len(frame) != 2 or not isinstance(frame[1], list) or not frame[1]:
            raise GossipError(Breach.RECONCILE, "RECONCILE carries a non-empty list of ranges")
        try:
            ranges, items = weigh(frame[1])
        except ReconcileError as error:
            raise GossipError(Breach.RECONCILE, str(error)) from None
        self._walk_frames += 1
        self._walk_items += items
        if (
            self._walk_frames > MAX_RECONCILE_FRAMES
            or len(self._walk_message) + ranges > MAX_WALK_RANGES
            or self._walk_items > 2 * self.max_feeds
        ):
            raise GossipError(
                Breach.RECONCILE,
                f"a walk's message over {MAX_RECONCILE_FRAMES} frames, {MAX_WALK_RANGES} "
                f"ranges or {2 * self.max_feeds} items",
            )
        self._walk_message += frame[1]
        if frame[1][-1][0] is not None:
            return None  # more of the message follows
        ranges_in, self._walk_message = self._walk_message, []
        self._walk_frames = self._walk_items = 0
        return PeerReconcile(ranges_in)

    def _asks(self, entries: list[Entry]) -> PeerAsks:
        entries = list(dict.fromkeys(entries))  # each answered once, however often asked
        if self.asked_of_us + len(entries) > MAX_ASKING:
            raise GossipError(
                Breach.TOO_MANY_ASKS,
                f"asked {len(entries)} more with {self.asked_of_us} unanswered; the limit "
                f"is {MAX_ASKING}",
            )
        self.asked_of_us += len(entries)
        return PeerAsks(entries)

    def _answered(self, tag: bytes, what: str) -> Entry:
        entry = self.asking.pop(tag, None)
        if entry is None:
            raise GossipError(Breach.UNASKED, f"{what} answers a message we did not ask for")
        return entry

    def _hello(self, frame: list[Any]) -> PeerHello:
        """The peer's HELLO: its version first, whatever the rest of the frame looks like (another
        version may shape HELLO otherwise), then its shape, credit and clock."""
        if self.peer_said_hello:
            raise GossipError(Breach.SECOND_HELLO, "a second HELLO")
        version = frame[1] if len(frame) > 1 else None
        if version != VERSION:
            said = (
                f"gossip version {version}"
                if isinstance(version, int) and not isinstance(version, bool)
                else "no gossip version we can read"
            )
            raise GossipError(Breach.VERSION, f"the peer speaks {said}; we speak {VERSION}")
        if len(frame) != 4:
            raise GossipError(Breach.BAD_HELLO, "HELLO is not [HELLO, version, clock, credit]")
        self.peer_said_hello = True
        self.send_credit = _count(frame[3], "HELLO credit")
        return PeerHello(_clock(frame[2], "HELLO clock", self.max_feeds))
