"""The archive's schema: the contract between `tangled export` and the pipeline's jobs.

Layout and column meanings: docs/PIPELINE.md, "The archive".

The archive's format is `ARCHIVE_FORMAT`, written to every Parquet file's
schema metadata (`FORMAT_KEY`) and to `archive.json`. Format 2 follows the
message format 2: a timeframe entry carries the tag of the message it names
(`feed`, `seq`, `tag`). Format 1 (entries of `feed` and `seq` only) is
refused (`pipeline.archive.check_format`): its messages are version 1, which
no node accepts any more.
"""

import pyarrow as pa

from tanglenode.protocol.identity import TAG_BYTES

ARCHIVE_FORMAT = 2
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
        ("content", pa.binary()),  # msgpack
        ("signature", pa.binary(64)),
        ("raw", pa.binary()),  # the signed bytes, exactly as received
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
