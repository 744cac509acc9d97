"""`tangled pipeline JOB --in ARCHIVE... --out DIR`: the Spark jobs on exported archives.

A run, as the user sees it: a progress line on stderr at once (before
pyarrow or the JVM load), then one per stage, each with the seconds since
the start; the `--in` archives are checked from their Parquet footers
before Spark starts (exit 4 for a missing one, 3 for one that is not an
archive); the JVM's own output goes to a log file (pipeline/session.py),
shown only when the job fails (exit 1). The result is written as Parquet,
read back as a bounded summary (pipeline/report.py) and printed as tables
on a terminal, one line of JSON otherwise or with `--json`. verify with
problems and audit with differences exit 5.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import traceback
from pathlib import Path

import click

JOBS = ("verify", "linearize", "audit", "stats", "evaluate", "generate", "docs")
WORK = {
    "verify": "checking ids, signatures, chains, forks and timeframe tags",
    "linearize": "linearizing every timeline",
    "audit": "linearizing and comparing with the node's timelines",
    "stats": "linearizing and measuring every timeline",
    "docs": "weaving every document",
}
LOG_LINES = 40  # of the JVM's log, shown when a job fails
LOG_TAIL_BYTES = 64 * 1024  # read to find them


class Progress:
    """One line per stage on stderr: `[  7.9 s] stats: Spark ready; …`."""

    def __init__(self, job: str) -> None:
        self.job = job
        self.started = time.monotonic()

    def __call__(self, text: str) -> None:
        elapsed = time.monotonic() - self.started
        click.echo(f"[{elapsed:5.1f} s] {self.job}: {text}", err=True)


@click.command("pipeline")
@click.argument("job", type=click.Choice(JOBS))
@click.option(
    "--in",
    "archives",
    multiple=True,
    type=click.Path(path_type=Path),
    help="An archive folder written by `tangled export --out`; repeat to combine several "
    "nodes' (audit compares the first one's timelines). Not needed by evaluate or generate.",
)
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for the results: OUT/JOB/ as Parquet, replaced if present (evaluate also "
    "writes evaluate-table.md, evaluate-table.csv and evaluate.png there); generate writes "
    "the archive itself there.",
)
@click.option(
    "--master",
    default="local[*]",
    show_default=True,
    help="Spark master: local[*] (every core here), local[N], spark://HOST:PORT (a cluster, "
    "this machine the driver); 'submitted' leaves it to spark-submit (docs/PIPELINE.md).",
)
@click.option(
    "--memory",
    default="2g",
    show_default=True,
    callback=lambda _context, _option, value: _memory(value),
    help="Spark's driver memory, which in a local run is every task's too (512m to 1024g): "
    "a job spills to disk rather than needing more, however large the archive "
    "(docs/PIPELINE.md, \"Memory\"). A cluster's executors take spark-submit's.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the result as one line of JSON (the default when stdout is not a terminal).",
)
@click.option(
    "--show",
    type=click.IntRange(0, 10_000),
    default=20,
    show_default=True,
    help="Result rows to print, the first in the job's order (all are in OUT).",
)
@click.option(
    "--widths",
    default="4,8,16,32,64,128,256,512,1024",
    show_default=True,
    help="evaluate: feeds per tangle, comma-separated.",
)
@click.option(
    "--heights",
    default="32000",
    show_default=True,
    help="evaluate: events per tangle, comma-separated.",
)
@click.option(
    "--deliveries",
    default="random-feed",
    show_default=True,
    help="evaluate: delivery models, comma-separated: random-feed (the paper's), in-order.",
)
@click.option(
    "--seeds", type=click.IntRange(min=1), default=1, help="evaluate: runs of each configuration."
)
@click.option(
    "--generator",
    default="longest-by-rank",
    show_default=True,
    help="evaluate: the tangle generator: longest-by-rank, longest-by-rank-then-count, "
    "longest-by-rank-random, longest-by-count or active-lurkers (docs/PIPELINE.md).",
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
@click.option(
    "--messages",
    type=click.IntRange(1),
    help="generate: the archive's messages (at least --feeds).",
)
@click.option(
    "--feeds",
    type=click.IntRange(1),
    help="generate: the feeds that write them, their sizes Pareto-distributed.",
)
@click.option(
    "--seed",
    type=click.IntRange(0, 2**63 - 1),
    default=0,
    show_default=True,
    help="generate: the same seed writes the same bytes.",
)
@click.option(
    "--force",
    is_flag=True,
    help="generate: replace the archive OUT holds (never a folder holding anything else).",
)
def pipeline_command(
    job: str,
    archives: tuple[Path, ...],
    out: Path,
    master: str,
    memory: str,
    as_json: bool,
    show: int,
    widths: str,
    heights: str,
    deliveries: str,
    seeds: int,
    generator: str,
    todo: bool,
    todo_events: int,
    reference_seconds: float,
    messages: int | None,
    feeds: int | None,
    seed: int,
    force: bool,
) -> int:
    """Run JOB over the archives and write its result under OUT as Parquet.

    JOB is one of: verify (every message's id, signature and chain; forks),
    linearize (every timeline's order, as a node computes it), audit (the
    first archive's timelines, as its node had them, against the batch
    linearization of all the archives given), stats (messages, width and
    height per timeline; totals), docs (every document's final text, authors
    and blame, as a node shows them), evaluate (the ScuttleSort paper's
    experiment; needs no archive), generate (a signed archive shaped like
    social feeds at OUT: --messages, --feeds, --seed). Spark needs a Java
    17+ runtime.

    Exit codes: 0 done; 1 Spark failed (its log is shown); 2 bad usage;
    3 an --in that is not an archive (an --out generate may not write);
    4 an --in that does not exist;
    5 verify found problems or audit found differences.
    """
    progress = Progress(job)
    as_json = as_json or not sys.stdout.isatty()
    if job == "generate":
        if archives:
            raise click.UsageError("generate reads no --in; it writes the archive at --out")
        from tanglenode.pipeline.generate_command import run

        request = {"messages": messages, "feeds": feeds, "seed": seed, "force": force}
        return run(progress, out, (master, memory), as_json, request, _report_failure)
    if job == "evaluate":
        sweep = _sweep_options(widths, heights, deliveries, seeds, generator, todo, todo_events)
        sweep["reference_seconds"] = reference_seconds
    elif not archives:
        raise click.UsageError(f"{job} needs at least one --in ARCHIVE")
    else:
        progress(f"checking {len(archives)} archive{'s' * (len(archives) > 1)}")
    from tanglenode.pipeline.archive import ArchiveError, check_archive
    from tanglenode.pipeline.session import java_missing, scratch_dir

    try:
        found = [
            check_archive(archive, timelines=job == "audit" and n == 0)
            for n, archive in enumerate(archives)
        ]
    except ArchiveError as error:
        click.echo(f"tangled: {error}", err=True)
        return error.exit_code
    if (why := java_missing()) is not None:
        click.echo(f"tangled: {why}", err=True)
        return 1
    held = f"{sum(found):,} message rows; " if archives else ""
    progress(f"{held}starting Spark ({master})")
    log = None
    try:
        if master != "submitted":
            scratch_dir().mkdir(mode=0o700, parents=True, exist_ok=True)
            log = scratch_dir() / f"jvm-{os.getpid()}-{time.time_ns()}.log"
        if job == "evaluate":
            summary = _run_evaluate(progress, (master, memory), log, out, sweep)
        else:
            summary = _run_job(progress, job, (master, memory), log, archives, out, show)
    except Exception as error:  # Spark's, the JVM's, or the disk's: the log says which
        _report_failure(job, error, log)
        return 1
    if log is not None:
        log.unlink(missing_ok=True)
    _print(job, summary, as_json, len(archives))
    from tanglenode.pipeline.report import exit_code

    return exit_code(job, summary)


def _run_job(progress, job, where, log, archives, out, show) -> dict:
    from tanglenode.pipeline.archive import read_messages, write
    from tanglenode.pipeline.session import spark_session_for
    from tanglenode.pipeline.tasks import TaskWatch

    spark = spark_session_for(*where, jvm_log=log)
    rounds = []

    def on_round(number: int, blocks: int) -> None:
        rounds.append(number)
        progress(f"round {number}: ranked {blocks:,} block{'s' * (blocks != 1)}")

    try:
        progress(f"Spark ready; {WORK[job]}, writing {Path(out) / job}")
        with TaskWatch(spark, job) as watch:
            messages = read_messages(spark, list(archives))
            target = write(_job(job, spark, messages, archives[0], on_round), out, job)
        spread = {**watch.spread(), "rounds": len(rounds)}
        progress(f"written ({_spread_text(spread)}); reading the results back")
        summary = _report(job).summarize(job, spark, target, show)
    finally:
        spark.stop()
    return {"job": job, "out": str(target), **summary, **spread}


MEMORY = re.compile(r"([1-9][0-9]{0,6})([mg])")
MEMORY_MB = (512, 1024 * 1024)  # at least, at most


def _memory(text: str) -> str:
    """`--memory`: a JVM size as 512m or 4g, within `MEMORY_MB`; else a usage error."""
    found = MEMORY.fullmatch(text.strip().lower())
    megabytes = 0 if found is None else int(found[1]) * (1024 if found[2] == "g" else 1)
    if found is None or not MEMORY_MB[0] <= megabytes <= MEMORY_MB[1]:
        raise click.BadParameter(f"{text[:40]!r}: expected a size from 512m to 1024g, as 4g")
    return found[0]


def _spread_text(spread: dict) -> str:
    """`1,204 tasks, 9 rounds, the longest task 4 % of task time`, as far as known."""
    parts = []
    if spread.get("tasks") is not None:
        parts.append(f"{spread['tasks']:,} task{'s' * (spread['tasks'] != 1)}")
    parts.append(f"{spread['rounds']} round{'s' * (spread['rounds'] != 1)}")
    if spread.get("longest_task_share") is not None:
        parts.append(f"the longest task {spread['longest_task_share']:.0%} of task time")
    return ", ".join(parts)


def _run_evaluate(progress, where, log, out, sweep) -> dict:
    from tanglenode.pipeline.evaluate import configurations
    from tanglenode.pipeline.session import spark_session_for

    runs = len(
        configurations(
            sweep["widths"],
            sweep["heights"],
            sweep["deliveries"],
            sweep["seeds"],
            generator=sweep["generator"],
            todo_events=sweep["todo_events"],
        )
    )
    from tanglenode.pipeline.tasks import TaskWatch

    spark = spark_session_for(*where, jvm_log=log)
    try:
        progress(f"Spark ready; {runs:,} run{'s' * (runs != 1)}, writing {Path(out) / 'evaluate'}")
        with TaskWatch(spark, "evaluate") as watch:
            summary = _evaluate(spark, out, sweep, progress)
        return {**summary, **watch.spread(), "rounds": 0}
    finally:
        spark.stop()


def _report_failure(job: str, error: Exception, log: Path | None) -> None:
    """The JVM log's last lines, then one line naming the error; the traceback goes to the log."""
    first = " ".join(str(error).strip().split("\n", 1)[0].split())[:300]
    where = ""
    if log is not None and log.exists():
        with log.open("rb") as file:  # the tail only: a long job's log can be large
            file.seek(max(0, file.seek(0, os.SEEK_END) - LOG_TAIL_BYTES))
            lines = file.read().decode("utf-8", "replace").splitlines()
        click.echo("-- the last lines of the JVM's log --", err=True)
        for line in lines[-LOG_LINES:]:
            click.echo(line, err=True)
        click.echo("--", err=True)
        with log.open("a") as file:
            file.write("\n-- tangled pipeline: the error --\n")
            traceback.print_exception(error, file=file)
        where = f" (the whole log: {log})"
    click.echo(f"tangled: pipeline {job} failed: {type(error).__name__}: {first}{where}", err=True)


def _print(job: str, summary: dict, as_json: bool, archives: int) -> None:
    if as_json:
        click.echo(json.dumps(summary, ensure_ascii=False))
    elif job == "evaluate":
        click.echo(Path(summary["table"]).read_text().rstrip())
        click.echo(
            f"\nevaluate: {summary['rows']:,} run{'s' * (summary['rows'] != 1)} in "
            f"{summary['seconds']} s; "
            f"table {summary['table']}, figure {summary['figure']}, runs {summary['out']}"
        )
    else:
        click.echo(_report(job).human(job, summary, archives))


def _report(job: str):
    """The module that reads a job's result back and lays it out (`summarize`, `human`)."""
    if job == "docs":
        from tanglenode.pipeline import documents_report

        return documents_report
    from tanglenode.pipeline import report

    return report


def _job(job: str, spark, messages, first_archive: Path, on_round):
    from tanglenode.pipeline.linearize import linearize

    if job == "verify":
        from tanglenode.pipeline.verify import verify

        return verify(messages)
    if job == "linearize":
        return linearize(messages, on_round=on_round)
    if job == "docs":
        from tanglenode.pipeline.documents import documents

        return documents(messages)
    if job == "audit":
        from tanglenode.pipeline.archive import read_timelines
        from tanglenode.pipeline.audit import audit

        return audit(read_timelines(spark, first_archive), linearize(messages, on_round=on_round))
    from tanglenode.pipeline.stats import stats

    return stats(messages, linearize(messages, on_round=on_round))


def _sweep_options(widths, heights, deliveries, seeds, generator, todo, todo_events) -> dict:
    from tanglenode.storage.tools.simulate import DELIVERY, GENERATORS

    if generator not in GENERATORS:
        raise click.BadParameter(f"{generator!r}: one of {', '.join(GENERATORS)}")
    if unknown := set(deliveries.split(",")) - set(DELIVERY):
        raise click.BadParameter(f"{', '.join(sorted(unknown))}: one of {', '.join(DELIVERY)}")
    return {
        "widths": _ints(widths),
        "heights": _ints(heights),
        "deliveries": deliveries.split(","),
        "seeds": tuple(range(1, seeds + 1)),
        "generator": generator,
        "todo_events": todo_events if todo else 0,
    }


def _ints(text: str) -> list[int]:
    try:
        numbers = [int(part) for part in text.split(",")]
    except ValueError:
        raise click.BadParameter(f"{text!r}: expected numbers separated by commas") from None
    if any(n < 1 for n in numbers):
        raise click.BadParameter(f"{text!r}: expected numbers of at least 1")
    return numbers


def _evaluate(spark, out: Path, options: dict, progress=lambda text: None) -> dict:
    from tanglenode.pipeline.archive import write
    from tanglenode.pipeline.evaluate import sweep
    from tanglenode.pipeline.evaluate_report import markdown, plot, summary

    started = time.perf_counter()
    results = sweep(spark, **options)
    target = write(results, out, "evaluate")
    progress("runs done; writing the table and the figure")
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
