"""`tangled linearize`: the timeline engine as a stand-alone tool over JSON lines.

Each input line is one event in arrival order, `{"id": str, "after": [str]}`
(`"links"` is a synonym of `"after"`; `"time"`, a string, is optional). The
events go through the same LMDB-backed engine as the node's timelines
(`storage.engine.scratch`), in a temporary environment unless a directory is given,
committing every `BATCH_EVENTS` events so memory stays bounded. A bad line stops the run with
a `BadEventLine` that names it; what came before it is committed (it matters
with `--db`), and the bad line changes nothing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from tanglenode.protocol.errors import TanglenodeError
from tanglenode.storage.engine.causal_time import causal_time_order
from tanglenode.storage.engine.scratch import Event as EngineEvent
from tanglenode.storage.engine.scratch import run_engine
from tanglenode.storage.engine.timeline import (
    MAX_REF_BYTES,
    Command,
    CycleError,
    Delete,
    DuplicateEvent,
    Insert,
)

TIMELINE = b"linearize"
BATCH_EVENTS = 2000


class BadEventLine(TanglenodeError):
    """An input line is not a usable event."""

    def __init__(self, line_no: int, reason: str) -> None:
        super().__init__(f"line {line_no}: {reason}")
        self.line_no = line_no
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Event:
    id: str
    after: list[str]
    time: str


@dataclass(frozen=True, slots=True)
class LinearizeResult:
    order: list[str]
    events: int
    commands: int
    seconds: float

    def stats(self) -> dict[str, Any]:
        return {
            "events": self.events,
            "commands": self.commands,
            "commands_per_event": round(self.commands / self.events, 4) if self.events else 0.0,
            "seconds": round(self.seconds, 6),
        }


def parse_event(line_no: int, line: str) -> Event:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as error:
        raise BadEventLine(line_no, f"not JSON ({error.msg})") from None
    if not isinstance(value, dict):
        raise BadEventLine(line_no, "expected a JSON object")
    event_id = _check_id(line_no, value.get("id"), "id")
    if "after" in value and "links" in value:
        raise BadEventLine(line_no, 'give "after" or "links", not both')
    after = value.get("after", value.get("links", []))
    if not isinstance(after, list):
        raise BadEventLine(line_no, '"after" must be a list of ids')
    for link in after:
        _check_id(line_no, link, "a link")
    event_time = value.get("time", "")
    if not isinstance(event_time, str):
        raise BadEventLine(line_no, '"time" must be a string')
    return Event(event_id, after, event_time)


def _check_id(line_no: int, value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise BadEventLine(line_no, f"{what} must be a non-empty string")
    if "\n" in value or "\r" in value:
        raise BadEventLine(line_no, f"{what} must not contain a line break")
    if len(value.encode()) > MAX_REF_BYTES:
        raise BadEventLine(line_no, f"{what} is longer than {MAX_REF_BYTES} bytes of UTF-8")
    return value


def read_events(lines: Iterable[str]) -> Iterator[tuple[int, Event]]:
    """Numbered events of the input; blank lines are skipped."""
    iterator = iter(lines)
    line_no = 0
    while True:
        line_no += 1
        try:
            line = next(iterator)
        except StopIteration:
            return
        except UnicodeDecodeError:
            raise BadEventLine(line_no, "not UTF-8") from None
        if line.strip():
            yield line_no, parse_event(line_no, line)


def format_command(command: Command) -> str:
    if isinstance(command, Insert):
        return f"ins {command.pos} {command.id.decode()}"
    if isinstance(command, Delete):
        return f"del {command.pos}"  # never from linearize's add-only runs; kept total
    return f"mov {command.src} {command.dst}"


def linearize(
    lines: Iterable[str],
    *,
    db: Path | None = None,
    causal_time: bool = False,
    commands_out: IO[str] | None = None,
) -> LinearizeResult:
    """Run the engine over `lines`; the final order (rank order, or causal-time order)."""
    started = time.perf_counter()
    times: list[tuple[str, list[str], str]] = []
    current: list[tuple[int, Event]] = []  # the event being added, to name it if refused

    def engine_events() -> Iterator[EngineEvent]:
        for line_no, event in read_events(lines):
            current[:] = [(line_no, event)]
            if causal_time:
                times.append((event.id, event.after, event.time))
            yield event.id.encode(), [link.encode() for link in event.after], None

    def write_commands(ref: bytes, added: list[Command]) -> None:
        if commands_out is not None:
            commands_out.write(f"add {ref.decode()}\n")
            commands_out.writelines(f"{format_command(c)}\n" for c in added)

    try:
        run = run_engine(
            engine_events(),
            timeline=TIMELINE,
            batch=BATCH_EVENTS,
            path=db,
            prefix="tangled-",
            read_order=not causal_time,
            on_added=write_commands,
        )
    except DuplicateEvent:
        line_no, event = current[0]
        raise BadEventLine(line_no, f"duplicate id {event.id!r}") from None
    except CycleError as error:
        line_no, event = current[0]
        raise BadEventLine(line_no, f"cycle: {event.id!r} {error}") from None
    if causal_time:
        order = [str(event_id) for event_id in causal_time_order(times)]
    else:
        order = [sort_id.decode() for _rank, sort_id in run.entries]
    return LinearizeResult(order, run.events, run.commands, time.perf_counter() - started)
