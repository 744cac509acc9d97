"""Key encodings the timeline engine and the store share: big-endian integers, names shown.

Big-endian so that LMDB's byte order is the integers' order.
"""

from __future__ import annotations

import struct

from tanglenode.protocol.identity import message_text

U64 = struct.Struct(">Q")  # seqs, indexes and counters, big-endian so keys sort by value
U32 = struct.Struct(">I")


def timeline_label(name: bytes) -> str:
    """A timeline's name as a person reads it (names: storage.views.timelines)."""
    kind, rest = name[:1], name[1:]
    suffix = ""
    if kind == b"\x03":  # the causal-time order of the timeline named by the rest
        kind, rest, suffix = rest[:1], rest[1:], " (causal-time)"
    elif kind == b"\x02":  # a tangle's joined view
        kind, suffix = b"\x01", " (joined)"
    if kind == b"\x00":
        return "spacetime" + suffix
    if kind == b"\x01" and len(rest) > 33:
        return f"{rest[33:].decode(errors='replace')}/{message_text(rest[:32])}{suffix}"
    return repr(name)
