"""`tangled pipeline generate`'s command side: its checks before Spark, its run, its output.

The numbers and `--out` are checked first (pipeline/generate.py's
`GenerateError`: one line on stderr, exit 2 for numbers, 3 for an `--out`
that may not be written or cannot be made), then Spark starts as for every job (its log in a
file, shown only on failure, pipeline/cli.py), and the summary is printed:
one line of JSON off a terminal or with `--json`, else a sentence.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import click


def run(
    progress: Callable[[str], None],
    out: Path,
    where: tuple[str, str],
    as_json: bool,
    request: dict,
    report_failure: Callable[[str, Exception, Path | None], None],
) -> int:
    """`where`: (master, memory); `request`: messages, feeds, seed, force; `report_failure`
    shows a failed run as every job's (pipeline/cli.py). The command's exit code."""
    from tanglenode.pipeline.archive import BAD_INPUT
    from tanglenode.pipeline.generate import GenerateError, check_out, check_request, generate
    from tanglenode.pipeline.session import java_missing, scratch_dir, spark_session_for
    from tanglenode.pipeline.tasks import TaskWatch

    master, memory = where
    try:
        if request["messages"] is None or request["feeds"] is None:
            raise GenerateError("generate needs --messages N and --feeds F")
        check_request(request["messages"], request["feeds"], request["seed"])
        check_out(out, request["force"])
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise GenerateError(f"{out}: cannot create it ({error.strerror})", BAD_INPUT) from None
    except GenerateError as error:
        click.echo(f"tangled: {error}", err=True)
        return error.exit_code
    if (why := java_missing()) is not None:
        click.echo(f"tangled: {why}", err=True)
        return 1
    progress(
        f"{request['messages']:,} messages of {request['feeds']:,} feeds, seed "
        f"{request['seed']}; starting Spark ({master})"
    )
    log = None
    try:
        if master != "submitted":
            scratch_dir().mkdir(mode=0o700, parents=True, exist_ok=True)
            log = scratch_dir() / f"jvm-{os.getpid()}-{time.time_ns()}.log"
        spark = spark_session_for(master, memory, jvm_log=log)
        try:
            progress(f"Spark ready; writing {out}")
            with TaskWatch(spark, "generate") as watch:
                summary = generate(
                    spark,
                    out,
                    request["messages"],
                    request["feeds"],
                    request["seed"],
                    force=request["force"],
                    progress=progress,
                )
            summary["longest_task_share"] = watch.spread()["longest_task_share"]
        finally:
            spark.stop()
    except Exception as error:  # Spark's, the JVM's, or the disk's: the log says which
        report_failure("generate", error, log)
        return 1
    if log is not None:
        log.unlink(missing_ok=True)
    summary = {"job": "generate", "out": str(out), **summary}
    if as_json:
        click.echo(json.dumps(summary))
    else:
        click.echo(
            f"generated {summary['messages']:,} messages of {summary['feeds']:,} feeds "
            f"(seed {summary['seed']}) in {out}: {summary['threads']:,} threads, "
            f"{summary['documents']:,} documents; the largest feed writes "
            f"{summary['largest_feed_share']:.0%}; {summary['rounds']} rounds, "
            f"{summary['tasks']:,} tasks, {summary['seconds']} s"
        )
    return 0
