"""`evaluate`: the ScuttleSort paper's experiment as a Spark parameter sweep (docs/PIPELINE.md).

Each configuration (tangle width = feeds, height = events, delivery model,
seed) is one row; `mapInPandas` runs each in a worker: it builds the
paper's tangle (`storage.simulate`), delivers it, feeds it to the
project's disk-backed timeline engine in a scratch LMDB, and counts the
edit commands. Configurations are spread over partitions, so a cluster
runs them side by side. The driver then pivots the results into the
paper's table (commands per event, heights down, widths across) and draws
a PNG in the style of its Figure 9, the paper's own numbers dashed beside
ours.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

PAPER = {  # the paper's table: commands per event, by height (events) and width (feeds)
    32_000: {
        4: 2.5,
        8: 3.0,
        16: 3.6,
        32: 4.7,
        64: 7.1,
        128: 10.4,
        256: 13.1,
        512: 16.8,
        1024: 21.5,
    },
    64_000: {
        4: 3.8,
        8: 2.9,
        16: 5.7,
        32: 4.4,
        64: 7.0,
        128: 10.1,
        256: 13.2,
        512: 17.0,
        1024: 22.0,
    },
    128_000: {
        4: 1.7,
        8: 2.7,
        16: 3.7,
        32: 5.3,
        64: 6.6,
        128: 9.2,
        256: 13.9,
        512: 18.1,
        1024: 24.8,
    },
    256_000: {
        4: 2.6,
        8: 2.4,
        16: 3.5,
        32: 5.8,
        64: 6.9,
        128: 10.6,
        256: 14.6,
        512: 19.7,
        1024: 24.5,
    },
    512_000: {
        4: 1.6,
        8: 3.3,
        16: 2.9,
        32: 6.2,
        64: 7.3,
        128: 10.7,
        256: 15.0,
        512: 19.3,
        1024: 26.0,
    },
}
RESULT_SCHEMA = (
    "width long, height long, delivery string, seed long, "
    "commands long, commands_per_event double, seconds double"
)


def run_configuration(width: int, height: int, delivery: str, seed: int) -> dict:
    """One run of the experiment with the engine on disk: its command count."""
    from tanglenode.storage.scratch import run_engine
    from tanglenode.storage.simulate import DELIVERY, paper_tangle

    rng = random.Random(seed * 1_000_003 + width * 7 + height)
    events = DELIVERY[delivery](paper_tangle(height, width, rng), rng)
    started = time.perf_counter()
    commands = run_engine(
        ((event.name.encode(), [link.encode() for link in event.after], None) for event in events),
        timeline=b"t",
        batch=2000,
        map_size=2**36,
        prefix="evaluate-",
        read_order=False,
    ).commands
    return {
        "width": width,
        "height": height,
        "delivery": delivery,
        "seed": seed,
        "commands": commands,
        "commands_per_event": commands / height,
        "seconds": time.perf_counter() - started,
    }


def _run_rows(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    for frame in frames:
        rows = [
            run_configuration(int(r.width), int(r.height), r.delivery, int(r.seed))
            for r in frame.itertuples(index=False)
        ]
        yield pd.DataFrame(rows, columns=[c.split()[0] for c in RESULT_SCHEMA.split(", ")])


def sweep(spark, widths, heights, deliveries, seeds=(1,)):
    """The configurations as a DataFrame, run in parallel: one result row each."""
    configurations = [
        (w, h, d, s) for h in heights for w in widths for d in deliveries for s in seeds
    ]
    frame = spark.createDataFrame(
        configurations, "width long, height long, delivery string, seed long"
    )
    partitions = max(1, min(len(configurations), spark.sparkContext.defaultParallelism * 2))
    return frame.repartition(partitions).mapInPandas(_run_rows, RESULT_SCHEMA)


def table(results: pd.DataFrame) -> pd.DataFrame:
    """Commands per event: a row per (source, delivery, height), a column per width."""
    ours = (
        results.groupby(["delivery", "height", "width"])["commands_per_event"]
        .mean()
        .unstack("width")
        .reset_index()
    )
    ours.insert(0, "source", "tanglenode")
    heights = sorted(set(results["height"]))
    paper = pd.DataFrame(
        [
            {"source": "paper", "delivery": "random-feed", "height": h, **PAPER[h]}
            for h in heights
            if h in PAPER
        ]
    )
    combined = pd.concat([ours, paper], ignore_index=True)
    widths = sorted(c for c in combined.columns if isinstance(c, int))
    return combined[["source", "delivery", "height", *widths]]


def plot(results: pd.DataFrame, path: Path) -> Path:
    """Commands per event against width (log scale), a line per height and delivery."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(8, 5), dpi=120)
    for (delivery, height), group in results.groupby(["delivery", "height"]):
        mean = group.groupby("width")["commands_per_event"].mean()
        axes.plot(mean.index, mean.values, marker="o", label=f"{height // 1000}K, {delivery}")
    for height in sorted(set(results["height"])):
        if height in PAPER:
            widths = sorted(PAPER[height])
            axes.plot(
                widths,
                [PAPER[height][w] for w in widths],
                linestyle="--",
                alpha=0.6,
                label=f"{height // 1000}K, paper",
            )
    axes.set_xscale("log", base=2)
    axes.set_xlabel("tangle width (feeds)")
    axes.set_ylabel("edit commands per ingested event")
    axes.set_title("Incremental linearization cost (cf. ScuttleSort, Figure 9)")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return path
