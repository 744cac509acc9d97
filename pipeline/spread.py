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

RANK_SCHEMA = "tl int, block int, ref binary, id binary, rank long"
FLOOR_SCHEMA = "tl int, ref binary, block int, floor long"
MAX_BLOCK_EVENTS = 500_000  # members per block at most: one task's memory (the in-memory pass)
MIN_BLOCKS = 8  # at least this many blocks, so a round is spread over as many tasks
LOOP = "the timeline's links loop: the archive's columns are not its messages'"
REBLOCK_EVERY = 2  # rounds between placements by rank, once the rounds outnumber the blocks


def block_count(events: int, min_blocks: int = MIN_BLOCKS) -> int:
    """Blocks for `events` members: `min_blocks`, more when a block would exceed the cap."""
    return max(min_blocks, -(-events // MAX_BLOCK_EVENTS))


def _block_pass(key, members: pd.DataFrame, floors: pd.DataFrame) -> pd.DataFrame:
    """One block: ranks from its floors and its inner links (`ranks_from_floors`)."""
    refs = [bytes(r) for r in members["ref"]]
    links = [[bytes(link) for link in row] for row in members["inner"]]
    floor_of = dict(zip((bytes(r) for r in floors["ref"]), floors["floor"].tolist(), strict=True))
    ranks = ranks_from_floors(refs, links, [floor_of.get(ref, 0) for ref in refs])
    tl, block = (int(part) for part in key)
    return pd.DataFrame(
        {
            "tl": [tl] * len(refs),
            "block": [block] * len(refs),
            "ref": refs,
            "id": [bytes(i) for i in members["id"]],
            "rank": ranks,
        }
    )


class LoopError(ValueError):
    """The links loop: only columns edited after export (not the signed bytes) can do that."""


def _blocks(members, count: int, *order):
    """Members placed in `count` blocks by `order` -> (outer links: tl, ref, block, link,
    partitioned by the link; blocked: tl, ref, id, block, inner links, partitioned by
    block), each checkpointed."""
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
        .localCheckpoint()
    )
    outer = (
        links.where(F.col("block") != F.col("at"))
        .select("tl", "ref", "block", "link")
        .repartition("tl", "link")
        .localCheckpoint()
    )
    inner = (
        links.where(F.col("block") == F.col("at"))
        .groupBy("tl", "ref")
        .agg(F.collect_list("link").alias("inner"))
    )
    blocked = (
        nodes.join(inner, ["tl", "ref"], "left")
        .select("tl", "ref", "id", "block", F.coalesce("inner", no_links).alias("inner"))
        .repartition("tl", "block")
        .localCheckpoint()
    )
    return outer, blocked


def _raised_floors(outer, fresh, floors):
    """The floors `fresh` ranks (tl, ref, block, rank) raise through the outer links ->
    (tl, ref, block, floor) where 1 + the highest rank named beats the floor so far."""
    from pyspark.sql import functions as F

    named = fresh.select("tl", F.col("ref").alias("link"), "rank")
    offered = (
        outer.join(named, ["tl", "link"])
        .groupBy("tl", "ref")
        .agg((F.max("rank") + 1).alias("floor"), F.max("block").alias("block"))
    )
    before = floors.select("tl", "ref", F.col("floor").alias("was"))
    return (
        offered.join(before, ["tl", "ref"], "left")
        .where(F.col("floor") > F.coalesce("was", F.lit(0)))
        .select("tl", "ref", "block", "floor")
        .localCheckpoint()
    )


def _higher(floors, raised):
    """Floors (tl, ref, block, floor) merged with raised ones, the higher of each kept."""
    from pyspark.sql import functions as F

    return (
        floors.unionByName(raised)
        .groupBy("tl", "ref", "block")
        .agg(F.max("floor").alias("floor"))
        .localCheckpoint()
    )


class _Rounds:
    """The ranks so far (`ranks`: tl, block, ref, id, rank, every member) and the blocks'
    floors (`floors`: members with a positive one), advanced a round at a time."""

    def __init__(self, members, count: int, total: int) -> None:
        self.spark = members.sparkSession
        self.members, self.count, self.total = members, count, total
        self.outer, self.blocked = _blocks(members, count, "timestamp")
        self.floors = self.spark.createDataFrame([], FLOOR_SCHEMA)
        self.ranks = self._run(None)
        self.raised = _raised_floors(self.outer, self.ranks, self.floors)

    def _key(self):
        """A block's key as one column: tl * count + block (blocks are numbered 0..count-1)."""
        from pyspark.sql import functions as F

        return F.col("tl").cast("long") * self.count + F.col("block")

    def _run(self, which: list[int] | None):
        """The blocks `which` (keys; None: all) -> their members' ranks, checkpointed."""
        blocked, floors = self.blocked, self.floors
        if which is not None:
            blocked = blocked.where(self._key().isin(which))
            floors = floors.where(self._key().isin(which))
        return (
            blocked.groupBy("tl", "block")
            .cogroup(floors.groupBy("tl", "block"))
            .applyInPandas(_block_pass, RANK_SCHEMA)
            .localCheckpoint()
        )

    def dirty(self) -> list[int]:
        """The keys of the blocks whose floors the last round raised ([]: settled)."""
        from pyspark.sql import functions as F

        found = self.raised.groupBy(self._key().alias("key")).agg(F.max("floor").alias("top"))
        rows = found.collect()
        if rows and max(row.top for row in rows) >= self.total:  # a rank reaches the count
            raise LoopError(LOOP)
        return sorted(row.key for row in rows)

    def advance(self, dirty: list[int], rounds: int) -> int:
        """One more round over the `dirty` blocks (all of them, placed anew, once the rounds
        outnumber the blocks: see the docstring); returns how many blocks ran."""
        if rounds > self.count and (rounds - self.count) % REBLOCK_EVERY == 1:
            return self._place_by_rank()
        self.floors = _higher(self.floors, self.raised)
        fresh = self._run(dirty)
        self.ranks = self.ranks.where(~self._key().isin(dirty)).unionByName(fresh).localCheckpoint()
        self.raised = _raised_floors(self.outer, fresh, self.floors)
        return len(dirty)

    def _place_by_rank(self) -> int:
        """Every member placed anew by (rank so far, timestamp) and run: a member's rank
        so far is a floor of its own, so ranks only grow."""
        from pyspark.sql import functions as F

        was = self.ranks.select("tl", "ref", "rank")
        self.outer, self.blocked = _blocks(
            self.members.join(was, ["tl", "ref"]), self.count, "rank", "timestamp"
        )
        own = self.blocked.join(was, ["tl", "ref"]).select(
            "tl", "ref", "block", F.col("rank").alias("floor")
        )
        empty = self.spark.createDataFrame([], FLOOR_SCHEMA)
        self.floors = _higher(own, _raised_floors(self.outer, self.ranks, empty))
        self.ranks = self._run(None)
        self.raised = _raised_floors(self.outer, self.ranks, self.floors)
        return self.count


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
    return _positions(state.ranks, keys), rounds


def _forget_unreferenced(spark) -> None:
    """Ask the JVM to collect garbage, so Spark's cleaner drops the checkpoints of earlier
    rounds nothing refers to any more (else they wait for its half-hourly sweep)."""
    spark.sparkContext._jvm.System.gc()


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
