"""`tangled run`, `status`, `peers`, `connect`: the node process and its peers."""

from __future__ import annotations

from typing import Any

import click

from tanglenode.config.secret import read_secret
from tanglenode.config.settings import load_settings
from tanglenode.node.cli.support import (
    Context,
    NotFound,
    all_peers,
    ask_node,
    emit_json,
    json_option,
    render_body,
)
from tanglenode.protocol.address import parse_address
from tanglenode.protocol.identity import (
    parse_feed,
)


@click.command()
@click.option("--listen", metavar="HOST:PORT", help="Accept peers here (overrides the config).")
@click.pass_obj
def run(obj: Context, listen: str | None) -> None:
    """Run the node: peers, gossip and the IPC socket, until SIGTERM or SIGINT."""
    settings = obj.settings
    if listen:
        settings = load_settings(
            obj.config_file,
            overrides={
                "data_dir": str(obj.data_dir_flag) if obj.data_dir_flag else None,
                "listen": listen,
            },
        )
    keypair = read_secret(settings.secret_path)
    if not settings.store_path.exists():
        raise NotFound(f"no store at {settings.store_path}; run `tangled init` first")
    import trio

    from tanglenode.node.daemon import run_node  # the daemon's modules load for `run` only

    trio.run(run_node, settings, keypair)


@click.command()
@json_option
@click.pass_obj
def status(obj: Context, as_json: bool) -> None:
    """The running node's feed, peers (caught up or behind), forks."""
    report = render_body(ask_node(obj, "status", {}))
    if as_json:
        emit_json(report)
        return
    click.echo(f"feed {report['feed']}  listening on {report['listen']}")
    forks_total = report.get("forks_total", len(report["forks"]))
    click.echo(f"{report['feeds']} feeds, {report['messages']} messages, {forks_total} forks")
    for peer in report["peers"]:
        _echo_peer(peer)
    more = report.get("peers_total", len(report["peers"])) - len(report["peers"])
    if more > 0:
        click.echo(f"... and {more} more peers (tangled peers)")


def _echo_peer(peer: dict[str, Any]) -> None:
    state = "connected" if peer["connected"] else "disconnected"
    behind = peer.get("behind_feeds", len(peer["behind"]))
    progress = "caught up" if peer["caught_up"] else f"behind on {behind} feeds"
    line = f"{peer['key']}  {peer['address'] or '-'}  {state}  {progress}"
    if peer["last_error"]:
        line += f"  (last error: {peer['last_error']})"
    click.echo(line)


@click.command()
@json_option
@click.pass_obj
def peers(obj: Context, as_json: bool) -> None:
    """The running node's peers."""
    import trio

    every = trio.run(all_peers, obj)
    if as_json:
        emit_json(every)
        return
    for peer in every:
        _echo_peer(peer)


@click.command("connect")
@click.argument("address", metavar="HOST:PORT")
@click.argument("key", metavar="FEED_ID")
@click.pass_obj
def connect_command(obj: Context, address: str, key: str) -> None:
    """Make the running node dial the peer FEED_ID at HOST:PORT (and redial it) until it stops."""
    parse_address(address)
    ask_node(obj, "connect", {"address": address, "key": parse_feed(key)})
    click.echo(f"dialing {address}")
