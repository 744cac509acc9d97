"""`verify`: every row of an archive checked as a node would; a report of what is wrong.

- **Per message** (PyNaCl inside `mapInPandas`, so it runs where the data
  is): the id is recomputed from the signed header, the header and its
  content (in their wire form, `protocol.wire.wire`) are decoded and
  validated with the node's own `decode_message` (signature included), a
  content present must have the header's size and hash (else
  `content-mismatch`), and the decoded author, seq, prev, content hash and
  size must match the row's columns. A null content is a header alone (the
  content erased, or never received): a whole message, as in the node.
- **Chains**, joined with the ids the archive holds at each (author, seq):
  each accepted message after the first needs a message at the seq before
  (else `missing-previous`), and its prev must be the id of one of them
  (else `chain-mismatch`): of either branch when the feed forked there.
- **Forks**: two rows with one author and seq.
- **Suspected forks**: a timeframe entry names a message by (feed, seq,
  tag); when the archive holds messages at that (feed, seq) but none whose
  id starts with the tag, the naming message is reported
  (`suspected-fork`, one row per such entry): the feed signed another
  message there that the archive lacks (a fork it holds one branch of), or
  the naming author made the entry up. The node treats such an entry the
  same way (storage/feeds/processor.py, "Suspected forks"). An entry naming a
  place the archive holds nothing at is not reported: archives may be
  partial, and the link is pending, as in the node. Nor is an entry naming
  one branch of a fork the archive holds whole: that is the `fork` rows'.

The result has one row per problem: id, author, seq, reason, detail.
Reasons are the node's reason codes (`docs/FORMAT.md`) plus `id-mismatch`,
`column-mismatch`, `fork` and `suspected-fork`. A bad row never stops the
job: every check turns exceptions into report rows.
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
    from tanglenode.protocol.wire import wire

    for frame in frames:
        bad = []
        for row in frame.itertuples(index=False):
            problem = _problem(row, message_id, decode_message, wire, InvalidMessage, UNLIMITED)
            if problem is not None:
                bad.append((bytes(row.id), bytes(row.author), int(row.seq), *problem))
        yield pd.DataFrame(bad, columns=["id", "author", "seq", "reason", "detail"])


def _binary(value) -> bytes | None:
    """A binary cell's bytes; None where it is null."""
    return None if value is None or pd.isna(value) else bytes(value)


def _problem(row, message_id, decode_message, wire, invalid, unlimited) -> tuple[str, str] | None:
    """(reason, detail) of what is wrong with one row, or None."""
    header = _binary(row.header)
    if header is None:
        return "malformed", "the row has no header"
    if message_id(wire(header, None)) != bytes(row.id):
        return "id-mismatch", "the id is not the hash of the signed header"
    try:
        message = decode_message(wire(header, _binary(row.content)), unlimited)
    except invalid as error:
        return str(error.reason), error.detail
    except Exception as error:  # never let one row stop the job
        return "malformed", f"{type(error).__name__}: {error}"
    if message.content_refused is not None:
        return str(message.content_refused), "the content does not have the header's size and hash"
    signed = (message.author, message.seq, message.prev, message.content_hash, message.content_size)
    columns = (
        bytes(row.author),
        row.seq,
        _binary(row.prev),
        _binary(row.content_hash),
        row.content_size,
    )
    if signed != columns:
        return "column-mismatch", "author, seq, prev, content hash or size differ from the header"
    return None


def verify(messages):
    """DataFrame of archive messages -> DataFrame of problems (empty when all is well)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    signed = ["id", "author", "seq", "prev", "content_hash", "content_size", "header", "content"]
    per_row = messages.select(*signed).mapInPandas(_check_rows, REPORT_SCHEMA)
    # Every place the archive holds and the ids there: more than one when a feed forked.
    held = messages.groupBy(F.col("author").alias("held_feed"), F.col("seq").alias("held_seq")).agg(
        F.collect_set("id").alias("held_ids")
    )
    accepted = messages.where(~F.col("evidence") & (F.col("seq") > 1))
    linked = accepted.join(
        held,
        on=(F.col("author") == F.col("held_feed")) & (F.col("seq") - 1 == F.col("held_seq")),
        how="left",
    )
    gaps = _reported(
        linked.where(F.col("held_ids").isNull()),
        "missing-previous",
        "the message before it in its feed is not in the archive",
    )
    broken = _reported(
        linked.where(
            F.col("held_ids").isNotNull()
            & (F.col("prev").isNull() | ~F.array_contains("held_ids", F.col("prev")))
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
    return (
        per_row.unionByName(gaps)
        .unionByName(broken)
        .unionByName(forks)
        .unionByName(_suspected_forks(messages, held))
    )


def _suspected_forks(messages, held):
    """Report rows of the timeframe entries whose tag no message held at their place has."""
    from pyspark.sql import functions as F

    from tanglenode.protocol.identity import TAG_BYTES

    entries = messages.select("id", "author", "seq", F.explode("timeframe").alias("e")).select(
        "id",
        "author",
        "seq",
        F.col("e.feed").alias("named_feed"),
        F.col("e.seq").alias("named_seq"),
        F.col("e.tag").alias("named_tag"),
    )
    same_place = (F.col("named_feed") == F.col("held_feed")) & (
        F.col("named_seq") == F.col("held_seq")
    )
    named_held = F.exists(
        "held_ids", lambda held_id: F.substring(held_id, 1, TAG_BYTES) == F.col("named_tag")
    )
    unheld = entries.join(held, on=same_place, how="inner").where(~named_held)
    feed = F.translate(F.regexp_replace(F.base64("named_feed"), "=", ""), "+/", "-_")
    detail = F.concat(
        F.lit("names @"),
        feed,
        F.lit(" seq "),
        F.col("named_seq").cast("string"),
        F.lit(" by tag "),
        F.lower(F.hex("named_tag")),
        F.lit(", not the tag held there"),
    )
    return unheld.select(
        "id", "author", "seq", F.lit("suspected-fork").alias("reason"), detail.alias("detail")
    )


def _reported(rows, reason: str, detail: str):
    """Report rows: each of `rows` with its reason and detail."""
    from pyspark.sql import functions as F

    return rows.select(
        "id", "author", "seq", F.lit(reason).alias("reason"), F.lit(detail).alias("detail")
    )
