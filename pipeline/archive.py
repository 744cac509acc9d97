"""Extract and load: archives in, Parquet out. The jobs themselves never touch files.

`check_archive` looks at an `--in` before any Spark starts: it reads only
each Parquet file's footer (pyarrow), so a wrong path fails in a fraction of
a second with one line, and it counts the rows from the same footers.
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


def _count_rows(archive: Path, part: str, schema) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

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
        names = set(metadata.schema.to_arrow_schema().names)
        missing = [name for name in schema.names if name not in names]
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
    """Every archive's messages, one row per id (archives of several nodes overlap)."""
    frames = [spark.read.parquet(str(Path(archive) / "messages")) for archive in archives]
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
