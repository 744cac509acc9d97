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

from tanglenode.node.cli.support import BadInput, Context, ExitCode, emit_json, json_option
from tanglenode.storage.registry import view_names


@click.command()
@click.argument("views", nargs=-1, type=click.Choice(view_names()))
@click.option(
    "--verify", is_flag=True, help="Only compare each view with a rebuild of it; write nothing."
)
@click.option(
    "--list",
    "listing",
    is_flag=True,
    help="Only list the views: kept, off or not built yet, and what each costs; write nothing.",
)
@json_option
@click.pass_obj
def reindex_command(
    obj: Context, views: tuple[str, ...], verify: bool, listing: bool, as_json: bool
) -> int:
    """Rebuild the derived VIEWS (default: every view the node keeps) from the stored
    messages; the node must be stopped. Views that share tables are rebuilt together. An
    optional view turned on under [views] in tangled.toml is built this way."""
    from tanglenode.storage.reindex import compare, reindex

    if listing:
        return _list_views(obj, as_json)
    with obj.lock_data_dir("reindex"), obj.open_store(choose_views=True) as store:
        wanted = store.wanted_views()  # those kept, and those turned on but not built yet
        names = views or tuple(view.name for view in wanted)
        off = [name for name in names if name not in {view.name for view in wanted}]
        if off:
            raise BadInput(store.ctx.views.why_off(store.ctx.views.optional(off[0])))
        if verify:
            differences = compare(store.ctx, wanted, names)
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

        rebuilt = reindex(store.ctx, wanted, names, progress)
    if as_json:
        emit_json({"rebuilt": rebuilt})
    else:
        click.echo(f"rebuilt: {', '.join(rebuilt)}")
    return ExitCode.OK


def _list_views(obj: Context, as_json: bool) -> int:
    from tanglenode.storage.registry import VIEWS

    with obj.open_store() as store:  # read: the views as they are, whatever the config says
        state = store.ctx.views
    wanted = set(obj.settings.views.wanted())
    optional = {view.name: view for view in state.known}
    parts = [view for view in state.known if view.name not in {kind.name for kind in VIEWS}]
    rows = []
    for name, cost in [(kind.name, kind.cost) for kind in VIEWS] + [
        (v.name, v.cost) for v in parts
    ]:
        if name not in optional or state.keeps(name):
            status = "kept" if name not in optional or name in wanted else "kept, to drop"
        else:
            status = "not built" if name in wanted else "off"
        rows.append((name, status, name in optional, cost))
    if as_json:
        emit_json(
            [
                {
                    "view": name,
                    "status": status,
                    "optional": optional_view,
                    "bytes_per_message": cost.bytes_per_message,
                    "ingest_share": cost.ingest_share,
                    "serves": cost.serves,
                }
                for name, status, optional_view, cost in rows
            ]
        )
    else:
        for name, status, optional_view, cost in rows:
            kind = "optional" if optional_view else "always"
            click.echo(f"{name:<12} {status:<10} {kind:<9} {cost.describe()}")
    return ExitCode.OK


@click.command()
@json_option
@click.pass_obj
def compact_command(obj: Context, as_json: bool) -> int:
    """Give the store's free pages back to the disk (a copy of its rows, checked, then renamed
    over the old file); the node must be stopped."""
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
