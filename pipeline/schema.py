"""The archive's schema: the contract between `tangled export` and the pipeline's jobs.

Layout and column meanings: docs/PIPELINE.md, "The archive".

The archive's format is `ARCHIVE_FORMAT`, written to every Parquet file's
schema metadata (`FORMAT_KEY`) and to `archive.json`. Format 3 follows the
message format 3: a message is its signed `header` and its `content` beside
it, null where the store holds the header alone (the content erased, or
never received), so the archive keeps what the node keeps and a header-only
row is a whole message to every job. The other columns are read from the
header (and checked against it by `verify`). Formats 1 (timeframe entries of
`feed` and `seq` only) and 2 (one `raw` column of signed bytes that covered
the content) are refused (`pipeline.archive.check_format`): their messages
are versions 1 and 2, which no node accepts any more.
"""

import pyarrow as pa

from tanglenode.protocol.identity import TAG_BYTES

ARCHIVE_FORMAT = 3
FORMAT_KEY = b"tanglenode.archive.format"

TIMEFRAME_ENTRY = pa.struct(
    [
        ("feed", pa.binary(32)),
        ("seq", pa.int64()),
        ("tag", pa.binary(TAG_BYTES)),  # the first bytes of the named message's id
    ]
)

MESSAGE_SCHEMA = pa.schema(
    [
        ("id", pa.binary(32)),
        ("author", pa.binary(32)),
        ("seq", pa.int64()),
        ("prev", pa.binary(32)),
        ("timestamp", pa.int64()),
        ("timeframe", pa.list_(TIMEFRAME_ENTRY)),
        (
            "tangles",
            pa.list_(
                pa.struct(
                    [
                        ("name", pa.string()),
                        ("root", pa.binary(32)),
                        ("previous", pa.list_(pa.binary(32))),
                    ]
                )
            ),
        ),
        ("content_hash", pa.binary(32)),  # BLAKE2b-256 of the content's canonical bytes
        ("content_size", pa.int64()),  # their length
        ("signature", pa.binary(64)),
        ("header", pa.binary()),  # the signed header, exactly as received: the id is its hash
        ("content", pa.binary()),  # the content's canonical msgpack bytes; null where absent
        ("evidence", pa.bool_()),  # a second message at a stored seq (a fork)
    ],
    metadata={FORMAT_KEY: str(ARCHIVE_FORMAT).encode()},
)

TIMELINE_SCHEMA = pa.schema(
    [
        ("timeline", pa.string()),  # "spacetime", or "tangle:<name>"
        ("root", pa.binary(32)),  # the tangle's root id; null for the spacetime
        ("position", pa.int64()),
        ("rank", pa.int64()),
        ("id", pa.binary(32)),
    ],
    metadata={FORMAT_KEY: str(ARCHIVE_FORMAT).encode()},
)
