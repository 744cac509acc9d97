"""The typed envelope of a signed header, decoded in C by msgspec.

msgspec checks the type and shape of every header field while it decodes
(32-byte ids, seq >= 1, a map of feed keys to [seq, 16-byte tag], tangle
links with exactly `root` and `previous`, a 32-byte content hash, a content
size, a 64-byte signature, and exactly ten of them: an array of any other
length is malformed), which is most of validation. A failure names
the path of the bad value (`$[5]` is the timeframe), which we turn into the
`Reason` of that field. Re-encoding the envelope and comparing with the
input proves the encoding canonical, once the caller has checked that map
keys ascend.
"""

from __future__ import annotations

import re
from typing import Annotated

import msgspec
from msgspec import Meta

from tanglenode.protocol.errors import Reason
from tanglenode.protocol.identity import TAG_BYTES
from tanglenode.protocol.limits import MAX_SEQ

_Id = Annotated[bytes, Meta(min_length=32, max_length=32)]
_Seq = Annotated[int, Meta(ge=1, le=MAX_SEQ)]
_Tag = Annotated[bytes, Meta(min_length=TAG_BYTES, max_length=TAG_BYTES)]


class Link(msgspec.Struct, forbid_unknown_fields=True):
    """A tangle link as it sits on the wire (fields in canonical key order)."""

    previous: list[_Id] | None
    root: _Id | None


class Envelope(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
    """The signed header of a message of format 3 (docs/FORMAT.md)."""

    version: int
    author: _Id
    seq: _Seq
    prev: _Id | None
    timestamp: Annotated[int, Meta(ge=0, le=MAX_SEQ)]
    timeframe: dict[_Id, tuple[_Seq, _Tag]]
    tangles: dict[str, Link]
    content_hash: _Id
    content_size: Annotated[int, Meta(ge=1, le=2**32 - 1)]
    signature: Annotated[bytes, Meta(min_length=64, max_length=64)]


decode_envelope = msgspec.msgpack.Decoder(Envelope).decode
encode_envelope = msgspec.msgpack.Encoder().encode
DecodeError = msgspec.DecodeError
ValidationError = msgspec.ValidationError

_FIELD_REASONS = {
    0: Reason.UNKNOWN_VERSION,
    1: Reason.BAD_AUTHOR,
    2: Reason.BAD_SEQ,
    3: Reason.BAD_PREV,
    4: Reason.BAD_TIMESTAMP,
    5: Reason.BAD_TIMEFRAME,
    6: Reason.BAD_TANGLES,
    7: Reason.BAD_CONTENT_HASH,
    8: Reason.BAD_CONTENT_HASH,
    9: Reason.BAD_SIGNATURE,
}
_FIELD_PATH = re.compile(r"`\$\[(\d+)\]")  # "at `$[5]`", "at `key` in `$[5]`"


def reason_for(error: msgspec.ValidationError) -> Reason:
    """The reason code of the field a validation error points at (MALFORMED if none)."""
    match = _FIELD_PATH.search(str(error))
    if match is None:
        return Reason.MALFORMED
    return _FIELD_REASONS.get(int(match.group(1)), Reason.MALFORMED)
