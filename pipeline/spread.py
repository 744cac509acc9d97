"""Ranks of large timelines computed in rounds over blocks, so no task holds a whole timeline.

Theory of operation
-------------------
A rank is a longest path: rank(m) = 0 when none of m's links names a member
of its timeline, else 1 + the highest rank among those it names (pending
links, to members not here, count for nothing). The order is (rank, id).
`linearize` hands every timeline above its threshold to `spread_order`,
which computes exactly that without grouping a timeline into one task.

Blocks. The members of the large timelines are range-partitioned by
(timeline, timestamp, ref) into blocks of about equal size: authors'
clocks make timestamps roughly causal, so most links name a member of the
same block or of an earlier one. A link is *inner* when both ends are in
one block, *outer* otherwise; links to refs that are not members are
dropped once, at the start.

Rounds. Each member carries a floor: 1 + the highest current rank among
the members its outer links name (0 without outer links). A round runs the
in-memory topological pass (`ranks.ranks_from_floors`) over every
block whose floors grew, one task per block: rank(m) = max(floor(m),
m's own rank so far, 1 + rank of each inner predecessor). Every rank is the
length of a real path, so never more than the true rank, and ranks only
grow; when a round grows no floor, every member satisfies the rank's
definition, which has one solution on a DAG, so the ranks are exact.
Round 1 runs every block with floors 0; after it, a round runs only the
blocks whose floors an earlier round's new ranks grew.

How many rounds. The longest path crosses from block to block; each round
settles at least the next crossing. With causal timestamps every outer
link points back in time, and the rounds are at most the number of
blocks. An archive fed out of timestamp order (clocks wrong) has links
pointing forward across blocks and needs more rounds, up to the crossings
on its longest path. So once the rounds outnumber the blocks, every
`REBLOCK_EVERY`th round places the members anew by (rank so far,
timestamp), a far better causal order than wrong clocks, and runs every
block; the result is exact either way. In causal order the work is about
(blocks / 2) passes over the timeline, spread over as many tasks as blocks,
and every round is a few shuffles; the alternatives counted in
docs/PIPELINE.md ("Large timelines") took hundreds of rounds, or tens of
iterations of ten joins, at 200,000 messages.

Checkpoints. Ranks and floors are `localCheckpoint`ed each round, so the
plan of round k does not hold the plans of rounds 1..k-1.

Positions. The settled ranks are sorted by (timeline, rank, id) with a
range-partitioned sort; each row's place in its sorted partition plus the
sizes of the partitions before it give a global index, and the index of a
timeline's first row turns it into a position. Nothing is collected to the
driver but a count per block and per partition.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from tanglenode.pipeline.ranks import ORDER_SCHEMA, ranks_from_floors

RANK_SCHEMA = "tl int, ref binary, rank long"
MAX_BLOCK_EVENTS = 500_000  # members per block at most: one task's memory (the in-memory pass)
MIN_BLOCKS = 8  # at least this many blocks, so a round is spread over as many tasks
LOOP = "the timeline's links loop: the archive's columns are not its messages'"
REBLOCK_EVERY = 2  # rounds between placements by rank, once the rounds outnumber the blocks


def block_count(events: int, min_blocks: int = MIN_BLOCKS) -> int:
    """Blocks for `events` members: `min_blocks`, more when a block would exceed the cap."""
    return max(min_blocks, -(-events // MAX_BLOCK_EVENTS))


def _block_pass(frame: pd.DataFrame) -> pd.DataFrame:
    """One block: ranks from the floors and the inner links (`ranks_from_floors`)."""
    refs = [bytes(r) for r in frame["ref"]]
    links = [[bytes(link) for link in row] for row in frame["inner"]]
    ranks = ranks_from_floors(refs, links, frame["floor"].tolist())
    return pd.DataFrame({"tl": frame["tl"].to_numpy(), "ref": refs, "rank": ranks})


class LoopError(ValueError):
    """The links loop: only columns edited after export (not the signed bytes) can do that."""


def _blocks(members, count: int, *order):
    """Members placed in `count` blocks by `order` -> (placed: tl, ref, id, block; outer
    links: tl, ref, link; blocked: tl, ref, block, inner links), each checkpointed."""
    from pyspark.sql import functions as F

    no_links = F.array().cast("array<binary>")
    nodes = (
        members.repartitionByRange(count, "tl", *order, "ref")
        .withColumn("block", F.spark_partition_id())
        .localCheckpoint()
    )
    at = nodes.select("tl", F.col("ref").alias("link"), F.col("block").alias("at"))
    links = (
        nodes.select("tl", "ref", "block", F.explode("links").alias("link"))
        .join(at, ["tl", "link"])  # present links only: the others are pending
        .dropDuplicates(["tl", "ref", "link"])
    )
    outer = links.where(F.col("block") != F.col("at")).select("tl", "ref", "link").localCheckpoint()
    inner = (
        links.where(F.col("block") == F.col("at"))
        .groupBy("tl", "ref")
        .agg(F.collect_list("link").alias("inner"))
    )
    blocked = (
        nodes.join(inner, ["tl", "ref"], "left")
        .select("tl", "ref", "block", F.coalesce("inner", no_links).alias("inner"))
        .localCheckpoint()
    )
    return nodes.select("tl", "ref", "id", "block"), outer, blocked


def _floors(outer, ranks):
    """Outer links and ranks -> (tl, ref, floor): 1 + the highest rank a member's outer
    links name; members without outer links have no row (their floor is 0)."""
    from pyspark.sql import functions as F

    named = ranks.select("tl", F.col("ref").alias("link"), "rank")
    return (
        outer.join(named, ["tl", "link"])
        .groupBy("tl", "ref")
        .agg((F.max("rank") + 1).alias("floor"))
        .localCheckpoint()
    )


def spread_order(
    events,
    timelines: list[tuple[str, bytes | None, int]],
    *,
    blocks: int | None = None,
    on_round: Callable[[int, int], None] | None = None,
):
    """events (timeline, root, ref, id, links, timestamp) of the large `timelines`
    ((timeline, root, members) each) -> (ORDER_SCHEMA rows, rounds run).

    `blocks`: how many (default `block_count`); `on_round(round, blocks run)` after each.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    spark = events.sparkSession
    total = sum(size for _t, _r, size in timelines)
    keys = spark.createDataFrame(
        [(n, name, root) for n, (name, root, _size) in enumerate(timelines)],
        T.StructType(
            [
                T.StructField("tl", T.IntegerType()),
                T.StructField("timeline", T.StringType()),
                T.StructField("root", T.BinaryType()),
            ]
        ),
    )
    same = (events["timeline"] == keys["timeline"]) & events["root"].eqNullSafe(keys["root"])
    members = (
        events.join(F.broadcast(keys), same)
        .select(keys["tl"], "ref", "id", "links", "timestamp")
        .localCheckpoint()
    )
    count = blocks or block_count(total)
    nodes, outer, blocked = _blocks(members, count, "timestamp")

    def run(which, floors, ranks):
        """The blocks `which` (tl, block; None: all) -> their members' new ranks."""
        frame = blocked if which is None else blocked.join(F.broadcast(which), ["tl", "block"])
        if floors is not None:
            frame = frame.join(floors, ["tl", "ref"], "left")
        else:
            frame = frame.withColumn("floor", F.lit(None).cast("long"))
        if ranks is not None:  # a member's own rank so far is a floor too: ranks only grow
            frame = frame.join(ranks.withColumnRenamed("rank", "was"), ["tl", "ref"], "left")
            frame = frame.withColumn("floor", F.greatest("floor", "was"))
        frame = frame.withColumn("floor", F.coalesce("floor", F.lit(0).cast("long")))
        return frame.groupBy("tl", "block").applyInPandas(_block_pass, RANK_SCHEMA)

    ranks = run(None, None, None).localCheckpoint()
    rounds, floors = 1, None
    if on_round is not None:
        on_round(rounds, count)
    while True:
        new_floors = _floors(outer, ranks)
        if floors is None:
            grown = new_floors  # every floor was 0; a positive one is new
        else:
            before = floors.select("tl", "ref", F.col("floor").alias("was"))
            grown = new_floors.join(before, ["tl", "ref"], "left").where(
                F.col("floor") > F.coalesce("was", F.lit(0))
            )
        dirty = (
            grown.join(blocked.select("tl", "ref", "block"), ["tl", "ref"])
            .groupBy("tl", "block")
            .agg(F.max("floor").alias("highest"))
            .collect()
        )
        if not dirty:
            break
        if max(row.highest for row in dirty) >= total:  # a rank reaches the member count
            raise LoopError(LOOP)
        if rounds > count and (rounds - count) % REBLOCK_EVERY == 1:
            # More rounds than blocks: clocks are out of causal order. The ranks so far are
            # a better order than the timestamps: place the members by them (docstring).
            ranked = members.join(ranks, ["tl", "ref"])
            nodes, outer, blocked = _blocks(ranked, count, "rank", "timestamp")
            floors, which, ran = _floors(outer, ranks), None, count
        else:
            floors = new_floors
            which = spark.createDataFrame([(r.tl, r.block) for r in dirty], "tl int, block int")
            ran = len(dirty)
        fresh = run(which, floors, ranks)
        if which is not None:
            kept = ranks.join(blocked.select("tl", "ref", "block"), ["tl", "ref"]).join(
                F.broadcast(which), ["tl", "block"], "left_anti"
            )
            fresh = kept.select("tl", "ref", "rank").unionByName(fresh)
        ranks = fresh.localCheckpoint()
        rounds += 1
        if on_round is not None:
            on_round(rounds, ran)
    return _positions(ranks.join(nodes.select("tl", "ref", "id"), ["tl", "ref"]), keys), rounds


def _positions(ranked, keys):
    """(tl, ref, rank, id) -> ORDER_SCHEMA: a distributed sort by (tl, rank, id), indexed."""
    from pyspark.sql import functions as F

    spark = ranked.sparkSession
    ordered = (
        ranked.select("tl", "rank", "id")
        .orderBy("tl", "rank", "id")
        .withColumn("part", F.spark_partition_id())
        .withColumn("at", F.monotonically_increasing_id())  # (partition << 33) + row in it
        .localCheckpoint()
    )
    sizes = sorted(tuple(row) for row in ordered.groupBy("part").count().collect())
    starts, before = [], 0
    for part, size in sizes:
        starts.append((part, before))
        before += size
    offsets = spark.createDataFrame(starts, "part int, before long")
    indexed = ordered.join(F.broadcast(offsets), "part").withColumn(
        "index", F.col("before") + F.col("at") - F.shiftleft(F.col("part").cast("long"), 33)
    )
    firsts = indexed.groupBy("tl").agg(F.min("index").alias("first"))  # one row a timeline
    return (
        indexed.join(F.broadcast(firsts), "tl")
        .withColumn("position", F.col("index") - F.col("first"))
        .join(F.broadcast(keys), "tl")
        .select("timeline", "root", "position", "rank", "id")
        .selectExpr(*_order_columns())
    )


def _order_columns() -> list[str]:
    """ORDER_SCHEMA's columns cast to its types."""
    fields = [part.strip().split(" ") for part in ORDER_SCHEMA.split(",")]
    return [f"cast({name} as {kind}) as {name}" for name, kind in fields]
