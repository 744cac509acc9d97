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
same block or of an earlier one. Each member is numbered then (`n`, unique
over every timeline), and links are turned into numbers once, so the rounds
move 8-byte numbers and ranks, never 56-byte refs. A link is *inner* when
both ends are in one block, *outer* otherwise; links to refs that are not
members are dropped at that point. The blocks with their inner links are
kept partitioned by block, the outer links by the member they name.

Rounds. Each member carries a floor: 1 + the highest rank among the members
its outer links name (0 without outer links). A round runs the in-memory
topological pass (`ranks.ranks_from_floors`) over every block whose floors
grew, one task per block (a cogroup of the block's members with its
floors): rank(m) = max(floor(m), 1 + rank of each inner predecessor).
Floors only grow, so ranks do too, and every rank is the length of a real
path, so never more than the true rank; when a round grows no floor, every
member satisfies the rank's definition, which has one solution on a DAG,
so the ranks are exact. Round 1 runs every block with floors 0; after a
round, only the ranks it just made are joined to the outer links that name
them, and a floor that grew marks its block for the next round. What a
round moves is what it changed: the ranks of the blocks it ran, and the
floors they raised.

How many rounds. The longest path crosses from block to block; each round
settles at least the next crossing. With causal timestamps every outer
link points back in time, and the rounds are at most the number of
blocks. An archive fed out of timestamp order (clocks wrong) has links
pointing forward across blocks and needs more rounds, up to the crossings
on its longest path. So once the rounds outnumber the blocks, every
`REBLOCK_EVERY`th round places the members anew by (rank so far,
timestamp), a far better causal order than wrong clocks, and runs every
block with each member's rank so far as a floor of its own; the result is
exact either way. The alternatives counted in docs/PIPELINE.md ("Large
timelines") took hundreds of rounds, or tens of iterations of ten joins,
at 200,000 messages.

Checkpoints. The state (ranks, floors) is kept (`session.kept`: a
`localCheckpoint`, serialized, spilling to disk) each round, so the plan
of round k does not hold the plans of rounds 1..k-1, and the
JVM is asked to collect after each round, so Spark's cleaner drops the
checkpoints no frame refers to any more.

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
from tanglenode.pipeline.session import kept

RANK_SCHEMA = "tl int, block int, n long, rank long"
FLOOR_SCHEMA = "n long, block int, floor long"
MAX_BLOCK_EVENTS = 500_000  # members per block at most: one task's memory (the in-memory pass)
MIN_BLOCKS = 8  # at least this many blocks, so a round is spread over as many tasks
LOOP = "the timeline's links loop: the archive's columns are not its messages'"
REBLOCK_EVERY = 2  # rounds between placements by rank, once the rounds outnumber the blocks


def block_count(events: int, min_blocks: int = MIN_BLOCKS) -> int:
    """Blocks for `events` members: `min_blocks`, more when a block would exceed the cap."""
    return max(min_blocks, -(-events // MAX_BLOCK_EVENTS))


def _block_pass(key, members: pd.DataFrame, floors: pd.DataFrame) -> pd.DataFrame:
    """One block: ranks from its floors and its inner links (`ranks_from_floors`)."""
    numbers = members["n"].tolist()
    links = [row.tolist() for row in members["inner"]]
    floor_of = dict(zip(floors["n"].tolist(), floors["floor"].tolist(), strict=True))
    ranks = ranks_from_floors(numbers, links, [floor_of.get(n, 0) for n in numbers])
    return pd.DataFrame({"tl": members["tl"], "block": int(key[0]), "n": numbers, "rank": ranks})


class LoopError(ValueError):
    """The links loop: only columns edited after export (not the signed bytes) can do that."""


def _blocks(members, count: int, *order):
    """Members placed in `count` blocks by `order` and numbered -> (nodes: the members'
    columns, n and block; outer links: n, block, link (a number), partitioned by the link;
    blocked: tl, block, n, inner (numbers), partitioned by block), each checkpointed."""
    from pyspark.sql import functions as F

    no_links = F.array().cast("array<long>")
    nodes = (
        members.repartitionByRange(count, "tl", *order, "ref")
        .withColumn("block", F.spark_partition_id())
        .withColumn("n", F.monotonically_increasing_id())  # unique over every timeline
        .transform(kept)
    )
    at = nodes.select("tl", F.col("ref").alias("link"), F.col("n").alias("to"), "block")
    links = (
        nodes.select("tl", "n", F.col("block").alias("from"), F.explode("links").alias("link"))
        .join(at, ["tl", "link"])  # present links only: the others are pending
        .select("n", "from", "to", "block")
        .dropDuplicates(["n", "to"])
        .transform(kept)
    )
    outer = (
        links.where(F.col("from") != F.col("block"))
        .select("n", F.col("from").alias("block"), F.col("to").alias("link"))
        .repartition("link")
        .transform(kept)
    )
    inner = (
        links.where(F.col("from") == F.col("block"))
        .groupBy("n")
        .agg(F.collect_list("to").alias("inner"))
    )
    blocked = (
        nodes.join(inner, "n", "left")
        .select("tl", "block", "n", F.coalesce("inner", no_links).alias("inner"))
        .repartition("block")
        .transform(kept)
    )
    return nodes, outer, blocked


def _raised_floors(outer, fresh, floors):
    """The floors `fresh` ranks (n, rank) raise through the outer links -> (n, block, floor)
    where 1 + the highest rank named beats the floor so far."""
    from pyspark.sql import functions as F

    named = fresh.select(F.col("n").alias("link"), "rank")
    offered = (
        outer.join(named, "link")
        .groupBy("n")
        .agg((F.max("rank") + 1).alias("floor"), F.max("block").alias("block"))
    )
    before = floors.select("n", F.col("floor").alias("was"))
    return (
        offered.join(before, "n", "left")
        .where(F.col("floor") > F.coalesce("was", F.lit(0)))
        .select("n", "block", "floor")
        .transform(kept)
    )


def _higher(floors, raised):
    """Floors (n, block, floor) merged with raised ones, the higher of each kept."""
    from pyspark.sql import functions as F

    return (
        floors.unionByName(raised)
        .groupBy("n", "block")
        .agg(F.max("floor").alias("floor"))
        .transform(kept)
    )


class _Rounds:
    """The ranks so far (`ranks`: tl, block, n, rank, every member) and the blocks' floors
    (`floors`: n, block, floor, the members with a positive one), a round at a time.
    Members are numbered (n) when placed, so rounds move 8-byte numbers, not refs."""

    def __init__(self, members, count: int, total: int) -> None:
        self.spark = members.sparkSession
        self.count, self.total = count, total
        self.nodes, self.outer, self.blocked = _blocks(members, count, "timestamp")
        self.floors = self.spark.createDataFrame([], FLOOR_SCHEMA)
        self.ranks = self._run(None)
        self.raised = _raised_floors(self.outer, self.ranks, self.floors)

    def _run(self, which: list[int] | None):
        """The blocks `which` (None: all) -> their members' ranks, checkpointed."""
        from pyspark.sql import functions as F

        blocked, floors = self.blocked, self.floors
        if which is not None:
            blocked = blocked.where(F.col("block").isin(which))
            floors = floors.where(F.col("block").isin(which))
        return (
            blocked.groupBy("block")
            .cogroup(floors.groupBy("block"))
            .applyInPandas(_block_pass, RANK_SCHEMA)
            .transform(kept)
        )

    def dirty(self) -> list[int]:
        """The blocks whose floors the last round raised ([]: settled)."""
        from pyspark.sql import functions as F

        rows = self.raised.groupBy("block").agg(F.max("floor").alias("top")).collect()
        if rows and max(row.top for row in rows) >= self.total:  # a rank reaches the count
            raise LoopError(LOOP)
        return sorted(row.block for row in rows)

    def advance(self, dirty: list[int], rounds: int) -> int:
        """One more round over the `dirty` blocks (all of them, placed anew, once the rounds
        outnumber the blocks: see the docstring); returns how many blocks ran."""
        from pyspark.sql import functions as F

        if rounds > self.count and (rounds - self.count) % REBLOCK_EVERY == 1:
            return self._place_by_rank()
        self.floors = _higher(self.floors, self.raised)
        fresh = self._run(dirty)
        unchanged = self.ranks.where(~F.col("block").isin(dirty))
        self.ranks = unchanged.unionByName(fresh).transform(kept)
        self.raised = _raised_floors(self.outer, fresh, self.floors)
        return len(dirty)

    def _place_by_rank(self) -> int:
        """Every member placed anew by (rank so far, timestamp) and run: a member's rank
        so far is a floor of its own, so ranks only grow."""
        from pyspark.sql import functions as F

        ranks = self.ranks.select("n", "rank")
        ranked = self.nodes.drop("rank").join(ranks, "n").drop("n", "block")
        self.nodes, self.outer, self.blocked = _blocks(ranked, self.count, "rank", "timestamp")
        own = self.nodes.select("n", "block", F.col("rank").alias("floor"))
        empty = self.spark.createDataFrame([], FLOOR_SCHEMA)
        was = self.nodes.select("n", "rank")
        self.floors = _higher(own, _raised_floors(self.outer, was, empty))
        self.ranks = self._run(None)
        self.raised = _raised_floors(self.outer, self.ranks, self.floors)
        return self.count

    def settled(self):
        """(tl, rank, id) of every member, once `dirty` is empty."""
        return self.ranks.join(self.nodes.select("n", "id"), "n").select("tl", "rank", "id")


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
    members = events.join(F.broadcast(keys), same).select(
        keys["tl"], "ref", "id", "links", "timestamp"
    )
    count = blocks or block_count(total)
    state = _Rounds(members, count, total)
    rounds = 1
    if on_round is not None:
        on_round(rounds, count)
    while dirty := state.dirty():
        ran = state.advance(dirty, rounds)
        rounds += 1
        _forget_unreferenced(spark)
        if on_round is not None:
            on_round(rounds, ran)
    return _positions(state.settled(), keys), rounds


def _forget_unreferenced(spark) -> None:
    """Ask the JVM to collect garbage, so Spark's cleaner drops the checkpoints of earlier
    rounds nothing refers to any more (else they wait for its half-hourly sweep)."""
    spark.sparkContext._jvm.System.gc()


def _positions(ranked, keys):
    """(tl, rank, id) -> ORDER_SCHEMA: a distributed sort by (tl, rank, id), indexed."""
    from pyspark.sql import functions as F

    spark = ranked.sparkSession
    ordered = (
        ranked.select("tl", "rank", "id")
        .orderBy("tl", "rank", "id")
        .withColumn("part", F.spark_partition_id())
        .withColumn("at", F.monotonically_increasing_id())  # (partition << 33) + row in it
        .transform(kept)
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
