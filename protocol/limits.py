"""Size limits a message must respect. Configurable; these are the defaults."""

from __future__ import annotations

from dataclasses import dataclass

MAX_SEQ = 2**63 - 1  # seqs, positions, versions and counts: what msgpack's int64 and the store hold
MAX_TANGLE_NAME_BYTES = 64
# The most entries an honest timeframe holds (docs/PROCESSING.md, "The timeframe cap"): 32
# entries of at most 62 bytes each take under 2 KiB, so a message with 16 tangles of 16
# previous ids each still has about 3 KiB of its 16 KiB for content, whatever the network.
TIMEFRAME_CAP = 32


@dataclass(frozen=True, slots=True)
class Limits:
    max_message_bytes: int = 16 * 1024
    max_tangles: int = 16
    max_previous: int = 16
    max_timeframe_entries: int = 64  # a publisher names at most TIMEFRAME_CAP (32)
    max_tangle_name_bytes: int = MAX_TANGLE_NAME_BYTES
    max_content_depth: int = 32  # nested arrays and maps in the content


DEFAULT_LIMITS = Limits()

# For bytes this node already accepted: limits may have been lowered since.
UNLIMITED = Limits(
    max_message_bytes=2**31,
    max_tangles=2**31,
    max_previous=2**31,
    max_timeframe_entries=2**31,
    max_tangle_name_bytes=255,
    max_content_depth=2**31,  # the walk is iterative; msgpack itself stops below 512
)
