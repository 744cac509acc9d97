"""`docs`: every document of the archives, woven as a node weaves it: text, authors, blame.

Theory of operation
-------------------
A document is the `doc` tangle rooted at a `doc/init` (docs/DOCUMENTS.md).
The job takes the archive's messages of a `doc` tangle (fork evidence left
out: a node weaves none), groups them by the tangle's root and weaves each
group in one Python worker with `applyInPandas`
(pipeline/document_weave.py: the node's own engine and reads, over a
scratch LMDB). One document is one task, so its size is bounded before any
group is read: a document of more than `MAX_DOCUMENT_MESSAGES` messages or
`MAX_DOCUMENT_BYTES` of headers and contents is not grouped; its row says
`too-large`, with its counts.

**Pending messages.** The node weaves a message once its causal processor
processed it, which it never does for a message whose timeframe names a
message it does not hold. Here a feed is *stuck* from its first message
that names a (feed, seq, tag) the archive does not hold, or whose seq
before it the archive lacks; a document message is marked pending when its
own feed is stuck at or before it, or a timeframe entry names a stuck feed
at or past where it stuck. The weaving carries the mark along the
document's own messages (pipeline/document_weave.py, "Pending").

The result has one row per document (`DOCUMENT_SCHEMA`): its root, title,
creator and creation time, the final text and its length in code points,
the authors (each feed whose messages are woven, with its highest seq woven
and the code points of the text it typed, most first), the blame (the text
in spans, each with the author and the edit that typed it, as `doc blame
--json` gives its `spans`), the versions woven, the messages set aside, and
for a document it cannot read, `unreadable` with a `detail`.
"""

from __future__ import annotations

import pandas as pd

from tanglenode.pipeline.document_weave import MAX_DOCUMENT_BYTES, MAX_DOCUMENT_MESSAGES
from tanglenode.protocol.document import TANGLE
from tanglenode.protocol.identity import TAG_BYTES

DOCUMENT_SCHEMA = (
    "root binary, title string, author binary, created long, text string, length long, "
    "authors array<struct<author: binary, seq: long, chars: long>>, "
    "blame array<struct<text: string, author: binary, msg: binary, erased: binary, "
    "erased_atoms: long>>, "
    "messages long, versions long, set_aside long, pending long, rejected long, "
    "unreadable string, detail string"
)


# The schema's top-level columns, in order (a worker has no session to parse it with).
COLUMNS = (
    "root",
    "title",
    "author",
    "created",
    "text",
    "length",
    "authors",
    "blame",
    "messages",
    "versions",
    "set_aside",
    "pending",
    "rejected",
    "unreadable",
    "detail",
)


def _binary(value) -> bytes | None:
    """A binary cell's bytes; None where it is null."""
    if value is None or (not isinstance(value, bytes | bytearray) and pd.isna(value)):
        return None
    return bytes(value)


def _weave_group(frame: pd.DataFrame) -> pd.DataFrame:
    """One document's rows -> its one output row (pipeline/document_weave.py)."""
    from tanglenode.pipeline.document_weave import weave_document

    root = bytes(frame["root"].iloc[0])
    rows = [
        (bytes(r.id), _binary(r.header), _binary(r.content), bool(r.pending))
        for r in frame.itertuples(index=False)
    ]
    row = weave_document(root, rows)
    return pd.DataFrame([{name: row.get(name) for name in COLUMNS}])


def document_messages(messages):
    """The archive's messages of a `doc` tangle (no fork evidence), with their document's
    root: the tangle's root, or the message's own id for a doc/init."""
    from pyspark.sql import functions as F

    live = messages.where(~F.coalesce(F.col("evidence"), F.lit(False)))
    links = F.filter("tangles", lambda link: link["name"] == TANGLE)
    return live.where(F.size(links) > 0).withColumn(
        "root", F.coalesce(links[0]["root"], F.col("id"))
    )


def stuck_feeds(messages):
    """(feed, stuck_at): each feed's first message that names a message the archive does
    not hold (by feed, seq and tag), or whose seq before it the archive lacks."""
    from pyspark.sql import functions as F

    live = messages.where(~F.coalesce(F.col("evidence"), F.lit(False)))
    held = live.select(
        F.col("author").alias("feed"),
        F.col("seq").alias("named_seq"),
        F.substring("id", 1, TAG_BYTES).alias("tag"),
    )
    entries = live.select("author", "seq", F.explode("timeframe").alias("entry")).select(
        "author",
        "seq",
        F.col("entry.feed").alias("feed"),
        F.col("entry.seq").alias("named_seq"),
        F.col("entry.tag").alias("tag"),
    )
    unnamed = entries.join(held, ["feed", "named_seq", "tag"], "left_anti").select("author", "seq")
    places = held.select(F.col("feed").alias("author"), F.col("named_seq").alias("before"))
    gaps = (
        live.where(F.col("seq") > 1)
        .select("author", "seq", (F.col("seq") - 1).alias("before"))
        .join(places, ["author", "before"], "left_anti")
        .select("author", "seq")
    )
    return (
        unnamed.unionByName(gaps)
        .groupBy(F.col("author").alias("feed"))
        .agg(F.min("seq").alias("stuck_at"))
    )


def _pending_ids(documents, stuck):
    """The ids of document messages the node would not have processed (see the module)."""
    from pyspark.sql import functions as F

    own = documents.join(stuck, documents["author"] == stuck["feed"]).where(
        F.col("seq") >= F.col("stuck_at")
    )
    named = (
        documents.select("id", F.explode("timeframe").alias("entry"))
        .join(stuck, F.col("entry.feed") == stuck["feed"])
        .where(F.col("entry.seq") >= F.col("stuck_at"))
    )
    return own.select("id").unionByName(named.select("id")).distinct()


def documents(messages):
    """DataFrame of archive messages -> one row per document (`DOCUMENT_SCHEMA`)."""
    from pyspark.sql import functions as F

    found = document_messages(messages)
    pending = _pending_ids(found, stuck_feeds(messages)).withColumn("pending", F.lit(True))
    sizes = found.groupBy("root").agg(
        F.count("*").alias("messages"),
        F.sum(F.length("header") + F.coalesce(F.length("content"), F.lit(0))).alias("bytes"),
    )
    too_large = sizes.where(
        (F.col("messages") > MAX_DOCUMENT_MESSAGES) | (F.col("bytes") > MAX_DOCUMENT_BYTES)
    )
    grouped = (
        found.join(too_large.select("root"), "root", "left_anti")
        .join(pending, "id", "left")
        .select(
            "root", "id", "header", "content", F.coalesce("pending", F.lit(False)).alias("pending")
        )
        .groupBy("root")
        .applyInPandas(_weave_group, DOCUMENT_SCHEMA)
    )
    refused = too_large.select(
        "root",
        "messages",
        F.lit("too-large").alias("unreadable"),
        F.format_string(
            f"%d messages, %d bytes: one document's bound is {MAX_DOCUMENT_MESSAGES:,} messages "
            f"and {MAX_DOCUMENT_BYTES:,} bytes",
            "messages",
            "bytes",
        ).alias("detail"),
    )
    return grouped.unionByName(refused, allowMissingColumns=True)
