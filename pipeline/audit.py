"""`audit`: a node's exported timelines against the batch linearization, difference by difference.

Both sides are (timeline, root, position, rank, id) rows. A full outer join
on (timeline, root, position) finds every position where they disagree:
`missing-in-node`, `missing-in-batch`, `different-message` or
`different-rank`. No rows means the node's incremental timelines are
exactly the batch result.
"""

from __future__ import annotations


def audit(node_timelines, batch_timelines):
    from pyspark.sql import functions as F

    node = node_timelines.select(
        "timeline",
        "root",
        "position",
        F.col("rank").alias("node_rank"),
        F.col("id").alias("node_id"),
    ).alias("node")
    batch = batch_timelines.select(
        F.col("timeline").alias("b_timeline"),
        F.col("root").alias("b_root"),
        F.col("position").alias("b_position"),
        F.col("rank").alias("batch_rank"),
        F.col("id").alias("batch_id"),
    ).alias("batch")
    same_place = (
        (F.col("timeline") == F.col("b_timeline"))
        & F.col("root").eqNullSafe(F.col("b_root"))  # the spacetime's root is null
        & (F.col("position") == F.col("b_position"))
    )
    joined = node.join(batch, on=same_place, how="full_outer").select(
        F.coalesce("timeline", "b_timeline").alias("timeline"),
        F.coalesce("root", "b_root").alias("root"),
        F.coalesce("position", "b_position").alias("position"),
        "node_rank",
        "node_id",
        "batch_rank",
        "batch_id",
    )
    kind = (
        F.when(F.col("node_id").isNull(), "missing-in-node")
        .when(F.col("batch_id").isNull(), "missing-in-batch")
        .when(F.col("node_id") != F.col("batch_id"), "different-message")
        .when(F.col("node_rank") != F.col("batch_rank"), "different-rank")
    )
    return joined.withColumn("difference", kind).where(F.col("difference").isNotNull())
