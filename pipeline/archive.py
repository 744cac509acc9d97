"""Extract and load: archives in, Parquet out. The jobs themselves never touch files."""

from __future__ import annotations

from pathlib import Path


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
