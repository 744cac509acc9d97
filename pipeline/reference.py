"""The reference ScuttleSort (`scuttlesort` 0.0.9) on one delivered sequence, under a time limit.

The reference keeps its linearization in a Python list in memory and
reports each edit command, after its per-event optimizer, through the
callback it is built with: those calls are what the paper's table counts
(bench/timeline.py drives it the same way). Its cost grows with the
tangle, so a run stops once `limit_seconds` have passed and reports no
count (`None`); the sweep marks such cells as not run. The package is a
development dependency (`.[dev]`): where it is missing, or the limit is 0,
no run is made and the status says why.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

CHECK_EVERY = 256  # events between looks at the clock


@dataclass(frozen=True, slots=True)
class ReferenceRun:
    status: str  # "finished", "time-limit", "skipped" (limit 0) or "unavailable"
    commands: int | None  # None unless finished
    events: int  # events added before it finished or stopped
    seconds: float


def run_reference(
    events: Iterable[tuple[str, tuple[str, ...]]], limit_seconds: float
) -> ReferenceRun:
    """Add (name, links) pairs in order; the reference's command count, unless time ran out."""
    if limit_seconds <= 0:
        return ReferenceRun("skipped", None, 0, 0.0)
    try:
        from scuttlesort import Timeline
    except ImportError:
        return ReferenceRun("unavailable", None, 0, 0.0)
    count = 0

    def notify(*_command) -> None:
        nonlocal count
        count += 1

    timeline = Timeline(notify)
    started = time.perf_counter()
    added = 0
    for name, after in events:
        timeline.add(name, list(after))
        added += 1
        if added % CHECK_EVERY == 0 and time.perf_counter() - started > limit_seconds:
            return ReferenceRun("time-limit", None, added, time.perf_counter() - started)
    return ReferenceRun("finished", count, added, time.perf_counter() - started)
