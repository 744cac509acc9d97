"""`tangled init`: a new node's config, keypair and store.

`--listen HOST:PORT` sets where the node accepts peers; `--peer
HOST:PORT@FEED` (repeatable) adds a peer to dial, written as the address
followed by the feed id as `tangled` prints it (its `@` separates them:
`10.0.0.2:8008@AbC…`). Both are checked before anything is written, and
the config is loaded back (validated) before the keypair and store are made.
"""

from __future__ import annotations

import click

from tanglenode.config.secret import write_secret
from tanglenode.config.settings import ConfigError, load_settings
from tanglenode.config.template import render_config
from tanglenode.node.cli.support import BadInput, Context, emit_json, json_option, log
from tanglenode.protocol.address import BadAddress, parse_address
from tanglenode.protocol.errors import BadIdentifier
from tanglenode.protocol.identity import Keypair, feed_text, parse_feed

MAX_INIT_PEERS = 100


def parse_peer(text: str) -> tuple[str, str]:
    """`HOST:PORT@FEED` as (address, feed id), else `BadInput` saying how to write it."""
    address, sep, feed = text.partition("@")
    how = "--peer is HOST:PORT@FEED, the feed id right after the port (10.0.0.2:8008@AbC...)"
    if not sep:
        raise BadInput(f"{text[:80]!r}: {how}")
    try:
        parse_address(address)
        key = parse_feed("@" + feed.removeprefix("@"))  # `@@FEED`: the id pasted with its @
    except (BadAddress, BadIdentifier) as error:
        raise BadInput(f"{error}; {how}") from None
    return address, feed_text(key)


def _distinct(dialed: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The peers once each; one feed at two addresses is refused, as `connect --save` does."""
    kept: dict[str, str] = {}
    for address, key in dialed:
        if kept.setdefault(key, address) != address:
            raise BadInput(f"--peer {key} is given at {kept[key]} and at {address}: pick one")
    return [(address, key) for key, address in kept.items()]


@click.command()
@click.option("--exist-ok", is_flag=True, help="Do nothing if the config already exists.")
@click.option(
    "--listen",
    metavar="HOST:PORT",
    help="Accept peers here (port 0: any free one); default 127.0.0.1:8008.",
)
@click.option(
    "--peer",
    "peers",
    metavar="HOST:PORT@FEED",
    multiple=True,
    help="A peer to dial, its address then its feed id (e.g. 10.0.0.2:8008@AbC...); repeatable.",
)
@json_option
@click.pass_obj
def init(
    obj: Context, exist_ok: bool, listen: str | None, peers: tuple[str, ...], as_json: bool
) -> None:
    """Write a config and a new keypair, create the store, print the feed id."""
    if obj.config_file.exists():
        if exist_ok:
            return
        raise BadInput(f"{obj.config_file} already exists; refusing to overwrite it")
    if listen is not None:
        try:
            parse_address(listen, lowest_port=0)
        except BadAddress as error:
            raise BadInput(f"--listen: {error}") from None
    if len(peers) > MAX_INIT_PEERS:
        raise BadInput(f"at most {MAX_INIT_PEERS} --peer; add more to the config later")
    dialed = _distinct([parse_peer(peer) for peer in peers])
    settings = obj.settings
    data_dir = settings.data_dir.expanduser().resolve()
    keypair = Keypair.generate()
    if any(key == keypair.feed_id for _address, key in dialed):  # cannot happen: a new key
        raise BadInput("a node does not dial itself")
    text = render_config(data_dir, settings.network_key, listen=listen, peers=dialed)
    write_secret(settings.secret_path, keypair)
    obj.config_file.parent.mkdir(parents=True, exist_ok=True)
    obj.config_file.write_text(text)
    try:
        written = load_settings(obj.config_file, environ={})
    except ConfigError:
        obj.config_file.unlink()  # never leave a config the node would refuse
        raise
    with obj.lock_data_dir("init"):
        obj.open_store(create=True).close()
    log.info("initialized", feed=keypair.feed_id, config=str(obj.config_file))
    if as_json:
        emit_json(
            {
                "feed": keypair.feed_id,
                "config": str(obj.config_file),
                "data_dir": str(data_dir),
                "listen": written.listen,
                "peers": [{"address": address, "key": key} for address, key in dialed],
            }
        )
    else:
        click.echo(keypair.feed_id)
