"""Extract and load: archives in, Parquet out. The jobs themselves never touch files.

`check_archive` looks at an `--in` before any Spark starts: it reads only
each Parquet file's footer (pyarrow), so a wrong path fails in a fraction of
a second with one line, and it counts the rows from the same footers. An
archive of another format than `ARCHIVE_FORMAT` (pipeline/schema.py) is
refused there, and again by `read_messages` for callers that skip the check:
format 1's timeframe entries have no tags, so no job could link or check
them, and format 2's one `raw` column holds messages of version 2, which no
node accepts any more (their signature covers the content).
"""

from __future__ import annotations

from pathlib import Path

NOT_FOUND = 4  # ExitCode values (node/cli/support.py), which this package may not import
BAD_INPUT = 3


class ArchiveError(Exception):
    """An `--in` that is not an archive `tangled export` wrote; `exit_code` says which case."""

    def __init__(self, message: str, exit_code: int = BAD_INPUT) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _data_files(folder: Path) -> list[Path]:
    """The files Spark reads as a folder's data (it skips names starting with _ or .)."""
    return sorted(
        path for path in folder.iterdir() if path.is_file() and not path.name.startswith(("_", "."))
    )


def check_format(where: object, columns, timeframe_type, declared: bytes | None = None) -> None:
    """ArchiveError unless a messages file is of our format (`ARCHIVE_FORMAT`).

    `columns` are its column names; `timeframe_type` its `timeframe` column's type,
    pyarrow's or Spark's (None: it has none); `declared` the format its schema metadata
    names, if any (files other tools wrote have none: their columns decide).
    """
    from tanglenode.pipeline.schema import ARCHIVE_FORMAT

    ours = f"the pipeline reads format {ARCHIVE_FORMAT} only (`tangled export` writes it)"
    format_2 = (
        f"{where}: an archive of format 2 (a `raw` column of messages of version 2, whose "
        f"signature covers the content); {ours}"
    )
    if declared is not None and declared != str(ARCHIVE_FORMAT).encode():
        if declared == b"2":
            raise ArchiveError(format_2)
        found = declared.decode("ascii", "replace")[:20]
        raise ArchiveError(f"{where}: an archive of format {found}; {ours}")
    if timeframe_type is None:
        raise ArchiveError(f"{where}: not an archive's messages: no timeframe column")
    entry = getattr(timeframe_type, "value_type", None) or getattr(
        timeframe_type, "elementType", None
    )
    fields = getattr(entry, "names", None) or getattr(entry, "fieldNames", lambda: None)()
    if not fields or not {"feed", "seq"} <= set(fields):
        raise ArchiveError(f"{where}: not an archive's messages: no timeframe entries")
    if "tag" not in fields:
        raise ArchiveError(
            f"{where}: an archive of format 1 (timeframe entries without tags, before "
            f"messages of version 2); {ours}"
        )
    if "header" not in columns and "raw" in columns:
        raise ArchiveError(format_2)


def _count_rows(archive: Path, part: str, schema) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tanglenode.pipeline.schema import FORMAT_KEY

    folder = archive / part
    if not folder.is_dir():
        raise ArchiveError(
            f"{archive}: not an archive: no {part}/ folder (`tangled export --out` writes one)"
        )
    try:
        files = _data_files(folder)
    except OSError as error:
        raise ArchiveError(f"{folder}: cannot read it ({error.strerror})") from None
    if not files:
        raise ArchiveError(f"{archive}: the archive holds no {part} (no files in {part}/)")
    rows = 0
    for path in files:
        try:
            metadata = pq.read_metadata(path)
        except (pa.ArrowException, OSError) as error:
            reason = " ".join(str(error).split())[:200]
            raise ArchiveError(f"{path}: not a Parquet file of an archive ({reason})") from None
        arrow = metadata.schema.to_arrow_schema()
        declared = (arrow.metadata or {}).get(FORMAT_KEY)
        if part == "messages" and (declared is not None or "timeframe" in arrow.names):
            # an archive's messages, of our format or an older one: told as such first,
            # not by the columns an older one lacks
            timeframe = arrow.field("timeframe").type if "timeframe" in arrow.names else None
            check_format(path, arrow.names, timeframe, declared)
        missing = [name for name in schema.names if name not in arrow.names]
        if missing:
            raise ArchiveError(f"{path}: not an archive's {part}: no {', '.join(missing)} column")
        rows += metadata.num_rows
    return rows


def check_archive(archive: Path, *, timelines: bool = False) -> int:
    """The rows of `archive`'s messages (its timelines checked too if asked), or ArchiveError."""
    from tanglenode.pipeline.schema import MESSAGE_SCHEMA, TIMELINE_SCHEMA

    archive = Path(archive)
    if not archive.exists():
        raise ArchiveError(f"{archive}: no such archive", NOT_FOUND)
    if not archive.is_dir():
        raise ArchiveError(
            f"{archive}: not an archive (an archive is the folder `tangled export --out` writes)"
        )
    rows = _count_rows(archive, "messages", MESSAGE_SCHEMA)
    if timelines:
        _count_rows(archive, "timelines", TIMELINE_SCHEMA)
    return rows


def read_messages(spark, archives: list[Path]):
    """Every archive's messages, one row per id (archives of several nodes overlap).

    ArchiveError for an archive of another format (its schema says so without a job).
    """
    frames = [spark.read.parquet(str(Path(archive) / "messages")) for archive in archives]
    for archive, frame in zip(archives, frames, strict=True):
        timeframe = frame.schema["timeframe"].dataType if "timeframe" in frame.columns else None
        check_format(archive, frame.columns, timeframe)
    messages = frames[0]
    for frame in frames[1:]:
        messages = messages.unionByName(frame)
    return messages.dropDuplicates(["id"])


def read_timelines(spark, archive: Path):
    return spark.read.parquet(str(Path(archive) / "timelines"))


def write(frame, out: Path, name: str) -> Path:
    target = Path(out) / name
    frame.write.mode("overwrite").parquet(str(target))
    return target
