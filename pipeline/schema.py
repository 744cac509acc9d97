"""The archive's schema: the contract between `tangled export` and the pipeline's jobs.

Layout and column meanings: docs/PIPELINE.md, "The archive".
"""

import pyarrow as pa

MESSAGE_SCHEMA = pa.schema(
    [
        ("id", pa.binary(32)),
        ("author", pa.binary(32)),
        ("seq", pa.int64()),
        ("prev", pa.binary(32)),
        ("timestamp", pa.int64()),
        ("timeframe", pa.list_(pa.struct([("feed", pa.binary(32)), ("seq", pa.int64())]))),
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
    ]
)

TIMELINE_SCHEMA = pa.schema(
    [
        ("timeline", pa.string()),  # "spacetime", or "tangle:<name>"
        ("root", pa.binary(32)),  # the tangle's root id; null for the spacetime
        ("position", pa.int64()),
        ("rank", pa.int64()),
        ("id", pa.binary(32)),
    ]
)
