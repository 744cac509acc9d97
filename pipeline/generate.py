"""`tangled pipeline generate`: a signed archive shaped like real social feeds, by Spark.

Theory of operation
-------------------
The archive is what `tangled export` writes, but for its node: `messages/`
in the archive's schema and format (pipeline/schema.py), and an
`archive.json` that says how it was made (`generated`: messages, feeds,
seed) instead of when and by which node; there is no `timelines/`, since
no node kept any (import it into a node and export that to audit one).

The driver plans the archive a round at a time (pipeline/generate_plan.py:
who writes at which step, what each message replies to and names) and hands
each round's groups of feeds to Spark, one task each; a task signs its
feeds' messages of the round and writes their Parquet file itself
(pipeline/generate_sign.py), returning only the ids later rounds name. The
rounds run one after another, each a Spark job over every executor. Nothing
depends on the cluster's size, so one seed gives the same bytes anywhere; a
retried task writes the same file again.

Where it writes: `out` must not exist, or be empty, or (with `force`) hold
an archive and nothing else, whose `messages/`, `timelines/` and
`archive.json` are replaced; anything else is refused with a
`GenerateError` before Spark starts. On a cluster, `out` must be a folder
every executor writes to (a shared file system).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from tanglenode.pipeline.archive import BAD_INPUT

MAX_MESSAGES = 10**8  # the driver's schedule: 4 bytes a message
MAX_FEEDS = 10**6  # the driver derives every feed's key
MAX_SEED = 2**63 - 1
USAGE = 2  # ExitCode.USAGE (node/cli/exits.py), which this package may not import
ARCHIVE_PARTS = ("messages", "timelines", "archive.json")


class GenerateError(Exception):
    """A request `generate` refuses before any work; `exit_code` says which kind."""

    def __init__(self, message: str, exit_code: int = USAGE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def check_request(messages: int, feeds: int, seed: int) -> None:
    """GenerateError unless the numbers make an archive: 1 <= feeds <= messages, in bounds."""
    if not 1 <= messages <= MAX_MESSAGES:
        raise GenerateError(f"--messages {messages}: from 1 to {MAX_MESSAGES:,}")
    if not 1 <= feeds <= MAX_FEEDS:
        raise GenerateError(f"--feeds {feeds}: from 1 to {MAX_FEEDS:,}")
    if feeds > messages:
        raise GenerateError(
            f"--feeds {feeds} is more than --messages {messages}: every feed writes a message"
        )
    if not 0 <= seed <= MAX_SEED:
        raise GenerateError(f"--seed {seed}: from 0 to 2**63 - 1")


def check_out(out: Path, force: bool) -> None:
    """GenerateError unless `out` may be written: missing, empty, or an archive with `force`."""
    if not out.exists():
        return
    if not out.is_dir():
        raise GenerateError(f"{out}: not a folder; --out names the archive's folder", BAD_INPUT)
    try:
        held = sorted(path.name for path in out.iterdir())
    except OSError as error:
        raise GenerateError(f"{out}: cannot read it ({error.strerror})", BAD_INPUT) from None
    if not held:
        return
    others = [name for name in held if name not in ARCHIVE_PARTS]
    if others or "messages" not in held:
        shown = ", ".join(others[:3]) + (", …" if len(others) > 3 else "")
        raise GenerateError(
            f"{out} is not empty and holds no archive alone ({shown or 'no messages/'}); "
            "generate into a new folder",
            BAD_INPUT,
        )
    if not force:
        raise GenerateError(f"{out} holds an archive; --force replaces it", BAD_INPUT)


def _clear(out: Path) -> None:
    for name in ARCHIVE_PARTS:
        path = out / name
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()


def generate(
    spark,
    out: Path,
    messages: int,
    feeds: int,
    seed: int = 0,
    *,
    force: bool = False,
    progress: Callable[[str], None] = lambda text: None,
) -> dict:
    """Write the archive at `out`; a summary of what it holds."""
    from tanglenode.pipeline.generate_plan import Planner, Shape
    from tanglenode.pipeline.generate_sign import sign_unit
    from tanglenode.pipeline.schema import ARCHIVE_FORMAT

    check_request(messages, feeds, seed)
    check_out(out, force)
    started = time.perf_counter()
    shape = Shape.of(messages, feeds, seed)
    planner = Planner(shape)
    _clear(out)
    folder = out / "messages"
    folder.mkdir(parents=True)
    context = spark.sparkContext
    files = tasks = 0
    for number in range(shape.rounds):
        units = planner.plan_round(number)
        results = (
            context.parallelize(units, len(units))
            .map(lambda unit, where=str(folder): sign_unit(where, seed, unit))
            .collect()
        )
        heads: dict[int, tuple[int, bytes]] = {}
        ids: dict[tuple[int, int], bytes] = {}
        for result in results:
            heads.update(result["heads"])
            ids.update(result["ids"])
        planner.learn(heads, ids)
        files += len(results)
        tasks += len(units)
        done = sum(result["rows"] for result in results)
        progress(
            f"round {number + 1}/{shape.rounds}: {done:,} messages signed in {len(units)} tasks"
        )
    summary = {
        "rows": messages,
        "messages": messages,
        "feeds": feeds,
        "seed": seed,
        "rounds": shape.rounds,
        "tasks": tasks,
        "files": files,
        "largest_feed_share": round(shape.sizes[0] / messages, 4),
        "threads": planner.thread_count,
        "documents": planner.doc_count,
    }
    about = {
        "format": ARCHIVE_FORMAT,
        "generated": {"messages": messages, "feeds": feeds, "seed": seed},
        "messages": messages,
        "evidence": 0,
        "timeline_rows": 0,
    }
    (out / "archive.json").write_text(json.dumps(about, indent=1))
    return {**summary, "seconds": round(time.perf_counter() - started, 1)}
