"""Timelines' command logs: appending an event, reading after a version, floor and retention.

Theory of operation
-------------------
A timeline changes only by numbered commands (`ins`, `mov`, `del`:
docs/TIMELINES.md, "Replicas"). Each event's commands are one row of
`tl-log`, keyed by the timeline's number (u32) and the version of the
event's first command (u64); the timeline's version (in `tl-meta`) is the
number of its last command. So the commands after version V are a range
read, from the row holding command V + 1.

The log holds only the commands after the timeline's *floor* (`tl-meta`,
0 until something raises it), so it holds `version - floor` commands,
known without reading it. Two things raise the floor:

- a rebuild (`tangled reindex`, storage/reindex.py) drops the whole log and
  numbers what follows from above the old head (`drop_log`): the new log
  told how an empty timeline grew, which no replica of the old one can
  apply;
- the retention (`LogRetention`): the log keeps about the `keep` most
  recent commands. A log is trimmed only once it holds more than
  `keep + slack`, at the end of the write transaction that appended to it
  (the writer's `finish`), so the rows it drops and the floor it raises
  commit with the appends, or not at all. Its oldest rows go until at most
  `keep` commands remain, and the floor becomes the version before the
  first row kept: always an event's last command, since a row is one
  event (an event of more than `keep` commands alone empties the log, the
  floor at the head). Each trim drops at least `slack` commands' rows, so
  a log costs, amortised, one row deleted per event appended once it is
  full, and one seek per `slack` commands.

Whoever reads below the floor gets `BelowLogFloor` (storage/errors.py), in
the read's own transaction, never an empty or partial list that could pass
for "nothing new": a subscriber takes it as having fallen behind and starts
again from a snapshot, IPC `commands` answers not-found, a digest hashes
the order again (docs/IPC.md, docs/WEB.md, storage/views/digest.py).

Retention counts commands, not time: an age would need a time in every row
(8 bytes more on rows of 20 to 60 bytes) and a clock to trust, and a count
bounds what matters, the log's size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tanglenode.storage.engine.engine_commands import Command, decode_commands
from tanglenode.storage.engine.keys import U64
from tanglenode.storage.errors import BelowLogFloor

if TYPE_CHECKING:
    from tanglenode.storage.engine.txn import Db, Txn

__all__ = [
    "DEFAULT_KEEP_COMMANDS",
    "DEFAULT_RETENTION",
    "KEEP_ALL",
    "MIN_SLACK",
    "NO_LOG",
    "LogRetention",
    "append_event",
    "drop_log",
    "read_log",
    "trim_log",
]

# Keeps a conversation of a few thousand messages whole (a tangle's log is about one
# command a message) and bounds the spacetime's, which grows with every message held.
DEFAULT_KEEP_COMMANDS = 4096
MIN_SLACK = 64  # commands past `keep` before a trim, at least: one seek drops many rows


@dataclass(frozen=True, slots=True)
class LogRetention:
    """How much of its command log each timeline keeps: about the `keep` most recent
    commands (None: every one), trimmed once it holds more than `keep + slack`; or, not
    `logged` (`NO_LOG`), none: the floor follows the version, so a subscriber of any
    earlier version starts from a snapshot (an offline import, which no one watched)."""

    keep: int | None = None
    slack: int = 0
    logged: bool = True

    def __post_init__(self) -> None:
        if self.keep is not None and (type(self.keep) is not int or self.keep < 1):
            raise ValueError(f"keep must be None or an integer >= 1, not {self.keep!r}")
        if type(self.slack) is not int or self.slack < 0:
            raise ValueError(f"slack must be an integer >= 0, not {self.slack!r}")

    @classmethod
    def keeping(cls, count: int) -> LogRetention:
        """The retention of the setting `timelines.keep_commands`: `count` commands and a
        slack of an eighth of them (at least `MIN_SLACK`); 0 keeps every command."""
        if type(count) is not int or count < 0:
            raise ValueError(f"keep_commands must be an integer >= 0, not {count!r}")
        if count == 0:
            return cls()
        return cls(count, max(MIN_SLACK, count // 8))

    def floor_due(self, version: int, floor: int) -> bool:
        """Whether a log holding the commands floor+1 .. version is due for a trim."""
        if not self.logged:
            return version > floor
        return self.keep is not None and version - floor > self.keep + self.slack


KEEP_ALL = LogRetention()
NO_LOG = LogRetention(logged=False)
DEFAULT_RETENTION = LogRetention.keeping(DEFAULT_KEEP_COMMANDS)


def append_event(
    txn: Txn, log: Db, prefix: bytes, version: int, row: bytes, retention: LogRetention
) -> None:
    """Log one event's encoded commands (`row`), numbered on from `version`, if the
    `retention` keeps any."""
    if retention.logged:
        txn.put(prefix + U64.pack(version + 1), row, db=log)


def trim_log(
    txn: Txn, log: Db, prefix: bytes, version: int, floor: int, retention: LogRetention
) -> int:
    """Trim the log of timeline `prefix` (at `version`, holding the commands after `floor`)
    to `retention` if it is due; the floor it has then."""
    if not retention.floor_due(version, floor):
        return floor
    keep = retention.keep if retention.logged else 0
    assert keep is not None  # floor_due says so
    cursor = txn.cursor(db=log)
    if not cursor.set_range(prefix):
        return version
    key = cursor.key()
    while key[:4] == prefix:
        first: int = U64.unpack(key[4:])[0]
        if version - first + 1 <= keep:
            return first - 1  # the event before it is the last one dropped
        if not cursor.delete():
            break
        key = cursor.key()
    return version  # the newest event alone was longer than the window


def drop_log(txn: Txn, log: Db, prefix: bytes) -> None:
    """Delete every row of the log of timeline `prefix`."""
    cursor = txn.cursor(db=log)
    if cursor.set_range(prefix):
        while cursor.key()[:4] == prefix:
            if not cursor.delete():
                break


def read_log(txn: Txn, log: Db, prefix: bytes, since: int, floor: int, limit: int) -> list[Command]:
    """Up to `limit` commands numbered above `since`, in order; `BelowLogFloor` when the log
    no longer holds the one after `since`."""
    if since < floor:
        raise BelowLogFloor(since, floor)
    cursor = txn.cursor(db=log)
    wanted = prefix + U64.pack(since + 1)
    # The row holding command since + 1 is the last one keyed at or below it.
    found = cursor.set_range(wanted)
    if (not found or cursor.key() != wanted) and not (cursor.prev() if found else cursor.last()):
        return []
    commands: list[Command] = []
    for key, raw in cursor:
        if key[:4] != prefix or len(commands) >= limit:
            break
        first = U64.unpack(key[4:])[0]
        skip = max(0, since + 1 - first)
        commands.extend(decode_commands(raw)[skip:])
    return commands[:limit]
