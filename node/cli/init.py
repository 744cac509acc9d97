"""`tangled init`: a new node's config, keypair and store."""

from __future__ import annotations

import click

from tanglenode.config.secret import write_secret
from tanglenode.config.template import render_config
from tanglenode.node.cli.support import BadInput, Context, emit_json, json_option, log
from tanglenode.protocol.identity import Keypair


@click.command()
@click.option("--exist-ok", is_flag=True, help="Do nothing if the config already exists.")
@json_option
@click.pass_obj
def init(obj: Context, exist_ok: bool, as_json: bool) -> None:
    """Write a config and a new keypair, create the store, print the feed id."""
    if obj.config_file.exists():
        if exist_ok:
            return
        raise BadInput(f"{obj.config_file} already exists; refusing to overwrite it")
    settings = obj.settings
    data_dir = settings.data_dir.expanduser().resolve()
    keypair = Keypair.generate()
    write_secret(settings.secret_path, keypair)
    obj.config_file.parent.mkdir(parents=True, exist_ok=True)
    obj.config_file.write_text(render_config(data_dir, settings.network_key))
    with obj.lock_data_dir("init"):
        obj.open_store(create=True).close()
    log.info("initialized", feed=keypair.feed_id, config=str(obj.config_file))
    if as_json:
        emit_json(
            {"feed": keypair.feed_id, "config": str(obj.config_file), "data_dir": str(data_dir)}
        )
    else:
        click.echo(keypair.feed_id)
