"""`tangled export` and `tangled import`: backups of the store, and restoring them.

`export --out DIR` writes a Parquet archive (pipeline/export.py), `export
--bundle FILE` a bundle (storage/clients/bundle.py); both read the store in short read
transactions, so they run beside a running node. `import PATH` is offline:
it takes the data directory's lock (so it refuses while the node runs),
ingests through `store.writes.ingest`, the path every peer's message takes,
and then, when the import left more than a quarter of the file as free
pages (copy-on-write leaves them behind a long run of write transactions),
gives them back as `tangled compact` does (storage/tools/compact.py).
docs/BACKUP.md has the formats and the restore recipe.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import click

from tanglenode.config.secret import read_secret
from tanglenode.node.cli.exits import Interrupted
from tanglenode.node.cli.support import (
    BadInput,
    Context,
    ExitCode,
    emit_json,
    json_option,
    log,
)
from tanglenode.storage.clients.bundle import (
    BadRecord,
    ImportSummary,
    archive_parts,
    archive_rows,
    import_messages,
    read_archive,
    read_bundle,
    write_bundle,
)
from tanglenode.storage.engine.command_log import NO_LOG
from tanglenode.storage.errors import DataDirInUse, StorageError
from tanglenode.storage.tools.compact import Compacted, compact, free_share


@contextlib.contextmanager
def _progress(length: int | None, label: str) -> Iterator[Any]:
    """A progress bar on stderr when it is a terminal and the length is known; else nothing."""
    if length and sys.stderr.isatty():
        with click.progressbar(length=length, label=label, file=sys.stderr) as bar:
            yield bar.update
    else:
        yield lambda n: None


@contextlib.contextmanager
def _atomic_output(path: Path) -> Iterator[BinaryIO]:
    """A new file that appears under `path` only once it is whole and synced."""
    if path.exists():
        raise BadInput(f"{path} exists; export into a new file")
    if not path.parent.is_dir():
        raise BadInput(f"no directory {path.parent}")
    partial = path.with_name(f".{path.name}.partial-{os.getpid()}")
    try:
        with partial.open("xb") as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


@click.command("export")
@click.option(
    "--out", type=click.Path(file_okay=False, path_type=Path), help="Write a Parquet archive here."
)
@click.option("--bundle", metavar="FILE", help="Write a bundle to FILE ('-' for stdout).")
@click.pass_obj
def export_command(obj: Context, out: Path | None, bundle: str | None) -> None:
    """Write the store as a Parquet archive or a bundle, even while the node runs.

    Both formats, and how to restore them with `tangled import`: docs/BACKUP.md.
    """
    if (out is None) == (bundle is None):
        raise click.UsageError("give one of --out DIR (an archive) or --bundle FILE")
    if out is not None:
        _export_archive(obj, out)
        return
    with obj.open_store() as store:
        figures = store.feeds.statistics()
        total = figures["messages"] + figures["evidence"]
        with _progress(total, "exporting") as progress:
            if bundle == "-":
                try:
                    counts = write_bundle(store, sys.stdout.buffer, progress)
                    sys.stdout.buffer.flush()
                except BrokenPipeError:
                    raise BadInput("stdout was closed before the bundle was written") from None
            else:
                with _atomic_output(Path(bundle)) as file:  # type: ignore[arg-type]
                    counts = write_bundle(store, file, progress)
    click.echo(json.dumps(counts), err=bundle == "-")


def _export_archive(obj: Context, out: Path) -> None:
    from tanglenode.pipeline.export import export  # pyarrow loads only for this command

    if out.exists() and any(out.iterdir()):
        raise BadInput(f"{out} is not empty; export into a new directory")
    secret = obj.settings.secret_path
    feed = read_secret(secret).public if secret.exists() else None  # archive.json names it
    with obj.open_store() as store:
        figures = store.feeds.statistics()
        total = figures["messages"] + figures["evidence"]
        with _progress(total, "exporting") as progress:
            counts = export(store, out, progress, feed)
    click.echo(json.dumps(counts))


def _compact_after_import(obj: Context) -> Compacted | None:
    """The store without the free pages the import left (`tangled compact`), or None, said
    on stderr, when it cannot be compacted now: another process has it open, or the copy
    could not be written (no room, no memory). The import stands either way: its messages
    are committed, and compaction only gives back pages."""
    try:
        return compact(obj.settings.store_path, obj.settings.storage.map_size)
    except StorageError as error:
        click.echo(f"tangled: not compacted: {error}", err=True)
        return None


def _records(source: str, max_bytes: int) -> tuple[Iterator[bytes], int | None, str]:
    """The records of PATH (an archive directory, a bundle file, or '-'), their total for the
    progress bar, and what it counts."""
    if source == "-":
        return read_bundle(sys.stdin.buffer, max_bytes), None, "bytes"
    path = Path(source)
    if path.is_dir():
        try:
            parts = archive_parts(path)
        except ValueError as error:
            raise BadInput(str(error)) from None
        return read_archive(parts, max_bytes), archive_rows(parts), "records"
    try:
        file = path.open("rb")
    except FileNotFoundError:
        raise BadInput(f"no file {path}") from None
    except OSError as error:
        raise BadInput(f"cannot read {path}: {error.strerror}") from None

    def records() -> Iterator[bytes]:
        with file:
            yield from read_bundle(file, max_bytes)

    return records(), os.fstat(file.fileno()).st_size, "bytes"


COMPACT_ABOVE = 0.25  # the share of free pages past which an import compacts the store
# ... or the share of the store's pages the import added: B-trees keyed by hashes fill by
# random inserts to about two thirds a page, which compaction packs (1.90x the signed bytes
# against 2.53x at 300K messages imported: docs/BENCHMARKS.md, issue 45)
COMPACT_GROWN = 0.5


def _pages_in_use(store) -> int:
    return store.ctx.env.info()["last_pgno"] + 1


def _held(store) -> int:
    """The messages and proofs `store` holds."""
    figures = store.feeds.statistics()
    return figures["messages"] + figures["evidence"]


@click.command("import")
@click.argument("source", metavar="PATH")
@click.option(
    "--no-compact",
    is_flag=True,
    help="Leave the store as the import wrote it (by default it is compacted, as `tangled "
    "compact` does, when over a quarter of the file is free or the import wrote half of it).",
)
@json_option
@click.pass_obj
def import_command(obj: Context, source: str, no_compact: bool, as_json: bool) -> int:
    """Ingest PATH, a bundle ('-': stdin) or an archive; the node must be stopped."""
    try:
        lock = obj.lock_data_dir("import")
    except DataDirInUse as error:
        raise DataDirInUse(f"{error}; stop it first (import is offline)", error.pid) from None
    summary = ImportSummary()
    failure: BadRecord | None = None
    with lock:
        records, total, unit = _records(source, obj.settings.limits.max_message_bytes)
        # No command log: no one watched the versions an offline import makes, and a
        # subscriber of an earlier one starts again from a snapshot, as after a reindex.
        opened = obj.open_store(create=True, retention=NO_LOG)
        with opened as store, _progress(total, "importing") as progress:

            def step(raw: bytes) -> None:
                progress(1 if unit == "records" else len(raw) + 4)

            def committed(summary: ImportSummary) -> None:  # TANGLED_LOG_LEVEL=debug shows it
                log.debug("import committed", records=summary.records)

            def fallback() -> None:
                log.warning("the verifying worker stopped: verifying on this core from here")

            held, pages_before = _held(store), _pages_in_use(store)
            try:
                import_messages(
                    store, records, summary, step, committed=committed, on_fallback=fallback
                )
            except BadRecord as error:
                failure = error
            except KeyboardInterrupt:  # a ^C: what each batch committed stands
                new = _held(store) - held
                name = "stdin" if source == "-" else source
                raise Interrupted(
                    f"interrupted after {summary.records} records of {name}: {new} new "
                    "messages committed; run the same import again to finish it (what the "
                    "store holds already counts as duplicate)"
                ) from None
            free = free_share(store.ctx.env)
            pages = _pages_in_use(store)
            grown = (pages - pages_before) / pages
        compacted = None
        worth = free > COMPACT_ABOVE or grown >= COMPACT_GROWN
        if not no_compact and summary.as_dict()["accepted"] and worth:
            compacted = _compact_after_import(obj)
    if as_json:
        sizes = compacted and {"before": compacted.before, "after": compacted.after}
        emit_json(
            {**summary.as_dict(), "error": str(failure) if failure else None} | {"compacted": sizes}
        )
    else:
        click.echo(summary.line())
        if compacted is not None:
            click.echo(
                f"compacted: {compacted.before / 2**20:.1f} MiB -> "
                f"{compacted.after / 2**20:.1f} MiB"
            )
    if failure is not None:
        raise BadInput(
            f"{source}: {failure}; the {summary.records} records before it were imported"
        )
    if summary.rejected:
        click.echo(f"tangled: {sum(summary.rejected.values())} messages rejected", err=True)
        return ExitCode.BAD_INPUT
    return ExitCode.OK
