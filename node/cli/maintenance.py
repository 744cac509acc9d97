"""The store's offline maintenance: `tangled reindex [VIEW]...` and `tangled compact`.

Both take the data directory's lock (storage/feeds/datalock.py), so they
refuse while the node runs. `reindex` throws derived views away and builds
them again from the messages in one write transaction (storage/reindex.py),
printing its progress on stderr; `--verify` rebuilds inside a transaction it
then aborts and reports the views that differ from their messages (exit 5),
writing nothing. `compact` rewrites `data.mdb` without its free pages
(storage/tools/compact.py).
"""

from __future__ import annotations

import click

from tanglenode.node.cli.support import Context, ExitCode, emit_json, json_option
from tanglenode.storage.registry import view_names


@click.command()
@click.argument("views", nargs=-1, type=click.Choice(view_names()))
@click.option(
    "--verify", is_flag=True, help="Only compare each view with a rebuild of it; write nothing."
)
@json_option
@click.pass_obj
def reindex_command(obj: Context, views: tuple[str, ...], verify: bool, as_json: bool) -> int:
    """Rebuild the derived VIEWS (default: all) from the stored messages; the node must be
    stopped. Views that share tables are rebuilt together."""
    from tanglenode.storage.reindex import compare, reindex

    names = views or view_names()
    with obj.lock_data_dir("reindex"), obj.open_store() as store:
        if verify:
            differences = compare(store.ctx, store.views, names)
            if as_json:
                emit_json({"ok": not differences, "differences": [str(d) for d in differences]})
            else:
                for difference in differences:
                    click.echo(f"problem: {difference}")
                if not differences:
                    click.echo("every view agrees with its messages")
            return ExitCode.CHECK_FAILED if differences else ExitCode.OK

        def progress(phase: str, done: int) -> None:
            if not as_json:
                click.echo(f"reindex: {done} {phase}", err=True)

        rebuilt = reindex(store.ctx, store.views, names, progress)
    if as_json:
        emit_json({"rebuilt": rebuilt})
    else:
        click.echo(f"rebuilt: {', '.join(rebuilt)}")
    return ExitCode.OK


@click.command()
@json_option
@click.pass_obj
def compact_command(obj: Context, as_json: bool) -> int:
    """Give the store's free pages back to the disk (LMDB's compacting copy, checked, then
    renamed over the old file); the node must be stopped."""
    from tanglenode.node.cli.support import NotFound
    from tanglenode.storage.errors import StoreNotFound
    from tanglenode.storage.tools.compact import compact

    with obj.lock_data_dir("compact"):
        try:
            done = compact(obj.settings.store_path, obj.settings.storage.map_size)
        except StoreNotFound:
            raise NotFound(f"no store at {obj.settings.store_path}") from None
    if as_json:
        emit_json({"before": done.before, "after": done.after, "freed": done.freed})
    else:
        click.echo(
            f"compacted: {done.before / 2**20:.1f} MiB -> {done.after / 2**20:.1f} MiB "
            f"({done.freed / 2**20:.1f} MiB freed)"
        )
    return ExitCode.OK
