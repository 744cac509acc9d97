"""The shape of the walk's messages: its modes, and each frame checked as it arrives.

Theory of operation
-------------------
A message of the walk that reconciles two clocks (protocol/reconcile.py)
is a list of ranges, each `[upper, mode, payload]`, and it may span
several RECONCILE frames (protocol/gossip.py gathers them until the range
running to the end closes the message). Before a frame joins the message
its shape is checked here (`weigh`): each range three values, its bound a
key prefix, its mode one of the seven below, and its payload as the mode
has it, items each `[feed, seq, tag]` (`is_item`). What the frame carries,
its ranges and items, is counted so that the caller can bound a message
before holding all of it. What the ranges *say* (bounds in order, items
in their range, sorted and distinct, answers only to what was asked) needs
the whole message and our side of the walk: that is `Reconciliation`'s to
check, in protocol/reconcile.py, which takes its modes and sizes from here.
A frame of the wrong shape raises `ReconcileError`, as any broken rule of
the walk does: the caller drops the peer with its reason.

The modes (protocol/reconcile.py's theory of operation says what each asks
and answers): SKIP, FINGERPRINT, LIST, HASHES, ANSWER, HASH_ANSWER, ITEMS.
"""

from __future__ import annotations

from typing import Any

FEED_BYTES = 32
TAG_BYTES = 16
SHORT_HASH_BYTES = 8

SKIP, FINGERPRINT, LIST, HASHES, ANSWER, HASH_ANSWER, ITEMS = range(7)


class ReconcileError(Exception):
    """The peer broke the walk's rules; the message says which."""


def weigh(ranges: Any) -> tuple[int, int]:
    """Check the shape of one frame's ranges as it arrives (each `[upper, mode, payload]`,
    the payload as its mode has it, items as `[feed, seq, tag]`), before a message's frames
    are gathered: (ranges, items) it carries, for the caller's bounds. The order of bounds
    and what the items say are `Reconciliation.receive`'s to check."""
    if not isinstance(ranges, list):
        raise ReconcileError("a reconciliation frame carries a list of ranges")
    items = 0
    for entry in ranges:
        if not (isinstance(entry, list) and len(entry) == 3):
            raise ReconcileError("a range is [upper, mode, payload]")
        upper, mode, payload = entry
        if upper is not None and not (isinstance(upper, bytes) and 0 < len(upper) <= FEED_BYTES):
            raise ReconcileError("a range's bound is a key prefix")
        if not (isinstance(mode, int) and not isinstance(mode, bool) and 0 <= mode <= ITEMS):
            raise ReconcileError(f"unknown range mode {mode!r}")
        if mode in (LIST, ITEMS):
            items += _shaped_items(payload)
        elif mode in (ANSWER, HASH_ANSWER):
            if not (isinstance(payload, list) and len(payload) == 2):
                raise ReconcileError("an answer is [items, bitmap]")
            items += _shaped_items(payload[0])
        elif mode == HASHES:
            if not isinstance(payload, bytes):
                raise ReconcileError("HASHES is a run of 8-byte hashes")
            items += len(payload) // SHORT_HASH_BYTES
    return len(ranges), items


def _shaped_items(items: Any) -> int:
    if not (isinstance(items, list) and all(is_item(item) for item in items)):
        raise ReconcileError(f"an item is not [feed, seq, {TAG_BYTES}-byte tag]")
    return len(items)


def is_item(item: Any) -> bool:
    return (
        isinstance(item, list)
        and len(item) == 3
        and isinstance(item[0], bytes)
        and len(item[0]) == FEED_BYTES
        and isinstance(item[1], int)
        and not isinstance(item[1], bool)
        and 0 < item[1] < 1 << 63
        and isinstance(item[2], bytes)
        and len(item[2]) == TAG_BYTES
    )
