"""`tangled pipeline JOB --in ARCHIVE... --out DIR`: the Spark jobs on exported archives."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

JOBS = ("verify", "linearize", "audit", "stats", "evaluate")


@click.command("pipeline")
@click.argument("job", type=click.Choice(JOBS))
@click.option(
    "--in",
    "archives",
    multiple=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="An archive from `tangled export` (repeat to combine several nodes').",
)
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory to write the job's result under, as Parquet.",
)
@click.option(
    "--master",
    default="local[*]",
    show_default=True,
    help="Spark master URL; 'submitted' when run by spark-submit (see pipeline/__main__.py).",
)
@click.option("--widths", default="4,8,16,32,64,128,256,512,1024", help="evaluate: feeds.")
@click.option("--heights", default="32000", help="evaluate: events per tangle.")
@click.option(
    "--deliveries", default="random-feed", help="evaluate: delivery models (random-feed, in-order)."
)
@click.option("--seeds", type=click.IntRange(min=1), default=1, help="evaluate: runs each.")
@click.option(
    "--generator",
    default="longest-by-rank",
    show_default=True,
    help="evaluate: the tangle generator (storage/simulate.py), e.g. longest-by-count.",
)
@click.option(
    "--todo/--no-todo", default=False, help="evaluate: add the paper's to-do scenario row."
)
@click.option(
    "--todo-events",
    type=click.IntRange(min=2),
    default=256_000,
    show_default=True,
    help="evaluate: the to-do scenario's events.",
)
@click.option(
    "--reference-seconds",
    type=click.FloatRange(min=0),
    default=600.0,
    show_default=True,
    help="evaluate: time limit of each reference ScuttleSort run (0: do not run it).",
)
def pipeline_command(
    job: str,
    archives: tuple[Path, ...],
    out: Path,
    master: str,
    widths: str,
    heights: str,
    deliveries: str,
    seeds: int,
    generator: str,
    todo: bool,
    todo_events: int,
    reference_seconds: float,
) -> None:
    """Run JOB over the archives and write its result under OUT as Parquet.

    audit compares the first archive's timelines (as its node had them) with
    the batch linearization of all the archives given.
    """
    from tanglenode.pipeline.archive import read_messages, write
    from tanglenode.pipeline.session import spark_session

    if job != "evaluate" and not archives:
        raise click.UsageError(f"{job} needs at least one --in ARCHIVE")
    if job == "evaluate":
        from tanglenode.storage.simulate import DELIVERY, GENERATORS

        if generator not in GENERATORS:
            raise click.BadParameter(f"{generator!r}: one of {', '.join(GENERATORS)}")
        if unknown := set(deliveries.split(",")) - set(DELIVERY):
            raise click.BadParameter(f"{', '.join(sorted(unknown))}: one of {', '.join(DELIVERY)}")
    spark = spark_session(None if master == "submitted" else master)
    try:
        if job == "evaluate":
            sweep = {
                "widths": _ints(widths),
                "heights": _ints(heights),
                "deliveries": deliveries.split(","),
                "seeds": tuple(range(1, seeds + 1)),
                "generator": generator,
                "todo_events": todo_events if todo else 0,
                "reference_seconds": reference_seconds,
            }
            click.echo(json.dumps(_evaluate(spark, out, sweep)))
            return
        messages = read_messages(spark, list(archives))
        result = _job(job, spark, messages, archives[0])
        target = write(result, out, job)
        rows = spark.read.parquet(str(target)).count()
    finally:
        spark.stop()
    click.echo(json.dumps({"job": job, "out": str(target), "rows": rows}))


def _job(job: str, spark, messages, first_archive: Path):
    from tanglenode.pipeline.linearize import linearize

    if job == "verify":
        from tanglenode.pipeline.verify import verify

        return verify(messages)
    if job == "linearize":
        return linearize(messages)
    if job == "audit":
        from tanglenode.pipeline.archive import read_timelines
        from tanglenode.pipeline.audit import audit

        return audit(read_timelines(spark, first_archive), linearize(messages))
    from tanglenode.pipeline.stats import stats

    return stats(messages, linearize(messages))


def _ints(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise click.BadParameter(f"{text!r}: expected numbers separated by commas") from None


def _evaluate(spark, out: Path, options: dict) -> dict:
    from tanglenode.pipeline.archive import write
    from tanglenode.pipeline.evaluate import sweep
    from tanglenode.pipeline.evaluate_report import markdown, plot, summary

    started = time.perf_counter()
    results = sweep(spark, **options)
    target = write(results, out, "evaluate")
    table = summary(spark.read.parquet(str(target)).toPandas())
    table.to_csv(out / "evaluate-table.csv", index=False)
    (out / "evaluate-table.md").write_text(markdown(table, options["reference_seconds"]))
    figure = plot(table, out / "evaluate.png")
    return {
        "job": "evaluate",
        "out": str(target),
        "rows": int(table["runs"].sum()),
        "table": str(out / "evaluate-table.md"),
        "figure": str(figure),
        "seconds": round(time.perf_counter() - started, 1),
    }
