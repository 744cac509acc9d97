"""`evaluate`: the ScuttleSort paper's experiment as a Spark parameter sweep (docs/PIPELINE.md).

Each configuration (tangle width = feeds, height = events, generator,
delivery model, seed) is one row and one Spark partition, run by
`mapInPandas` in a worker: it builds the paper's tangle (`storage.tools.simulate`,
by default the `longest-by-rank` reading that gives Figure 8's two events
per rank), delivers it, and feeds the same delivered sequence to the
project's disk-backed timeline engine in a scratch LMDB and to the
reference ScuttleSort (`pipeline.reference`, under a time limit), counting
both one's edit commands. Configurations are spread over partitions, the
costliest first, so a cluster runs them side by side. The paper's to-do
scenario (32 active feeds, 512 lurkers, 256K events) is an optional extra
configuration per seed. `pipeline.evaluate_report` turns the results into
the table and the figure.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator

import pandas as pd

PAPER_TABLE = """
       4     8    16    32    64   128   256   512  1024
 32000 2.5   3.0   3.6   4.7   7.1  10.4  13.1  16.8  21.5
 64000 3.8   2.9   5.7   4.4   7.0  10.1  13.2  17.0  22.0
128000 1.7   2.7   3.7   5.3   6.6   9.2  13.9  18.1  24.8
256000 2.6   2.4   3.5   5.8   6.9  10.6  14.6  19.7  24.5
512000 1.6   3.3   2.9   6.2   7.3  10.7  15.0  19.3  26.0
"""  # the paper's table (docs/PIPELINE.md, "evaluate"): commands per event, heights down


def _paper() -> dict[int, dict[int, float]]:
    header, *rows = PAPER_TABLE.strip().splitlines()
    widths = [int(width) for width in header.split()]
    table = {}
    for row in rows:
        height, *cells = row.split()
        table[int(height)] = dict(zip(widths, map(float, cells), strict=True))
    return table


PAPER = _paper()
TODO_GENERATOR = "active-lurkers"  # the paper's to-do scenario (storage.tools.simulate)
TODO_EVENTS = 256_000
DEFAULT_REFERENCE_SECONDS = 600.0
CONFIG_SCHEMA = (
    "width long, height long, generator string, delivery string, seed long, reference_limit double"
)
RESULT_SCHEMA = (
    "width long, height long, generator string, delivery string, seed long, "
    "commands long, commands_per_event double, seconds double, "
    "reference_status string, reference_commands long, reference_per_event double, "
    "reference_seconds double"
)


def run_configuration(
    width: int, height: int, generator: str, delivery: str, seed: int, reference_limit: float
) -> dict:
    """One run of the experiment: the engine's and the reference's counts on the same events."""
    from tanglenode.pipeline.reference import run_reference
    from tanglenode.storage.engine.scratch import run_engine
    from tanglenode.storage.tools.simulate import DELIVERY, paper_tangle

    rng = random.Random(seed * 1_000_003 + width * 7 + height)
    events = DELIVERY[delivery](paper_tangle(height, width, rng, generator), rng)
    reference = run_reference(((e.name, e.after) for e in events), reference_limit)
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
        "generator": generator,
        "delivery": delivery,
        "seed": seed,
        "commands": commands,
        "commands_per_event": commands / height,
        "seconds": time.perf_counter() - started,
        "reference_status": reference.status,
        "reference_commands": reference.commands,
        "reference_per_event": None if reference.commands is None else reference.commands / height,
        "reference_seconds": reference.seconds,
    }


def _run_rows(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    columns = [c.split()[0] for c in RESULT_SCHEMA.split(", ")]
    for frame in frames:
        rows = [
            run_configuration(
                int(r.width), int(r.height), r.generator, r.delivery, int(r.seed), r.reference_limit
            )
            for r in frame.itertuples(index=False)
        ]
        result = pd.DataFrame(rows, columns=columns)
        result["reference_commands"] = result["reference_commands"].astype("Int64")
        result["reference_per_event"] = result["reference_per_event"].astype("float64")
        yield result


def configurations(
    widths,
    heights,
    deliveries,
    seeds=(1,),
    *,
    generator: str = "longest-by-rank",
    todo_events: int = 0,
) -> list[tuple[int, int, str, str, int]]:
    """(width, height, generator, delivery, seed) for every run, the costliest first.

    `todo_events` > 0 adds the to-do scenario at that height for every
    delivery and seed (its width is fixed by the scenario).
    """
    from tanglenode.storage.tools.simulate import ACTIVE_FEEDS, LURKERS

    runs = [
        (w, h, generator, d, s) for h in heights for w in widths for d in deliveries for s in seeds
    ]
    if todo_events > 0:
        width = ACTIVE_FEEDS + LURKERS
        runs += [(width, todo_events, TODO_GENERATOR, d, s) for d in deliveries for s in seeds]
    return sorted(runs, key=lambda run: (-run[1] * run[0], run[3], run[4]))


def sweep(
    spark,
    widths,
    heights,
    deliveries,
    seeds=(1,),
    *,
    generator: str = "longest-by-rank",
    todo_events: int = 0,
    reference_seconds: float = DEFAULT_REFERENCE_SECONDS,
):
    """The configurations as a DataFrame, one partition each, run in parallel: a result row each.

    `reference_seconds` limits each reference run (0: the reference is not run).
    """
    runs = configurations(
        widths, heights, deliveries, seeds, generator=generator, todo_events=todo_events
    )
    rows = [(*run, float(reference_seconds)) for run in runs]
    partitioned = spark.sparkContext.parallelize(rows, len(rows))
    return spark.createDataFrame(partitioned, CONFIG_SCHEMA).mapInPandas(_run_rows, RESULT_SCHEMA)
