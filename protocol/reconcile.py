"""Range-based set reconciliation of two clocks, as a sans-IO machine.

Theory of operation
-------------------
Two gossiping nodes each carry a set of feeds and hold a head of each:
the *items* `(feed, seq, tag)`, at most one per feed. Telling each other
every head (a HELLO clock: about 58 bytes a feed) costs 290 KB for 5,000
feeds however little differs. Instead, the two walk their sets together
by ranges of feed keys, as Negentropy does (range-based set
reconciliation), until each knows the other's items exactly, having sent
little more than the items that differ.

*Fingerprints.* Each item hashes to 16 bytes, BLAKE2b keyed by a salt both
ends share and no one else knows (derived from the connection's keys:
node/net/transport.py), read as an integer. A range's fingerprint is 8
bytes of BLAKE2b (same key) over the sum of its items' hashes (mod 2^128)
and their count. Prefix sums over the sorted items make any range's
fingerprint one subtraction. The salt is why 8 bytes suffice: a third party
who would like two honest nodes to overlook a difference (items whose sums
collide) cannot know the hashes it would have to collide, and the chance
of an accidental match is 2^-64 per comparison. A peer in the walk can lie
as it likes: it only hides its own heads from us, which it could do by
not telling them.

*The walk.* Each message is a list of ranges covering every key, in order,
each `[upper, mode, payload]`: the range runs from the previous range's
upper bound (the empty key at first) up to, not including, `upper` (nil:
to the end). Bounds are the shortest prefixes of a feed key that part two
neighbouring items. The modes:

- 0 SKIP, nil: nothing more to do here.
- 1 FINGERPRINT, 8 bytes: my fingerprint of the range. The reply: SKIP if
  yours is the same; else your items (LIST or HASHES) if you hold at most
  `leaf` there, else the FINGERPRINTs of parts of it of about `leaf` items
  (at most `branch` parts), so that the next reply lists them.
- 2 LIST, `[[feed, seq, tag], ...]`: all my items here. The reply: ANSWER.
- 3 HASHES, bytes: my items here, as 8-byte hashes. The reply: HASH_ANSWER.
- 4 ANSWER, `[items, bitmap]`: my items here that your LIST lacks, and
  which of yours I lack (bit i of the bitmap: your i-th item).
- 5 HASH_ANSWER, `[items, bitmap]`: the same for HASHES. The reply: ITEMS.
- 6 ITEMS, `[[feed, seq, tag], ...]`: the items behind the hashes you lack.

A message that holds none of the modes asking for a reply (1, 2, 3, 5)
ends the walk: whoever sends or receives it is done. Both sides open at
once (`opening`): the follower (`leads` is False at one end of a
connection, True at the other) with the fingerprint of everything, the
leader with those of as many parts of it (up to `opening_parts`) as the
follower's answer can split into leaves (`leaf` x `branch` items a part):
one for up to 800 items, 7 for 5,000. If they match, both are done in one
flight (about 120 bytes in all at 5,000 feeds). Otherwise the follower
answers the leader's opening, and the leader ignores the follower's. A
range that differs is split in parts of about `leaf` items, so that the
next reply lists them: one differing feed among 5,000 costs four flights
(7 parts, about 36 parts, a list of about 20, its answer). Lists go as full items while a message
would list at most `full_list` of them, as hashes beyond (a hundred
differences among 5,000 feeds list 2,000 items in leaves of 20: 8 bytes
each, then the differing ones in full, instead of 56 bytes each).

*What each learns.* A range whose fingerprints matched holds the same
items on both sides; a listed range's items are known exactly from the
lists and answers. So once done, `peer_heads()` is the peer's whole clock:
ours where we agreed, theirs where we listed. What the peer learned of
ours is, likewise, our whole clock as it was when we opened.

*Shapes.* The modes, and the shape each gives its payload, are
protocol/reconcile_shape.py's, which checks each frame of a message as it
arrives (`weigh`), before the message is whole.

*Bounds.* A peer may send at most `max_messages` messages, `max_ranges`
ranges a message and `max_items` items in all, with bounds in order,
items in their range, sorted and distinct, answers only to what we asked:
anything else raises `ReconcileError`, and the caller drops the peer with
its reason. So a peer that lies in fingerprints costs a walk as long as
the bounds, never more.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left, bisect_right
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tanglenode.protocol.reconcile_shape import (
    ANSWER,
    FEED_BYTES,
    FINGERPRINT,
    HASH_ANSWER,
    HASHES,
    ITEMS,
    LIST,
    SHORT_HASH_BYTES,
    SKIP,
    TAG_BYTES,
    ReconcileError,
    is_item,
)

FINGERPRINT_BYTES = 8
_MASK = (1 << 128) - 1

MAX_RANGE_ITEMS = 15_000  # items one range of ours holds at most: its list fits a frame
_ASKING = frozenset({FINGERPRINT, LIST, HASHES, HASH_ANSWER})  # modes that want a reply

Heads = Mapping[bytes, tuple[int, bytes]]  # feed -> (seq, tag)
Range = list[Any]  # [upper | None, mode, payload]


@dataclass
class _Bounds:
    lower: bytes
    upper: bytes | None

    def key(self) -> tuple[bytes, bytes | None]:
        return (self.lower, self.upper)


@dataclass(eq=False)
class Reconciliation:
    """One side of one walk (see the module's theory of operation)."""

    heads: Heads  # our clock when the walk opened
    salt: bytes
    leads: bool
    leaf: int = 20  # list a range holding at most this many of our items
    branch: int = 40  # else split it in parts of about `leaf` items, at most this many
    opening_parts: int = 8  # the leader opens with up to this many fingerprints
    full_list: int = 64  # items a message lists in full at most (else as hashes)
    max_messages: int = 32
    max_ranges: int = 16_384
    max_items: int = 40_000
    done: bool = False
    messages_in: int = 0
    messages_out: int = 0
    _feeds: list[bytes] = field(default_factory=list)
    _sums: list[int] = field(default_factory=list)  # prefix sums of the items' hashes
    _listed: dict[tuple[bytes, bytes | None], list[int]] = field(default_factory=dict)
    _hashed: dict[tuple[bytes, bytes | None], list[int]] = field(default_factory=dict)
    _awaiting_items: dict[tuple[bytes, bytes | None], tuple[list[int], set[bytes]]] = field(
        default_factory=dict
    )
    _known: dict[tuple[bytes, bytes | None], dict[bytes, tuple[int, bytes]]] = field(
        default_factory=dict
    )
    _items_in: int = 0
    _opened: bool = False
    _fingerprinted: list[tuple[bytes, bytes | None]] = field(default_factory=list)  # the
    # ranges our last message fingerprinted: the only ones the peer may ask about next

    def __post_init__(self) -> None:
        self._feeds = sorted(self.heads)
        total, sums = 0, [0]
        for feed in self._feeds:
            total = (total + self._hash_int(feed)) & _MASK
            sums.append(total)
        self._sums = sums

    # -- hashing -----------------------------------------------------------------------

    def _digest(self, feed: bytes) -> bytes:
        seq, tag = self.heads[feed]
        return _item_digest(self.salt, feed, seq, tag)

    def _hash_int(self, feed: bytes) -> int:
        return int.from_bytes(self._digest(feed), "big")

    def _fingerprint(self, lo: int, hi: int) -> bytes:
        total = (self._sums[hi] - self._sums[lo]) & _MASK
        return hashlib.blake2b(
            total.to_bytes(16, "big") + (hi - lo).to_bytes(4, "big"),
            key=self.salt,
            digest_size=FINGERPRINT_BYTES,
        ).digest()

    def _span(self, bounds: _Bounds) -> tuple[int, int]:
        lo = bisect_left(self._feeds, bounds.lower)
        hi = len(self._feeds) if bounds.upper is None else bisect_left(self._feeds, bounds.upper)
        return lo, max(lo, hi)

    def _item(self, index: int) -> list[Any]:
        feed = self._feeds[index]
        seq, tag = self.heads[feed]
        return [feed, seq, tag]

    # -- the walk ----------------------------------------------------------------------

    def opening(self) -> list[Range]:
        """Our first message: the fingerprint of everything; the leader's, of
        `opening_parts` parts of it (the follower then answers one level further down, and
        a walk that differs in nothing still costs both a few dozen bytes)."""
        self._opened = True
        self.messages_out += 1
        count = len(self._feeds)
        parts = min(self.opening_parts, -(-count // (self.leaf * self.branch)))
        if self.leads and parts > 1:  # parts the follower's answer splits into leaves
            opening = self._split(0, count, parts, None)
        else:
            opening = [[None, FINGERPRINT, self._fingerprint(0, count)]]
        self._fingerprinted = _fingerprinted(opening)
        return opening

    def receive(self, ranges: Any) -> list[Range] | None:
        """The peer's message: our reply, or None when we send nothing (then, or once the
        reply asks nothing, `done`)."""
        if self.done:
            raise ReconcileError("a reconciliation message after the walk ended")
        self.messages_in += 1
        if self.messages_in > self.max_messages:
            raise ReconcileError(f"more than {self.max_messages} reconciliation messages")
        parsed = self._parse(ranges)
        if self.messages_in == 1 and self._opened and self.messages_out == 1:
            return self._answer_opening(parsed)
        return self._reply(parsed)

    def _answer_opening(self, parsed: list[tuple[_Bounds, int, Any]]) -> list[Range] | None:
        """The peer's opening crossed ours: done if the two match; else the follower answers
        the leader's, and the leader waits for that answer."""
        if any(mode != FINGERPRINT for _, mode, _ in parsed):
            raise ReconcileError("an opening is fingerprints of every key")
        if all(self._fingerprint(*self._span(bounds)) == fp for bounds, _, fp in parsed):
            self.done = True
            return None
        if self.leads:
            return None
        return self._reply(parsed)

    def _reply(self, parsed: list[tuple[_Bounds, int, Any]]) -> list[Range] | None:
        """Answer every range of the peer's message (see the table above). It may ask
        (fingerprints, lists) only inside the ranges our last message fingerprinted, and
        must answer every list and hash answer of ours: so a walk costs us at most about
        one pass over our clock a message, whatever the peer sends."""
        out: list[Range] = []
        asked = any(mode in _ASKING for _, mode, _ in parsed)
        to_list: list[tuple[_Bounds, int, int]] = []
        owed = self._listed.keys() | self._hashed.keys() | self._awaiting_items.keys()
        inside = _Inside(self._fingerprinted)
        for bounds, mode, payload in parsed:
            if mode in (FINGERPRINT, LIST, HASHES) and not inside(bounds):
                raise ReconcileError("a range asked about that we did not fingerprint")
            if mode == SKIP:
                out.append([bounds.upper, SKIP, None])
            elif mode == FINGERPRINT:
                out += self._compare(bounds, payload, to_list)
            elif mode == LIST:
                out.append(self._answer_list(bounds, payload))
            elif mode == HASHES:
                out.append(self._answer_hashes(bounds, payload))
            elif mode == ANSWER:
                self._take_answer(bounds, payload)
                out.append([bounds.upper, SKIP, None])
            elif mode == HASH_ANSWER:
                out.append(self._take_hash_answer(bounds, payload))
            else:  # ITEMS
                self._take_items(bounds, payload)
                out.append([bounds.upper, SKIP, None])
        unanswered = owed & (
            self._listed.keys() | self._hashed.keys() | self._awaiting_items.keys()
        )
        if unanswered:
            raise ReconcileError(f"{len(unanswered)} of our lists left unanswered")
        out = self._fill_lists(out, to_list)
        out = _merge_skips(out)
        self._fingerprinted = _fingerprinted(out)
        if all(mode == SKIP for _, mode, _ in out):
            self.done = True
            return out if asked else None
        self.messages_out += 1
        if not any(mode in _ASKING for _, mode, _ in out) and not self._awaiting_items:
            self.done = True
        return out

    def _compare(
        self, bounds: _Bounds, theirs: bytes, to_list: list[tuple[_Bounds, int, int]]
    ) -> list[Range]:
        lo, hi = self._span(bounds)
        if self._fingerprint(lo, hi) == theirs:
            return [[bounds.upper, SKIP, None]]
        if hi - lo <= self.leaf:
            to_list.append((bounds, lo, hi))
            return [[bounds.upper, LIST, (lo, hi)]]  # a placeholder, filled in `_fill_lists`
        wanted = -(-(hi - lo) // self.leaf)  # parts of about `leaf` items: listed next
        return self._split(lo, hi, min(self.branch, max(2, wanted)), bounds.upper)

    def _split(self, lo: int, hi: int, count: int, upper: bytes | None) -> list[Range]:
        """The fingerprints of `count` parts of our items `lo`..`hi`, the last ending at
        `upper`."""
        size = hi - lo
        count = max(count, -(-size // MAX_RANGE_ITEMS))  # any list of a part fits a frame
        cuts = sorted({lo + size * k // count for k in range(1, count)} - {lo, hi})
        parts, start = [], lo
        for cut in cuts:
            bound = _separator(self._feeds[cut - 1], self._feeds[cut])
            parts.append([bound, FINGERPRINT, self._fingerprint(start, cut)])
            start = cut
        parts.append([upper, FINGERPRINT, self._fingerprint(start, hi)])
        return parts

    def _fill_lists(self, out: list[Range], to_list: list[tuple[_Bounds, int, int]]) -> list[Range]:
        """The ranges to list, in full while the message lists at most `full_list` items,
        else as hashes."""
        as_hashes = sum(hi - lo for _, lo, hi in to_list) > self.full_list
        lookup = {bounds.upper: (bounds, lo, hi) for bounds, lo, hi in to_list}
        filled = []
        for entry in out:
            if entry[1] != LIST or not isinstance(entry[2], tuple):
                filled.append(entry)
                continue
            bounds, lo, hi = lookup[entry[0]]
            indices = list(range(lo, hi))
            if as_hashes:
                self._hashed[bounds.key()] = indices
                blob = b"".join(self._digest(self._feeds[i])[:SHORT_HASH_BYTES] for i in indices)
                filled.append([bounds.upper, HASHES, blob])
            else:
                self._listed[bounds.key()] = indices
                filled.append([bounds.upper, LIST, [self._item(i) for i in indices]])
        return filled

    def _answer_list(self, bounds: _Bounds, items: Any) -> Range:
        theirs = self._items(bounds, items)
        self._known[bounds.key()] = theirs
        lo, hi = self._span(bounds)
        ours = [self._item(i) for i in range(lo, hi)]
        extra = [item for item in ours if theirs.get(item[0]) != (item[1], item[2])]
        mine = {item[0]: (item[1], item[2]) for item in ours}
        lacking = [mine.get(feed) != head for feed, head in theirs.items()]
        return [bounds.upper, ANSWER, [extra, _bitmap(lacking)]]

    def _answer_hashes(self, bounds: _Bounds, blob: Any) -> Range:
        if not isinstance(blob, bytes) or len(blob) % SHORT_HASH_BYTES:
            raise ReconcileError(f"HASHES is not a run of {SHORT_HASH_BYTES}-byte hashes")
        hashes = [blob[i : i + SHORT_HASH_BYTES] for i in range(0, len(blob), SHORT_HASH_BYTES)]
        self._count_items(len(hashes))
        if len(set(hashes)) != len(hashes):
            raise ReconcileError("HASHES names one hash twice")
        lo, hi = self._span(bounds)
        ours = {self._digest(self._feeds[i])[:SHORT_HASH_BYTES]: i for i in range(lo, hi)}
        theirs = set(hashes)
        extra = [self._item(i) for h, i in ours.items() if h not in theirs]
        lacking = [h not in ours for h in hashes]
        shared = [ours[h] for h in hashes if h in ours]
        unknown = {h for h in hashes if h not in ours}
        self._awaiting_items[bounds.key()] = (shared, unknown)
        return [bounds.upper, HASH_ANSWER, [extra, _bitmap(lacking)]]

    def _take_answer(self, bounds: _Bounds, payload: Any) -> None:
        listed = self._listed.pop(bounds.key(), None)
        if listed is None:
            raise ReconcileError("ANSWER to a range we did not list")
        self._known[bounds.key()] = self._answered(bounds, payload, listed)

    def _take_hash_answer(self, bounds: _Bounds, payload: Any) -> Range:
        hashed = self._hashed.pop(bounds.key(), None)
        if hashed is None:
            raise ReconcileError("HASH_ANSWER to a range we did not list by hashes")
        self._known[bounds.key()] = self._answered(bounds, payload, hashed)
        lacking = _bits(payload[1], len(hashed))
        return [
            bounds.upper,
            ITEMS,
            [self._item(i) for i, lacks in zip(hashed, lacking, strict=True) if lacks],
        ]

    def _answered(
        self, bounds: _Bounds, payload: Any, sent: list[int]
    ) -> dict[bytes, tuple[int, bytes]]:
        """The peer's items in a range we listed: ours it does not lack, and its extras."""
        if not (isinstance(payload, list) and len(payload) == 2):
            raise ReconcileError("an answer is [items, bitmap]")
        extra = self._items(bounds, payload[0])
        lacking = _bits(payload[1], len(sent))
        known = {}
        for index, lacks in zip(sent, lacking, strict=True):
            feed = self._feeds[index]
            if not lacks:
                known[feed] = self.heads[feed]
        for feed, head in extra.items():
            if feed in known:
                raise ReconcileError("an answer both shares and replaces one item")
            known[feed] = head
        return known

    def _take_items(self, bounds: _Bounds, payload: Any) -> None:
        awaited = self._awaiting_items.pop(bounds.key(), None)
        if awaited is None:
            raise ReconcileError("ITEMS for a range we did not answer by hashes")
        shared, unknown = awaited
        items = self._items(bounds, payload)
        behind = {
            _item_digest(self.salt, feed, seq, tag)[:SHORT_HASH_BYTES]
            for feed, (seq, tag) in items.items()
        }
        if len(items) != len(unknown) or behind != unknown:
            raise ReconcileError("ITEMS are not the items behind the hashes we lacked")
        known = {self._feeds[i]: self.heads[self._feeds[i]] for i in shared}
        for feed, head in items.items():
            if feed in known:
                raise ReconcileError("ITEMS names a feed we share")
            known[feed] = head
        self._known[bounds.key()] = known

    # -- what the walk taught ----------------------------------------------------------

    def peer_heads(self) -> dict[bytes, tuple[int, bytes]]:
        """The peer's clock: ours where the fingerprints agreed, theirs where we listed."""
        if not self.done:
            raise RuntimeError("the walk has not ended")
        known = sorted(self._known.items(), key=lambda each: each[0][0])
        lowers = [bounds[0] for bounds, _ in known]
        heads: dict[bytes, tuple[int, bytes]] = {}
        for feed in self._feeds:
            at = bisect_right(lowers, feed) - 1  # the last range starting at or below it
            if at >= 0:
                lower, upper = known[at][0]
                if feed >= lower and (upper is None or feed < upper):
                    continue  # listed: what the peer holds there is in `known`
            heads[feed] = self.heads[feed]
        for _, items in known:
            heads.update(items)
        return heads

    def agreed(self) -> list[bytes]:
        """The feeds whose heads the two hold the same, sorted: the same list at both ends,
        which a WANT may then name by position (`selection`)."""
        theirs = self.peer_heads()
        heads = self.heads
        return [feed for feed in self._feeds if theirs.get(feed) == heads[feed]]

    # -- checking what the peer sent ---------------------------------------------------

    def _parse(self, ranges: Any) -> list[tuple[_Bounds, int, Any]]:
        if not isinstance(ranges, list) or not ranges:
            raise ReconcileError("a reconciliation message is a non-empty list of ranges")
        if len(ranges) > self.max_ranges:
            raise ReconcileError(f"{len(ranges)} ranges, the limit is {self.max_ranges}")
        parsed, lower = [], b""
        for index, entry in enumerate(ranges):
            if not (isinstance(entry, list) and len(entry) == 3):
                raise ReconcileError("a range is [upper, mode, payload]")
            upper, mode, payload = entry
            last = index == len(ranges) - 1
            if last != (upper is None):
                raise ReconcileError("only the last range runs to the end")
            if upper is not None and not (
                isinstance(upper, bytes) and 0 < len(upper) <= FEED_BYTES and upper > lower
            ):
                raise ReconcileError("range bounds must be keys in increasing order")
            if not (isinstance(mode, int) and not isinstance(mode, bool) and 0 <= mode <= ITEMS):
                raise ReconcileError(f"unknown range mode {mode!r}")
            if mode == SKIP and payload is not None:
                raise ReconcileError("SKIP carries nothing")
            if mode == FINGERPRINT and not (
                isinstance(payload, bytes) and len(payload) == FINGERPRINT_BYTES
            ):
                raise ReconcileError(f"a fingerprint is {FINGERPRINT_BYTES} bytes")
            parsed.append((_Bounds(lower, upper), mode, payload))
            lower = upper if upper is not None else lower
        return parsed

    def _count_items(self, count: int) -> None:
        self._items_in += count
        if self._items_in > self.max_items:
            raise ReconcileError(f"more than {self.max_items} items listed")

    def _items(self, bounds: _Bounds, items: Any) -> dict[bytes, tuple[int, bytes]]:
        if not isinstance(items, list):
            raise ReconcileError("items are a list")
        self._count_items(len(items))
        found: dict[bytes, tuple[int, bytes]] = {}
        previous = b""
        for item in items:
            if not is_item(item):
                raise ReconcileError(f"an item is not [feed, seq, {TAG_BYTES}-byte tag]")
            feed = item[0]
            if feed <= previous:
                raise ReconcileError("items must be sorted by feed, each feed once")
            if feed < bounds.lower or (bounds.upper is not None and feed >= bounds.upper):
                raise ReconcileError("an item lies outside its range")
            found[feed] = (item[1], item[2])
            previous = feed
        return found


def _item_digest(salt: bytes, feed: bytes, seq: int, tag: bytes) -> bytes:
    return hashlib.blake2b(feed + seq.to_bytes(8, "big") + tag, key=salt, digest_size=16).digest()


def _separator(before: bytes, after: bytes) -> bytes:
    """The shortest prefix of `after` that sorts above `before`: a bound between them."""
    for length in range(1, len(after) + 1):
        if after[:length] > before:
            return after[:length]
    return after


def _fingerprinted(ranges: list[Range]) -> list[tuple[bytes, bytes | None]]:
    """The bounds of the ranges of a message of ours that carry a fingerprint."""
    found, lower = [], b""
    for upper, mode, _ in ranges:
        if mode == FINGERPRINT:
            found.append((lower, upper))
        lower = upper if upper is not None else lower
    return found


class _Inside:
    """Whether a range lies inside one of some sorted, disjoint ranges."""

    def __init__(self, ranges: list[tuple[bytes, bytes | None]]) -> None:
        self.ranges = ranges
        self.lowers = [lower for lower, _ in ranges]

    def __call__(self, bounds: _Bounds) -> bool:
        at = bisect_right(self.lowers, bounds.lower) - 1
        if at < 0:
            return False
        upper = self.ranges[at][1]
        return upper is None or (bounds.upper is not None and bounds.upper <= upper)


def _merge_skips(ranges: list[Range]) -> list[Range]:
    merged: list[Range] = []
    for entry in ranges:
        if merged and entry[1] == SKIP and merged[-1][1] == SKIP:
            merged[-1] = entry
        else:
            merged.append(entry)
    return merged


def _bitmap(bits: list[bool]) -> bytes:
    out = bytearray((len(bits) + 7) // 8)
    for index, bit in enumerate(bits):
        if bit:
            out[index // 8] |= 1 << (index % 8)
    return bytes(out)


def _bits(bitmap: Any, count: int) -> list[bool]:
    if not isinstance(bitmap, bytes) or len(bitmap) != (count + 7) // 8:
        raise ReconcileError(f"a bitmap of {count} bits is {(count + 7) // 8} bytes")
    bits = [bool(bitmap[i // 8] >> (i % 8) & 1) for i in range(count)]
    if any(bitmap[i // 8] >> (i % 8) & 1 for i in range(count, len(bitmap) * 8)):
        raise ReconcileError("a bitmap sets bits past its count")
    return bits


def selection(chosen: list[bool]) -> bytes | list[int]:
    """Positions in a list both ends know, as whichever is shorter: a bitmap, or the lengths
    of its alternate runs (unchosen first): one run says "all" in a byte or two."""
    runs, current, length = [], False, 0
    for bit in chosen:
        if bit != current:
            runs.append(length)
            current, length = bit, 0
        length += 1
    runs.append(length)
    bitmap = _bitmap(chosen)
    return runs if len(runs) * 3 < len(bitmap) else bitmap


def selected(payload: Any, count: int) -> list[bool]:
    """The positions a `selection` chose in a list of `count`."""
    if isinstance(payload, bytes):
        return _bits(payload, count)
    if not (
        isinstance(payload, list)
        and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in payload)
        and sum(payload) == count
        and len(payload) <= count + 1
    ):
        raise ReconcileError(f"a selection of {count} is a bitmap or runs summing to it")
    chosen: list[bool] = []
    for index, run in enumerate(payload):
        chosen += [index % 2 == 1] * run
    return chosen
