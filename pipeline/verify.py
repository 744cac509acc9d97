"""`verify`: every row of an archive checked as a node would; a report of what is wrong.

- **Per message** (PyNaCl inside `mapInPandas`, so it runs where the data
  is): the id is recomputed from the signed bytes, the bytes are decoded
  and validated with the node's own `decode_message` (signature included),
  and the decoded author, seq and prev must match the row's columns.
- **Chains**, with a window per author ordered by seq: each message after
  the first must follow the previous seq, and its prev must be that
  message's id.
- **Forks**: two rows with one author and seq.

The result has one row per problem: id, author, seq, reason, detail.
Reasons are the node's reason codes (`docs/FORMAT.md`) plus `id-mismatch`,
`column-mismatch` and `fork`. A bad row never stops the job: every check
turns exceptions into report rows.
"""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd

REPORT_SCHEMA = "id binary, author binary, seq long, reason string, detail string"


def _check_rows(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    from tanglenode.protocol.errors import InvalidMessage
    from tanglenode.protocol.identity import message_id
    from tanglenode.protocol.limits import UNLIMITED
    from tanglenode.protocol.message import decode_message

    for frame in frames:
        bad = []
        for row in frame.itertuples(index=False):
            problem = _problem(row, message_id, decode_message, InvalidMessage, UNLIMITED)
            if problem is not None:
                bad.append((bytes(row.id), bytes(row.author), int(row.seq), *problem))
        yield pd.DataFrame(bad, columns=["id", "author", "seq", "reason", "detail"])


def _problem(row, message_id, decode_message, invalid, unlimited) -> tuple[str, str] | None:
    """(reason, detail) of what is wrong with one row, or None."""
    raw = bytes(row.raw)
    if message_id(raw) != bytes(row.id):
        return "id-mismatch", "the id is not the hash of the signed bytes"
    try:
        message = decode_message(raw, unlimited)
    except invalid as error:
        return str(error.reason), error.detail
    except Exception as error:  # never let one row stop the job
        return "malformed", f"{type(error).__name__}: {error}"
    prev = None if row.prev is None or pd.isna(row.prev) else bytes(row.prev)
    if (message.author, message.seq, message.prev) != (bytes(row.author), row.seq, prev):
        return "column-mismatch", "author, seq or prev differ from the signed bytes"
    return None


def verify(messages):
    """DataFrame of archive messages -> DataFrame of problems (empty when all is well)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    per_row = messages.select("id", "author", "seq", "prev", "raw").mapInPandas(
        _check_rows, REPORT_SCHEMA
    )
    chain = Window.partitionBy("author").orderBy("seq")
    accepted = messages.where(~F.col("evidence"))
    linked = accepted.select(
        "id",
        "author",
        "seq",
        "prev",
        F.lag("seq").over(chain).alias("before_seq"),
        F.lag("id").over(chain).alias("before_id"),
    )
    gaps = _reported(
        linked.where(
            (F.col("seq") > 1)
            & (F.col("before_seq").isNull() | (F.col("before_seq") != F.col("seq") - 1))
        ),
        "missing-previous",
        "the message before it in its feed is not in the archive",
    )
    broken = _reported(
        linked.where(
            (F.col("seq") > 1)
            & (F.col("before_seq") == F.col("seq") - 1)
            & (F.col("prev").isNull() | (F.col("prev") != F.col("before_id")))
        ),
        "chain-mismatch",
        "prev is not the id of the message before it",
    )
    same_place = Window.partitionBy("author", "seq")
    forks = _reported(
        messages.select("id", "author", "seq", F.count("*").over(same_place).alias("n")).where(
            F.col("n") > 1
        ),
        "fork",
        "another valid message has the same author and seq",
    )
    return per_row.unionByName(gaps).unionByName(broken).unionByName(forks)


def _reported(rows, reason: str, detail: str):
    """Report rows: each of `rows` with its reason and detail."""
    from pyspark.sql import functions as F

    return rows.select(
        "id", "author", "seq", F.lit(reason).alias("reason"), F.lit(detail).alias("detail")
    )
