"""What a job found, read back from its Parquet output: a bounded summary, as JSON or tables.

`summarize` asks Spark only for counts and the first `show` rows in a stated
order, so a report of a billion rows costs what a report of ten does. Ids
are written as the CLI writes them: a feed `@…`, a message or root `%…`.
`human` lays the summary out for a terminal; when a table would not fit the
terminal's width, its ids are cut to `%AbCdEfGh…` (the JSON keeps them whole).
"""

from __future__ import annotations

import shutil
import unicodedata
from typing import Any

from tanglenode.protocol.identity import feed_text, message_text

FEED_COLUMNS = frozenset({"author"})
MESSAGE_COLUMNS = frozenset({"id", "root", "node_id", "batch_id"})
SHORT = 9  # characters of an id kept in a cut-down table: the sigil and 8
CELL = 120  # characters of text a cell keeps (a detail, a tangle's name: the archive's text)


def id_text(column: str, value: Any) -> Any:
    if isinstance(value, bytearray | bytes):
        value = bytes(value)
        return feed_text(value) if column in FEED_COLUMNS else message_text(value)
    return value


def _rows(frame, show: int, *order) -> list[dict]:
    return [
        {key: id_text(key, value) for key, value in row.asDict().items()}
        for row in frame.orderBy(*order).limit(show).collect()
    ]


def _counted(frame, column: str) -> dict[str, int]:
    return {row[column]: row["count"] for row in frame.groupBy(column).count().collect()}


def summarize(job: str, spark, target, show: int) -> dict:
    """The job's result folder -> {"rows", and what this job reports} (ids as text)."""
    from pyspark.sql import functions as F

    frame = spark.read.parquet(str(target))
    rows = frame.count()
    if job == "stats":
        totals = frame.where(F.col("timeline") == "all").collect()
        per_timeline = frame.where(F.col("timeline") != "all")
        spacetime_first = F.col("timeline") != "spacetime"
        shown = _rows(per_timeline, show, spacetime_first, F.desc("messages"), "timeline")
        for row in shown:
            for key in ("feeds", "fork_evidence", "tangles"):
                row.pop(key, None)
        total = totals[0].asDict() if totals else {}
        keys = ("feeds", "messages", "fork_evidence", "tangles")
        return {
            "rows": rows,
            "totals": {key: total.get(key) or 0 for key in keys},
            "timelines": rows - len(totals),
            "shown": shown,
        }
    if job == "verify":
        return {
            "rows": rows,
            "problems": rows,
            "reasons": _counted(frame, "reason"),
            "shown": _rows(frame, show, "reason", "author", "seq", "id"),
        }
    if job == "audit":
        return {
            "rows": rows,
            "differences": rows,
            "kinds": _counted(frame, "difference"),
            "shown": _rows(frame, show, "timeline", "root", "position"),
        }
    per_timeline = frame.groupBy("timeline", "root").agg(
        F.count("*").alias("positions"), (F.max("rank") + 1).alias("height")
    )
    return {
        "rows": rows,
        "timelines": per_timeline.count(),
        "shown": _rows(per_timeline, show, F.desc("positions"), "timeline", "root"),
    }


def exit_code(job: str, summary: dict) -> int:
    """5 when verify found problems or audit differences (as `tangled check`), else 0."""
    return 5 if summary.get("problems") or summary.get("differences") else 0


# -- on a terminal ------------------------------------------------------------------------

COLUMNS = {
    "stats": [
        ("timeline", "timeline"),
        ("root", "root"),
        ("messages", "messages"),
        ("width", "width"),
        ("height", "height"),
        ("widest_rank", "widest rank"),
    ],
    "verify": [
        ("reason", "reason"),
        ("author", "author"),
        ("seq", "seq"),
        ("id", "message"),
        ("detail", "detail"),
    ],
    "audit": [
        ("timeline", "timeline"),
        ("root", "root"),
        ("position", "position"),
        ("difference", "difference"),
        ("node_id", "node's message"),
        ("batch_id", "batch's message"),
    ],
    "linearize": [
        ("timeline", "timeline"),
        ("root", "root"),
        ("positions", "positions"),
        ("height", "height"),
    ],
}


def _cell(value: Any, short: bool) -> str:
    if value is None:
        return "-"
    # Names and details are the archive's text: one line, no control characters, bounded.
    text = " ".join(str(value).split())
    text = "".join(c for c in text if unicodedata.category(c)[0] != "C")
    if len(text) > CELL:
        text = text[: CELL - 1] + "…"
    if short and text[:1] in "@%" and len(text) > SHORT + 1:
        return text[:SHORT] + "…"
    return text


def table(columns: list[tuple[str, str]], rows: list[dict], width: int) -> list[str]:
    """Aligned lines, numbers to the right; ids cut short when the full table is too wide."""
    for short in (False, True):
        cells = [[_cell(row.get(key), short) for key, _title in columns] for row in rows]
        widths = [
            max([len(title)] + [len(line[i]) for line in cells])
            for i, (_key, title) in enumerate(columns)
        ]
        if sum(widths) + 2 * (len(widths) - 1) <= width:
            break
    numeric = [all(isinstance(row.get(key), int) for row in rows) for key, _t in columns]

    def line(values: list[str]) -> str:
        parts = [
            value.rjust(w) if right else value.ljust(w)
            for value, w, right in zip(values, widths, numeric, strict=True)
        ]
        return "  ".join(parts).rstrip()

    return [line([title for _key, title in columns]), *(line(values) for values in cells)]


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def human(job: str, summary: dict, archives: int) -> str:
    """The summary for a person: a headline, then the table of the first rows."""
    of = f"{_plural(archives, 'archive')}"
    out = summary["out"]
    if job == "stats":
        t = summary["totals"]
        head = (
            f"stats of {of}: {_plural(t['feeds'], 'feed')}, {_plural(t['messages'], 'message')}, "
            f"{t['fork_evidence']:,} fork evidence, {_plural(t['tangles'], 'tangle')}"
        )
        count = summary["timelines"]
    elif job == "verify":
        n = summary["problems"]
        reasons = ", ".join(f"{k} {v:,}" for k, v in sorted(summary["reasons"].items()))
        head = f"verify of {of}: " + (
            f"{_plural(n, 'problem')} ({reasons})" if n else "no problems"
        )
        count = n
    elif job == "audit":
        n = summary["differences"]
        kinds = ", ".join(f"{k} {v:,}" for k, v in sorted(summary["kinds"].items()))
        head = (
            f"audit: {_plural(n, 'difference')} between the node's timelines and the batch "
            f"linearization ({kinds})"
            if n
            else "audit: the node's timelines equal the batch linearization, position for position"
        )
        count = n
    else:
        count = summary["timelines"]
        positions = _plural(summary["rows"], "position")
        head = f"linearize of {of}: {_plural(count, 'timeline')}, {positions}"
    lines = [head, f"results: {out}"]
    shown = summary["shown"]
    if shown:
        width = shutil.get_terminal_size((100, 24)).columns
        lines += ["", *table(COLUMNS[job], shown, width)]
    if count > len(shown):
        lines.append(f"… and {count - len(shown):,} more (all in {out}; --show N for more)")
    return "\n".join(lines)
