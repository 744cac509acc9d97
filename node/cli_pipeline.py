"""`tangled pipeline JOB --in ARCHIVE... --out DIR`: the Spark jobs on exported archives."""

from __future__ import annotations

import json
from pathlib import Path

import click

JOBS = ("verify", "linearize", "audit", "stats")


@click.command("pipeline")
@click.argument("job", type=click.Choice(JOBS))
@click.option(
    "--in",
    "archives",
    multiple=True,
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="An archive from `tangled export` (repeat to combine several nodes').",
)
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--master", default="local[*]", show_default=True, help="Spark master URL.")
def pipeline_command(job: str, archives: tuple[Path, ...], out: Path, master: str) -> None:
    """Run JOB over the archives and write its result under OUT as Parquet.

    audit compares the first archive's timelines (as its node had them) with
    the batch linearization of all the archives given.
    """
    from pipeline.archive import read_messages, write
    from pipeline.session import spark_session

    spark = spark_session(master)
    try:
        messages = read_messages(spark, list(archives))
        result = _job(job, spark, messages, archives[0])
        target = write(result, out, job)
        rows = spark.read.parquet(str(target)).count()
    finally:
        spark.stop()
    click.echo(json.dumps({"job": job, "out": str(target), "rows": rows}))


def _job(job: str, spark, messages, first_archive: Path):
    from pipeline.linearize import linearize

    if job == "verify":
        from pipeline.verify import verify

        return verify(messages)
    if job == "linearize":
        return linearize(messages)
    if job == "audit":
        from pipeline.archive import read_timelines
        from pipeline.audit import audit

        return audit(read_timelines(spark, first_archive), linearize(messages))
    from pipeline.stats import stats

    return stats(messages, linearize(messages))
