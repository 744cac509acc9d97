"""evaluate: our engine and the reference ScuttleSort on the same tangles, the table, the figure."""

import json
import random
import subprocess

import pandas as pd
import pytest
from scuttlesort import Timeline

from tanglenode.node.localnet import TANGLED
from tanglenode.pipeline.cli import _evaluate
from tanglenode.pipeline.evaluate import PAPER, configurations, sweep
from tanglenode.pipeline.evaluate_report import NOT_RUN, markdown, summary
from tanglenode.pipeline.reference import run_reference
from tanglenode.storage.engine.scratch import run_engine
from tanglenode.storage.tools.simulate import DELIVERY, paper_tangle

TABLE_COLUMNS = {
    "generator", "delivery", "height", "width", "runs",
    "ours_mean", "ours_p10", "ours_p50", "ours_p90",
    "reference_runs", "reference_mean", "reference_p10", "reference_p50", "reference_p90",
    "paper", "ours_over_paper", "reference_over_paper", "ours_over_reference",
}  # fmt: skip


def direct_counts(width: int, height: int, generator: str, delivery: str, seed: int):
    """The same run outside Spark: the engine's and the reference's command counts."""
    rng = random.Random(seed * 1_000_003 + width * 7 + height)
    events = DELIVERY[delivery](paper_tangle(height, width, rng, generator), rng)
    reference = 0

    def notify(*_command):
        nonlocal reference
        reference += 1

    timeline = Timeline(notify)
    for event in events:
        timeline.add(event.name, list(event.after))
    ours = run_engine(
        ((e.name.encode(), [link.encode() for link in e.after], None) for e in events),
        read_order=False,
    ).commands
    return ours, reference


@pytest.fixture(scope="module")
def results(spark):
    frame = sweep(
        spark,
        widths=[4, 8],
        heights=[600],
        deliveries=["random-feed", "in-order"],
        seeds=(1, 2, 3),
        todo_events=1200,
    )
    return frame.toPandas()


def test_each_configuration_is_its_own_partition_the_costliest_first(spark):
    runs = configurations([4, 8], [600], ["random-feed"], (1, 2), todo_events=1200)
    assert runs[0][:3] == (544, 1200, "active-lurkers")  # the to-do scenario: 32 + 512 feeds
    assert len(runs) == 6
    frame = sweep(spark, [4, 8], [300], ["in-order"], (1,), reference_seconds=0)
    assert frame.rdd.getNumPartitions() == 2


def test_ours_and_the_reference_count_the_same_delivered_events(results):
    assert len(results) == 2 * 2 * 3 + 2 * 3  # widths x deliveries x seeds, + the to-do rows
    assert set(results["reference_status"]) == {"finished"}
    in_order = results[results["delivery"] == "in-order"]
    assert (in_order["commands_per_event"] == 1.0).all()  # nothing arrives early: one ins each
    assert (in_order["reference_per_event"] == 1.0).all()
    shuffled = results[results["delivery"] == "random-feed"]
    assert (shuffled["commands_per_event"] > 1.0).all()
    # the engine never needs more commands than the reference, and stays close to it
    assert (shuffled["commands"] <= shuffled["reference_commands"]).all()
    assert (shuffled["commands"] >= 0.8 * shuffled["reference_commands"]).all()
    row = shuffled[(shuffled["width"] == 8) & (shuffled["seed"] == 2)].iloc[0]
    assert (row["commands"], row["reference_commands"]) == direct_counts(
        8, 600, "longest-by-rank", "random-feed", 2
    )


def test_the_summary_has_means_percentiles_and_the_todo_row(results):
    table = summary(results)
    assert set(table.columns) >= TABLE_COLUMNS
    assert len(table) == 2 * 2 + 2 and (table["runs"] == 3).all()
    assert (table["ours_p10"] <= table["ours_p50"]).all()
    assert (table["ours_p50"] <= table["ours_p90"]).all()
    assert (table["ours_p10"] < table["ours_p90"])[table["delivery"] == "random-feed"].all()
    todo = table[table["generator"] == "active-lurkers"]
    assert set(todo["width"]) == {544} and set(todo["height"]) == {1200}
    assert table["paper"].isna().all()  # the paper has no 600-event row
    text = markdown(table, 600)
    assert "## the to-do scenario: 32 active feeds, 512 lurkers, random-feed delivery" in text
    assert text.index("longest-by-rank, random-feed") < text.index("the to-do scenario")


def test_the_paper_column_and_the_ratios():
    results = pd.DataFrame(
        {
            "generator": "longest-by-rank",
            "delivery": "random-feed",
            "height": 32_000,
            "width": 4,
            "seed": [1, 2],
            "commands": [80_000, 90_000],
            "commands_per_event": [2.5, 2.8125],
            "seconds": 1.0,
            "reference_status": ["finished", "time-limit"],
            "reference_commands": pd.array([100_000, None], dtype="Int64"),
            "reference_per_event": [3.125, None],
            "reference_seconds": 1.0,
        }
    )
    row = summary(results).iloc[0]
    assert row["paper"] == PAPER[32_000][4] == 2.5
    assert row["ours_over_paper"] == pytest.approx(2.65625 / 2.5)
    assert row["reference_runs"] == 1 and row["reference_mean"] == 3.125
    assert row["ours_over_reference"] == pytest.approx(0.8)  # over the seed that finished
    assert "3.12 (1/2)" in markdown(summary(results), 600)


def test_a_reference_over_its_time_limit_is_marked_not_run(spark, tmp_path):
    events = [(e.name, e.after) for e in paper_tangle(1000, 4, random.Random(1))]
    assert run_reference(events, 1e-9).status == "time-limit"
    assert run_reference(events, 0).status == "skipped"
    finished = run_reference(events, 60)
    assert finished.status == "finished" and finished.commands == 1000  # in order
    options = {
        "widths": [4],
        "heights": [400],
        "deliveries": ["random-feed"],
        "seeds": (1, 2),
        "generator": "longest-by-count",
        "todo_events": 0,
        "reference_seconds": 0,
    }
    report = _evaluate(spark, tmp_path, options)
    table = pd.read_csv(tmp_path / "evaluate-table.csv")
    assert set(table.columns) >= TABLE_COLUMNS and report["rows"] == 2
    assert list(table["generator"]) == ["longest-by-count"]
    assert table["reference_mean"].isna().all() and (table["reference_runs"] == 0).all()
    reference_line = next(
        line for line in (tmp_path / "evaluate-table.md").read_text().splitlines()
        if "reference (mean)" in line
    )  # fmt: skip
    assert reference_line.endswith(f"| {NOT_RUN} |")
    assert (tmp_path / "evaluate.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
@pytest.mark.usefixtures("java")  # a `tangled pipeline` child starts Spark
def test_the_cli_writes_the_table_and_the_figure(tmp_path):
    done = subprocess.run(
        [
            str(TANGLED), "pipeline", "evaluate", "--out", str(tmp_path),
            "--heights", "400", "--widths", "4,8", "--seeds", "2",
            "--todo", "--todo-events", "800", "--master", "local[2]",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["rows"] == 2 * 2 + 2
    table = pd.read_csv(tmp_path / "evaluate-table.csv")
    assert set(table.columns) >= TABLE_COLUMNS
    assert (table["reference_runs"] == 2).all()
    assert (tmp_path / "evaluate.png").stat().st_size > 0
