"""`tangled doc replay TRACE --out FILE`: an editing trace replayed through the real path.

The trace, sequential or concurrent (with `agent` and `parents`), in the format of
josephg/editing-traces (tests/data/README.md, "The editing traces"), goes into a fresh
store through `storage.clients.trace_replay.replay`: one feed per agent, edits grouped into
messages as an editor flushes its buffer, timeframes from the trace's
parents, named as a node names its heads (at most 32, by the rule of
storage/feeds/timeframe.py, however many authors a merge joins), every
message signed and ingested (verify, store, process, weave). The final
text is written to FILE exactly, with no newline added.
The store is a temporary directory unless `--store DIR` keeps it (DIR must
not hold a store already). Exit 5 when the trace's `endContent` differs.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from tanglenode.node.cli.support import BadInput, ExitCode, emit_json, json_option
from tanglenode.protocol.identity import message_text
from tanglenode.storage.clients.trace_replay import BadTrace, load_trace, replay
from tanglenode.storage.store import FeedStore


@click.command("replay")
@click.argument("trace", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write the final text (exactly, no newline added).",
)
@click.option(
    "--store",
    "store_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Keep the store here (a new directory) instead of a temporary one.",
)
@json_option
def doc_replay(trace: Path, out: Path, store_dir: Path | None, as_json: bool) -> None:
    """Replay an editing TRACE into a fresh store; write the final text to FILE."""
    try:
        loaded = load_trace(trace)
    except OSError as error:
        raise BadInput(f"cannot read {trace}: {error.strerror or error}") from None
    except BadTrace as error:
        raise BadInput(f"{trace}: {error}") from None
    if store_dir is not None and (store_dir / "data.mdb").exists():
        raise BadInput(f"{store_dir} already holds a store; replay needs a fresh one")
    with (
        tempfile.TemporaryDirectory(prefix="tangled-replay-") as scratch,
        FeedStore(store_dir or scratch) as store,
    ):
        try:
            report = replay(loaded, store, title=trace.name)
        except BadTrace as error:  # a concurrent trace's positions are checked as it replays
            raise BadInput(f"{trace}: {error}") from None
    try:
        with open(out, "w", encoding="utf-8", newline="") as file:
            file.write(report.text)
    except OSError as error:
        raise BadInput(f"cannot write {out}: {error.strerror or error}") from None
    summary = {
        "doc": message_text(report.doc),
        "txns": report.txns,
        "edits": report.edits,
        "agents": report.agents,
        "messages": report.messages,
        "seconds": round(report.seconds, 3),
        "characters": len(report.text),
        "matches_end_content": report.matches,
    }
    if as_json:
        emit_json(summary)
    else:
        verdict = {True: "matches endContent", False: "DIFFERS from endContent", None: ""}
        click.echo(
            f"{report.edits} edits by {report.agents} agent(s) in {report.messages} messages, "
            f"{report.seconds:.2f}s: {len(report.text)} characters to {out} "
            f"{verdict[report.matches]}".rstrip()
        )
    if report.matches is False:
        raise SystemExit(ExitCode.CHECK_FAILED)
