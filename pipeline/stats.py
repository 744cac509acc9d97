"""`stats`: what an archive holds, per tangle and in all.

Per timeline (each tangle, and the spacetime): messages, width (distinct
authors), height (highest rank + 1) and the widest rank (most messages of
one rank). The totals row (`timeline` = "all") counts feeds, messages, fork
evidence and tangles.
"""

from __future__ import annotations


def stats(messages, orders):
    """Archive messages and `linearize` output -> one row per timeline plus a totals row."""
    from pyspark.sql import functions as F

    authors = messages.where(~F.col("evidence")).select("id", "author")
    # The spacetime's root is null, and null never equals null in a join: key on a stand-in.
    keyed = orders.withColumn("root_key", F.coalesce("root", F.unhex(F.lit(""))))
    per_rank = keyed.groupBy("timeline", "root_key", "rank").agg(F.count("*").alias("at_rank"))
    widest = per_rank.groupBy("timeline", "root_key").agg(F.max("at_rank").alias("widest_rank"))
    per_timeline = (
        keyed.join(authors, on="id")
        .groupBy("timeline", "root_key")
        .agg(
            F.first("root").alias("root"),
            F.count("*").alias("messages"),
            F.countDistinct("author").alias("width"),
            (F.max("rank") + 1).alias("height"),
        )
        .join(widest, on=["timeline", "root_key"])
        .drop("root_key")
        .withColumn("feeds", F.lit(None).cast("long"))
        .withColumn("fork_evidence", F.lit(None).cast("long"))
        .withColumn("tangles", F.lit(None).cast("long"))
    )
    totals = messages.agg(
        F.lit("all").alias("timeline"),
        F.lit(None).cast("binary").alias("root"),
        F.sum(F.when(~F.col("evidence"), 1).otherwise(0)).cast("long").alias("messages"),
        F.lit(None).cast("long").alias("width"),
        F.lit(None).cast("long").alias("height"),
        F.lit(None).cast("long").alias("widest_rank"),
        F.countDistinct("author").alias("feeds"),
        F.sum(F.when(F.col("evidence"), 1).otherwise(0)).cast("long").alias("fork_evidence"),
    ).crossJoin(
        orders.where(F.col("timeline") != "spacetime")
        .select("timeline", "root")
        .distinct()
        .agg(F.count("*").alias("tangles"))
    )
    return per_timeline.unionByName(totals)
