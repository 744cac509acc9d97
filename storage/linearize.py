"""`tangled linearize`: the timeline engine as a stand-alone tool over JSON lines.

Each input line is one event in arrival order, `{"id": str, "after": [str]}`
(`"links"` is a synonym of `"after"`; `"time"`, a string, is optional). The
events go through the same LMDB-backed engine as the node's timelines, in a
temporary environment unless a directory is given, committing every
`BATCH_EVENTS` events so memory stays bounded. A bad line stops the run with
a `BadEventLine` that names it; what came before it is committed (it matters
with `--db`), and the bad line changes nothing.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import lmdb

from tanglenode.protocol.errors import TanglenodeError
from tanglenode.storage.causal_time import causal_time_order
from tanglenode.storage.timeline import (
    MAX_REF_BYTES,
    Command,
    CycleError,
    Delete,
    DuplicateEvent,
    Insert,
    TimelineReader,
    TimelineTables,
    TimelineWriter,
)

TIMELINE = b"linearize"
BATCH_EVENTS = 2000
MAP_SIZE = 64 * 2**30


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
    event_id = value.get("id")
    _check_id(line_no, event_id, "id")
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


def _check_id(line_no: int, value: Any, what: str) -> None:
    if not isinstance(value, str) or not value:
        raise BadEventLine(line_no, f"{what} must be a non-empty string")
    if "\n" in value or "\r" in value:
        raise BadEventLine(line_no, f"{what} must not contain a line break")
    if len(value.encode()) > MAX_REF_BYTES:
        raise BadEventLine(line_no, f"{what} is longer than {MAX_REF_BYTES} bytes of UTF-8")


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


@contextlib.contextmanager
def _environment(db: Path | None) -> Iterator[lmdb.Environment]:
    with contextlib.ExitStack() as stack:
        if db is None:
            directory = stack.enter_context(tempfile.TemporaryDirectory(prefix="tangled-"))
            env = lmdb.open(directory, map_size=MAP_SIZE, max_dbs=8, sync=False)
        else:
            db.mkdir(parents=True, exist_ok=True)
            env = lmdb.open(str(db), map_size=MAP_SIZE, max_dbs=8)
        stack.callback(env.close)
        yield env


def linearize(
    lines: Iterable[str],
    *,
    db: Path | None = None,
    causal_time: bool = False,
    commands_out: IO[str] | None = None,
) -> LinearizeResult:
    """Run the engine over `lines`; the final order (rank order, or causal-time order)."""
    started = time.perf_counter()
    events = commands = 0
    times: list[tuple[str, list[str], str]] = []
    with _environment(db) as env:
        tables = TimelineTables.open(env)
        pending = read_events(lines)
        finished = False
        while not finished:
            bad_line: BadEventLine | None = None
            with env.begin(write=True) as txn:
                writer = TimelineWriter(txn, tables)
                try:
                    for _ in range(BATCH_EVENTS):
                        line_no, event = next(pending)
                        added = _add(writer, line_no, event)
                        events += 1
                        commands += len(added)
                        if commands_out is not None:
                            commands_out.write(f"add {event.id}\n")
                            commands_out.writelines(f"{format_command(c)}\n" for c in added)
                        if causal_time:
                            times.append((event.id, event.after, event.time))
                except StopIteration:
                    finished = True
                except BadEventLine as error:
                    bad_line = error
                writer.finish()  # a bad line leaves the events before it committed
            if bad_line is not None:
                raise bad_line
        with env.begin() as txn:
            reader = TimelineReader(txn, tables)
            if causal_time:
                order = [str(event_id) for event_id in causal_time_order(times)]
            elif reader.exists(TIMELINE):
                order = [sort_id.decode() for sort_id in reader.order(TIMELINE)]
            else:
                order = []
    return LinearizeResult(order, events, commands, time.perf_counter() - started)


def _add(writer: TimelineWriter, line_no: int, event: Event) -> list[Command]:
    try:
        return writer.add(TIMELINE, event.id.encode(), [link.encode() for link in event.after])
    except DuplicateEvent:
        raise BadEventLine(line_no, f"duplicate id {event.id!r}") from None
    except CycleError as error:
        raise BadEventLine(line_no, f"cycle: {event.id!r} {error}") from None
