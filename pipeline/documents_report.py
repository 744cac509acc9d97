"""What `docs` found, read back from its Parquet: a bounded summary, as JSON or a table.

As pipeline/report.py does for the other jobs: Spark is asked for counts and
the first `show` rows only, and a shown row holds no text or blame (those are
in OUT/docs/, a document's text of any length), so the summary's size does
not grow with the documents'. Readable documents come first, the most edited
first; then the unreadable, by reason.
"""

from __future__ import annotations

import shutil

from tanglenode.pipeline.report import id_text, table

SHOWN = ("root", "title", "author", "length", "versions", "set_aside", "unreadable")
COLUMNS = [
    ("root", "document"),
    ("title", "title"),
    ("author", "created by"),
    ("length", "length"),
    ("versions", "versions"),
    ("authors", "authors"),
    ("set_aside", "set aside"),
    ("unreadable", "unreadable"),
]


def summarize(job: str, spark, target, show: int) -> dict:
    """The `docs` result folder -> {"rows", "documents", "readable", "unreadable",
    "reasons" (count per unreadable reason), "shown"} (ids as text)."""
    from pyspark.sql import functions as F

    frame = spark.read.parquet(str(target))
    rows = frame.count()
    reasons = {
        row["unreadable"]: row["count"]
        for row in frame.where(F.col("unreadable").isNotNull())
        .groupBy("unreadable")
        .count()
        .collect()
    }
    order = (F.col("unreadable").isNotNull(), "unreadable", F.desc("versions"), "root")
    picked = frame.select(*SHOWN, F.size("authors").alias("authors"))
    shown = [
        {key: id_text(key, value) for key, value in row.asDict().items()}
        for row in picked.orderBy(*order).limit(show).collect()
    ]
    for row in shown:
        if row["unreadable"] is not None:
            row["authors"] = None  # Spark's size of a null array is -1
    unreadable = sum(reasons.values())
    return {
        "rows": rows,
        "documents": rows,
        "readable": rows - unreadable,
        "unreadable": unreadable,
        "reasons": reasons,
        "shown": shown,
    }


def human(job: str, summary: dict, archives: int) -> str:
    """A headline, then the table of the first documents."""
    n, out = summary["documents"], summary["out"]
    reasons = ", ".join(f"{k} {v:,}" for k, v in sorted(summary["reasons"].items()))
    unreadable = f", {summary['unreadable']:,} unreadable ({reasons})" if reasons else ""
    head = (
        f"docs of {archives:,} archive{'s' * (archives != 1)}: "
        f"{n:,} document{'s' * (n != 1)}, {summary['readable']:,} readable{unreadable}"
    )
    lines = [head, f"results: {out}"]
    shown = summary["shown"]
    if shown:
        width = shutil.get_terminal_size((100, 24)).columns
        lines += ["", *table(COLUMNS, shown, width)]
    if n > len(shown):
        lines.append(f"… and {n - len(shown):,} more (all in {out}; --show N for more)")
    return "\n".join(lines)
