"""`tangled linearize`: the timeline engine alone, on JSON lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from tanglenode.storage.engine.linearize import linearize


@click.command("linearize")
@click.argument("source", type=click.File("r", encoding="utf-8"), default="-", metavar="[FILE]")
@click.option("--db", type=click.Path(file_okay=False, path_type=Path), help="Keep the LMDB here.")
@click.option(
    "--commands",
    "commands_file",
    type=click.File("w", encoding="utf-8"),
    help="Write each event's ins/mov commands to this file.",
)
@click.option("--stats", is_flag=True, help="One JSON line of figures on stderr.")
@click.option(
    "--order",
    type=click.Choice(["rank", "causal-time"]),
    default="rank",
    show_default=True,
    help="rank: the timeline order; causal-time: causality, then (time, id).",
)
def linearize_command(
    source: Any, db: Path | None, commands_file: Any, stats: bool, order: str
) -> None:
    """Linearize JSON-lines events {"id", "after"|"links", "time"} from FILE or stdin."""
    result = linearize(
        source, db=db, causal_time=order == "causal-time", commands_out=commands_file
    )
    click.echo("".join(f"{event_id}\n" for event_id in result.order), nl=False)
    if stats:
        click.echo(json.dumps(result.stats()), err=True)
