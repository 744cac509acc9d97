"""`tangled pipeline JOB --in ARCHIVE... --out DIR`: the Spark jobs on exported archives."""

from __future__ import annotations

import json
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
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--master",
    default="local[*]",
    show_default=True,
    help="Spark master URL; 'submitted' when run by spark-submit (see pipeline/__main__.py).",
)
@click.option("--widths", default="4,8,16,32,64,128,256,512,1024", help="evaluate: feeds.")
@click.option("--heights", default="32000", help="evaluate: events per tangle.")
@click.option("--deliveries", default="random-feed,in-order", help="evaluate: delivery models.")
@click.option("--seeds", type=click.IntRange(min=1), default=1, help="evaluate: runs each.")
def pipeline_command(
    job: str,
    archives: tuple[Path, ...],
    out: Path,
    master: str,
    widths: str,
    heights: str,
    deliveries: str,
    seeds: int,
) -> None:
    """Run JOB over the archives and write its result under OUT as Parquet.

    audit compares the first archive's timelines (as its node had them) with
    the batch linearization of all the archives given.
    """
    from tanglenode.pipeline.archive import read_messages, write
    from tanglenode.pipeline.session import spark_session

    if job != "evaluate" and not archives:
        raise click.UsageError(f"{job} needs at least one --in ARCHIVE")
    spark = spark_session(None if master == "submitted" else master)
    try:
        if job == "evaluate":
            sweep_options = (_ints(widths), _ints(heights), deliveries.split(","), seeds)
            click.echo(json.dumps(_evaluate(spark, out, *sweep_options)))
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


def _evaluate(spark, out: Path, widths, heights, deliveries, seeds: int) -> dict:
    from tanglenode.pipeline.archive import write
    from tanglenode.pipeline.evaluate import plot, sweep, table

    results = sweep(spark, widths, heights, deliveries, tuple(range(1, seeds + 1)))
    target = write(results, out, "evaluate")
    frame = spark.read.parquet(str(target)).toPandas()
    pivot = table(frame)
    pivot.to_csv(out / "evaluate-table.csv", index=False)
    (out / "evaluate-table.md").write_text(_markdown(pivot))
    figure = plot(frame, out / "evaluate.png")
    return {"job": "evaluate", "out": str(target), "rows": len(frame), "figure": str(figure)}


def _markdown(frame) -> str:
    def cell(value) -> str:
        return f"{value:.2f}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(str(c) for c in frame.columns) + " |"]
    lines.append("|" + "---|" * len(frame.columns))
    lines.extend(
        "| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)
    )
    return "\n".join(lines) + "\n"
