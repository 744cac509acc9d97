"""linearize's spread path (pipeline/spread.py): large timelines ranked in rounds over blocks,
equal to the one-task groups and to the node, on generated graphs and a real store's archive."""

import random

import pytest

from tanglenode.pipeline.archive import read_messages, read_timelines
from tanglenode.pipeline.linearize import linearize
from tanglenode.pipeline.spread import LoopError
from tests.pipeline.archives import graph_rows, write_messages

COLUMNS = ["timeline", "root", "position", "rank", "id"]


def rows_of(frame) -> list[tuple]:
    return sorted(tuple(row) for row in frame.select(*COLUMNS).collect())


def generated(spark, folder, seed: int, count: int = 400, **shape):
    rows = graph_rows(random.Random(seed), count, feeds=12, **shape)
    return read_messages(spark, [write_messages(folder, rows)])


@pytest.mark.slow  # 45 s here with the first UDF's start; the generated graphs run in `make test`
def test_the_spread_path_equals_the_nodes_timelines(spark, archive):
    out, _feeds = archive
    rounds = []
    spread = linearize(
        read_messages(spark, [out]),
        spread_threshold=0,
        blocks=3,
        on_round=lambda n, blocks: rounds.append((n, blocks)),
    )
    assert rows_of(spread) == rows_of(read_timelines(spark, out))
    assert rounds[0] == (1, 3) and [n for n, _b in rounds] == list(range(1, len(rounds) + 1))


@pytest.mark.parametrize(
    ("seed", "blocks", "shape"),
    [
        (1, 4, {}),
        (2, 3, {"count": 100, "clock_disorder": 0.3}),  # links forward across blocks
        (3, 4, {"forks": 6, "dropped": 0.1}),  # branches, fork evidence, pending links
        pytest.param(  # every clock random: many rounds, re-placed blocks
            4,
            3,
            {"count": 60, "clock_disorder": 1.0, "forks": 2, "dropped": 0.05},
            marks=pytest.mark.slow,
        ),
    ],
)
def test_the_spread_path_equals_the_grouped_path_on_generated_graphs(
    spark, tmp_path, seed, blocks, shape
):
    messages = generated(spark, tmp_path / "archive", seed, **shape)
    grouped = rows_of(linearize(messages, spread_threshold=None))
    assert {row[0] for row in grouped} >= {"spacetime", "tangle:t0", "tangle:t1"}
    rounds: list[int] = []
    spread = linearize(
        messages, spread_threshold=0, blocks=blocks, on_round=lambda n, _b: rounds.append(n)
    )
    assert rows_of(spread) == grouped
    assert len(rounds) >= 2  # the first round settles the first block, not the others


def test_only_timelines_above_the_threshold_are_spread(spark, tmp_path):
    messages = generated(spark, tmp_path / "archive", 5)
    grouped = rows_of(linearize(messages, spread_threshold=None))
    sizes = {}
    for row in grouped:
        sizes[row[:2]] = sizes.get(row[:2], 0) + 1
    spacetime = sizes[("spacetime", None)]
    assert spacetime > max(size for key, size in sizes.items() if key[0] != "spacetime")
    rounds = []
    mixed = linearize(
        messages, spread_threshold=spacetime - 1, blocks=4, on_round=lambda n, _b: rounds.append(n)
    )
    assert rows_of(mixed) == grouped and rounds  # the spacetime spread, the tangles grouped
    untouched = []
    linearize(messages, spread_threshold=spacetime, on_round=lambda n, b: untouched.append(n))
    assert untouched == []


def test_causal_timestamps_settle_within_a_round_a_block(spark, tmp_path):
    messages = generated(spark, tmp_path / "archive", 6, count=600)
    rounds = []
    linearize(messages, spread_threshold=0, blocks=6, on_round=lambda n, b: rounds.append((n, b)))
    assert rounds[0] == (1, 6)
    assert 2 <= len(rounds) <= 6  # each round settles the next block at least
    assert all(blocks < 6 for _n, blocks in rounds[1:])  # settled blocks are not run again


def test_links_that_loop_across_blocks_are_refused(spark, tmp_path):
    """Columns edited after export: a and b each name the other. The signed bytes cannot."""
    rows = graph_rows(random.Random(7), 40, feeds=2, tangles=1)
    first, last = rows[0], rows[-1]
    first["timeframe"] = [{"feed": last["author"], "seq": last["seq"], "tag": last["id"][:16]}]
    last["timeframe"] = [{"feed": first["author"], "seq": first["seq"], "tag": first["id"][:16]}]
    messages = read_messages(spark, [write_messages(tmp_path / "archive", rows)])
    with pytest.raises(LoopError, match="links loop"):
        linearize(messages, spread_threshold=0, blocks=2)
    with pytest.raises(Exception, match="links loop"):  # the grouped pass, in a worker
        linearize(messages, spread_threshold=None).collect()


def test_a_task_watch_counts_the_tasks_of_its_own_jobs_and_the_longest_share(spark):
    from tanglenode.pipeline.tasks import TaskWatch

    with TaskWatch(spark, "watched") as watch:
        spark.range(0, 10_000, numPartitions=4).selectExpr("sum(id)").collect()
    spark.range(0, 10_000, numPartitions=7).selectExpr("sum(id)").collect()  # not watched
    spread = watch.spread()
    assert 5 <= spread["tasks"] <= 6  # 4 scans, then 1 final aggregate (AQE may add none)
    assert spread["longest_task_share"] is None or 0 < spread["longest_task_share"] <= 1
