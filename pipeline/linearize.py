"""`linearize`: every tangle's order and the spacetime's, as the node computes them.

Why per group and not by joins: a rank is a longest path (docs/TIMELINES.md, "The order"), and
iterating joins until ranks settle needs as many rounds as the DAG is deep,
tens of thousands at a million messages (measured: hours to days). So the
job builds each timeline's events (a tangle's: id and `previous`; the
spacetime's: (author, seq, tag) refs, as the store's `spacetime_ref`, and
`prev` plus every timeframe entry, each bound to its message's tag), groups
them by timeline, and linearizes each group in one Python worker with
`applyInPandas`: a topological pass in memory, or, for a group of more than
`disk_threshold` events, the project's own disk-backed timeline engine in a
scratch LMDB, whose memory stays flat however long the timeline. Both give
the node's order: rank from present predecessors only (links to messages
not in the archive are pending), ties by message id bytes.

Small timelines share a task: they are hashed into buckets of about
`BUCKET_EVENTS` rows, and a bucket's worker linearizes each of its
timelines in turn, since a task per timeline (a thread of three messages)
costs far more than its pass.

Large timelines: a group is one task, so a timeline of more than
`spread_threshold` members (the spacetime of a large archive, above all)
is not grouped: `pipeline/spread.py` computes its ranks in rounds over
blocks of it, one task per block, and sorts it across partitions. Same
ranks, same order; choosing the path costs one count of the members per
timeline.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pandas as pd

from tanglenode.pipeline.ranks import ORDER_SCHEMA, ranks_from_floors
from tanglenode.pipeline.session import kept
from tanglenode.protocol.identity import TAG_BYTES

DISK_THRESHOLD = 500_000
# Members above which a timeline is spread over blocks (pipeline/spread.py) rather than
# grouped into one task: under it, a group's pass takes a second or two, less than a round.
SPREAD_THRESHOLD = 50_000
# Small timelines are linearized many to a task: rows of them per bucket at most, and at
# least this many buckets, so the work spreads over the executors.
BUCKET_EVENTS = 500_000
MIN_BUCKETS = 8


def _seq_bytes(column):
    from pyspark.sql import functions as F

    return F.unhex(F.lpad(F.hex(column), 16, "0"))


def _tag(msg_id):
    """The tag of a message id column (`protocol.identity.tag_of`): its first bytes."""
    from pyspark.sql import functions as F

    return F.substring(msg_id, 1, TAG_BYTES)


def spacetime_ref(feed, seq, tag):
    """`storage.views.timelines.spacetime_ref` as a column: feed + seq (u64 BE) + tag."""
    from pyspark.sql import functions as F

    return F.concat(feed, _seq_bytes(seq), tag)


def timeline_events(messages):
    """Messages -> one row per (timeline, member): timeline, root, ref, id, links, timestamp."""
    from pyspark.sql import functions as F

    accepted = messages.where(~F.col("evidence"))
    tangled = accepted.select("id", "timestamp", F.explode("tangles").alias("t")).select(
        F.concat(F.lit("tangle:"), F.col("t.name")).alias("timeline"),
        F.coalesce(F.col("t.root"), F.col("id")).alias("root"),
        F.col("id").alias("ref"),
        "id",
        F.coalesce(F.col("t.previous"), F.array().cast("array<binary>")).alias("links"),
        "timestamp",
    )
    # A spacetime ref binds a position to one message by its tag, so an entry naming one
    # branch of a forked feed never links to the other branch (storage/views/timelines.py).
    position = spacetime_ref(F.col("author"), F.col("seq"), _tag(F.col("id")))
    previous = F.when(
        F.col("prev").isNotNull(),
        F.array(spacetime_ref(F.col("author"), F.col("seq") - 1, _tag(F.col("prev")))),
    ).otherwise(F.array().cast("array<binary>"))
    entries = F.transform("timeframe", lambda e: spacetime_ref(e["feed"], e["seq"], e["tag"]))
    spacetime = accepted.select(
        F.lit("spacetime").alias("timeline"),
        F.lit(None).cast("binary").alias("root"),
        position.alias("ref"),
        "id",
        F.concat(previous, entries).alias("links"),
        "timestamp",
    )
    return tangled.unionByName(spacetime)


def _ranks_in_memory(refs: list[bytes], links: list[list[bytes]]) -> list[int]:
    """Longest-path ranks by one topological pass (Kahn), links to absent refs ignored."""
    return ranks_from_floors(refs, links, [0] * len(refs))


def _ranks_on_disk(refs: list[bytes], ids: list[bytes], links: Iterable[list[bytes]]):
    """The node's engine in a scratch LMDB; (rank, id) in order."""
    from tanglenode.storage.engine.scratch import run_engine

    events = zip(refs, links, ids, strict=True)
    return run_engine(
        events, timeline=b"t", batch=5000, map_size=2**38, prefix="linearize-"
    ).entries


def linearize_group(frame: pd.DataFrame, disk_threshold: int = DISK_THRESHOLD) -> pd.DataFrame:
    refs = [bytes(r) for r in frame["ref"]]
    ids = [bytes(i) for i in frame["id"]]
    links = [[bytes(link) for link in row] for row in frame["links"]]
    if len(refs) > disk_threshold:
        # Authors' clocks make timestamps roughly causal: in that order few references
        # point at events still to come, and each of those costs the engine a correction.
        times = frame["timestamp"].tolist()
        by_time = sorted(range(len(refs)), key=lambda i: (times[i], refs[i]))
        ordered = _ranks_on_disk(
            [refs[i] for i in by_time], [ids[i] for i in by_time], [links[i] for i in by_time]
        )
    else:
        ranks = _ranks_in_memory(refs, links)
        ordered = sorted(zip(ranks, ids, strict=True))
    timeline, root = frame["timeline"].iloc[0], frame["root"].iloc[0]
    return pd.DataFrame(
        {
            "timeline": timeline,
            "root": [None if root is None else bytes(root)] * len(ordered),
            "position": range(len(ordered)),
            "rank": [rank for rank, _id in ordered],
            "id": [msg_id for _rank, msg_id in ordered],
        }
    )


def linearize_bucket(frame: pd.DataFrame, disk_threshold: int = DISK_THRESHOLD) -> pd.DataFrame:
    """Every timeline in one bucket's rows, each as `linearize_group` orders it, read out of
    the bucket's columns once (a frame a timeline costs more than a thread's pass)."""
    places: dict[tuple[str, bytes | None], list[int]] = {}
    for place, key in enumerate(zip(frame["timeline"], frame["root"], strict=True)):
        places.setdefault(key, []).append(place)
    refs = [bytes(ref) for ref in frame["ref"]]
    ids = [bytes(msg_id) for msg_id in frame["id"]]
    links = [[bytes(link) for link in row] for row in frame["links"]]
    columns: dict[str, list] = {name: [] for name in ("timeline", "root", "position", "rank", "id")}
    for (timeline, root), rows in places.items():
        if len(rows) > disk_threshold:  # a timeline this large is one group of its own
            one = linearize_group(frame.iloc[rows], disk_threshold)
            for name in columns:
                columns[name].extend(one[name].tolist())
            continue
        ranks = _ranks_in_memory([refs[i] for i in rows], [links[i] for i in rows])
        ordered = sorted(zip(ranks, (ids[i] for i in rows), strict=True))
        columns["timeline"].extend([timeline] * len(rows))
        columns["root"].extend([None if root is None else bytes(root)] * len(rows))
        columns["position"].extend(range(len(rows)))
        columns["rank"].extend(rank for rank, _id in ordered)
        columns["id"].extend(msg_id for _rank, msg_id in ordered)
    return pd.DataFrame(columns)


def bucket_count(events: int) -> int:
    """Buckets for `events` rows of small timelines: `MIN_BUCKETS`, more when a bucket would
    pass `BUCKET_EVENTS`."""
    return max(MIN_BUCKETS, -(-events // BUCKET_EVENTS))


def linearize(
    messages,
    disk_threshold: int = DISK_THRESHOLD,
    *,
    spread_threshold: int | None = SPREAD_THRESHOLD,
    blocks: int | None = None,
    on_round: Callable[[int, int], None] | None = None,
):
    """Archive messages -> (timeline, root, position, rank, id) for every timeline.

    A timeline of more than `spread_threshold` members (None: none is) is spread over
    `blocks` blocks (pipeline/spread.py), its rounds run before this returns;
    `on_round(round, blocks run)` is told of each. The others are hashed into buckets of
    many timelines, one task a bucket (`spread_threshold=None`: one task a timeline).
    """
    from pyspark.sql import functions as F

    events = timeline_events(messages)
    if spread_threshold is None:  # every timeline one group, however large: one task each
        return events.groupBy("timeline", "root").applyInPandas(
            lambda group: linearize_group(group, disk_threshold), ORDER_SCHEMA
        )
    from tanglenode.pipeline.spread import spread_order

    # Read three times below (sizes, the spread members, the small timelines): kept once,
    # spilled to disk as it must, rather than the archive read and deduplicated thrice.
    events = kept(events)
    sizes = events.groupBy("timeline", "root").count().transform(kept)  # a row a timeline
    every = sizes.agg(F.sum("count")).first()[0] or 0
    large = [
        (row.timeline, None if row.root is None else bytes(row.root), row["count"])
        for row in sizes.where(F.col("count") > spread_threshold).collect()
    ]

    def grouped(frame, rows: int):
        """Small timelines, hashed into buckets of many each: one task a bucket, not a
        timeline (a task of its own per thread costs more than the thread's pass)."""
        buckets = bucket_count(rows)
        bucket = F.pmod(F.xxhash64("timeline", "root"), F.lit(buckets))
        return (
            frame.withColumn("bucket", bucket)
            .groupBy("bucket")
            .applyInPandas(lambda rows: linearize_bucket(rows, disk_threshold), ORDER_SCHEMA)
        )

    if not large:
        return grouped(events, every)
    spread, _rounds = spread_order(events, sorted(large), blocks=blocks, on_round=on_round)
    spread_keys = events.sparkSession.createDataFrame(
        [(timeline, root) for timeline, root, _size in large], "timeline string, root binary"
    )
    small = events.join(  # by the keys, not the spread rows: those would be computed again
        F.broadcast(spread_keys),
        (events["timeline"] == spread_keys["timeline"])
        & events["root"].eqNullSafe(spread_keys["root"]),
        "left_anti",
    )
    return grouped(small, every - sum(size for _t, _r, size in large)).unionByName(spread)
