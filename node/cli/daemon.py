"""`tangled run`, `status`, `peers`, `connect`, `disconnect`: the node process and its peers.

Feeds are shown to people through one callable (`_labeller`), ids in `--json`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from typing import Any

import click

from tanglenode.config.secret import read_secret
from tanglenode.config.settings import load_settings
from tanglenode.node.cli.backend import Backend, ask
from tanglenode.node.cli.lookup import feed_arg
from tanglenode.node.cli.support import (
    Context,
    NotFound,
    emit_json,
    json_option,
    log,
    render_body,
)
from tanglenode.node.ipc.oneshot import NodeNotRunning
from tanglenode.node.present.digests import digest_rows, digests_json
from tanglenode.node.present.text import safe
from tanglenode.protocol.address import parse_address
from tanglenode.protocol.identity import feed_text


@click.command()
@click.option("--listen", metavar="HOST:PORT", help="Accept peers here (overrides the config).")
@click.option(
    "--web",
    metavar="HOST:PORT",
    help="Serve the web view and /metrics here, e.g. 127.0.0.1:8080 (overrides web.listen).",
)
@click.pass_obj
def run(obj: Context, listen: str | None, web: str | None) -> None:
    """Run the node: peers, gossip and the IPC socket, until SIGTERM or SIGINT.

    With --web, also a web view and Prometheus metrics; keep it on 127.0.0.1 (every
    request needs the token `tangled status` prints in the URL)."""
    settings = obj.settings
    if listen or web:
        settings = load_settings(
            obj.config_file,
            overrides={
                "data_dir": str(obj.data_dir_flag) if obj.data_dir_flag else None,
                "listen": listen,
                "web": {"listen": web} if web else None,
            },
        )
    obj.require_data_dir()
    keypair = read_secret(settings.secret_path)
    if not settings.store_path.exists():
        raise NotFound(f"no store at {settings.store_path}; run `tangled init` first")
    import trio

    from tanglenode.node.daemon import run_node  # the daemon's modules load for `run` only

    trio.run(partial(run_node, config_file=obj.config_file), settings, keypair)


def _waiting(seconds: float, ask: Callable[[], Any]) -> Any:
    """`ask()`, again every 0.1 s while the node is not running, for up to `seconds`."""
    import time

    deadline = time.monotonic() + seconds
    while True:
        try:
            return ask()
        except NodeNotRunning:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.1)


def _labeller(obj: Context) -> Callable[[bytes], str]:
    """How a feed is shown to people: its name (petname, else ~self-chosen), else short id.

    The names' module loads, and the store opens, only when a feed is first shown
    (`status` with no peers shows none)."""
    loaded: list[Callable[[bytes], str]] = []

    def label(feed: bytes) -> str:
        if not loaded:
            from tanglenode.node.cli.names import lazy_label

            loaded.append(lazy_label(obj, whole_ids=True))
        return loaded[0](feed)

    return label


@click.command()
@click.option(
    "--wait",
    type=click.FloatRange(0, 3600),
    default=0,
    metavar="SECONDS",
    help="Wait up to SECONDS for a node that is starting to answer (`run &`, then this).",
)
@json_option
@click.pass_obj
def status(obj: Context, wait: float, as_json: bool) -> None:
    """The running node's feed, counts, finality, peers and each timeline's digest.

    Peers show caught up or behind on the feeds we carry, the feeds they have that we do
    not follow (with the command that carries one), or why not connected; compare digests
    across nodes."""
    raw = _waiting(wait, lambda: ask(obj, "status", digests=True))
    digests = raw.pop("digests", [])
    suspected = raw.get("suspected_forks", [])
    report = render_body(raw)
    if as_json:
        report["suspected_forks"] = [_suspect_json(each) for each in suspected]
        for stall, raw_stall in zip(report["stalls"], raw["stalls"], strict=True):
            if raw_stall.get("waits_for_tag") is not None:  # a tag, not an id: no `%`
                stall["waits_for_tag"] = _tag_text(raw_stall["waits_for_tag"])
        emit_json(report | {"digests": digests_json(digests)})
        return
    label = _labeller(obj)
    click.echo(f"feed {report['feed']}  listening on {safe(str(report['listen']))}")
    if report.get("web"):
        click.echo(f"web: {_web_url(obj, str(report['web']))}")
    forks_total = report.get("forks_total", len(report["forks"]))
    stalls_total = report.get("stalls_total", len(report["stalls"]))
    suspected_total = report.get("suspected_forks_total", len(suspected))
    click.echo(
        f"{report['feeds']} feeds, {report['messages']} messages, {forks_total} forks, "
        f"{suspected_total} suspected forks, {stalls_total} stalled"
    )
    if report.get("store_full"):
        click.echo(f"store full: {safe(str(report['store_full']))}")
    if report.get("documents_backlog"):
        click.echo(f"{report['documents_backlog']} document messages being woven")
    if suspected:
        click.echo("suspected forks (one seq named with two tags; peers are asked for the other):")
        for each in suspected:
            click.echo("  " + _suspect_line(each, label))
        if suspected_total > len(suspected):
            click.echo(f"  ... and {suspected_total - len(suspected)} more (tangled forks)")
    spacetime = next((row for row in digests if row.get("spacetime")), None)
    size = f" of {spacetime['count']}" if spacetime else ""
    click.echo(f"final: the first {report['final']}{size} spacetime positions can no longer change")
    connected = report.get("peers_connected", 0)
    click.echo(f"peers: {connected} connected of {report.get('peers_total', len(raw['peers']))}")
    for peer in raw["peers"]:
        for line in _peer_lines(peer, label):
            click.echo("  " + line)
    more = report.get("peers_total", len(report["peers"])) - len(report["peers"])
    if more > 0:
        click.echo(f"  ... and {more} more peers (tangled peers)")
    if digests:
        click.echo("digests (equal on nodes that hold the same timeline):")
        rows = digest_rows(digests)
        width = max(len(where) for where, _count, _digest in rows)
        for where, count, digest in rows:
            click.echo(f"  {where:<{width}}  {count:>8}  {digest}")
        if raw.get("digests_truncated"):
            click.echo("  ... more tangles (tangled timeline NAME/ROOT --digest)")


def _tag_text(tag: bytes) -> str:
    from tanglenode.node.present.render import tag_text  # the message codec loads for tags only

    return tag_text(bytes(tag))


def _suspect_json(each: dict[str, Any]) -> dict[str, Any]:
    """A status' suspected fork with ids and tags as text."""
    return {
        "feed": feed_text(bytes(each["feed"])),
        "seq": each["seq"],
        "named_tag": _tag_text(each["named_tag"]),
        "held_tag": _tag_text(each["held_tag"]),
        "named_by": feed_text(bytes(each["named_by"])),
    }


def _suspect_line(each: dict[str, Any], label: Callable[[bytes], str]) -> str:
    """One suspected fork, for people: which seq, who names which tag, which tag is held."""
    shown = _suspect_json(each)
    feed, by = safe(label(bytes(each["feed"]))), safe(label(bytes(each["named_by"])))
    held = shown["held_tag"] or "nothing"
    return f"{feed} seq {each['seq']}: {by} names {shown['named_tag']}, held {held}"


def _web_url(obj: Context, base: str) -> str:
    """The web view's URL with its token (read from the data directory), for a browser."""
    from tanglenode.node.web.token import read_token

    path = obj.settings.web_token_path
    token = read_token(path)
    if token is None:
        return f"{safe(base)}  (token: cannot read {safe(str(path))})"
    return f"{safe(base)}?token={safe(token)}"


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def _peer_line(peer: dict[str, Any], label: Callable[[bytes], str]) -> str:
    """One peer, for people: where we reach it (or "inbound"), its state, why not connected."""
    where = peer["address"] or ("inbound" if peer["direction"] == "in" else "-")
    if peer["connected"]:
        if peer["direction"] == "in" and peer["address"]:
            where += " (inbound)"
        behind = peer.get("behind_feeds", len(peer["behind"]))
        messages = peer.get("behind_messages")
        if peer["caught_up"]:
            state = "connected, caught up"
        elif behind:
            count = f", {messages} messages" if messages else ""
            state = f"connected, behind on {behind} feeds{count}"
        else:
            state = "connected, exchanging clocks"
    else:
        state = "disconnected" + ("" if peer.get("dialed", True) else ", not dialing")
    line = f"{safe(label(bytes(peer['key'])))}  {safe(where)}  {state}"
    if peer["last_error"]:
        age = peer.get("last_error_age")
        when = f" {_age(age)} ago" if age is not None else ""
        line += f"  (last error{when}: {safe(peer['last_error'])})"  # a peer's words
    return line


NAMED_IN_A_LINE = 3  # feeds a not-followed or blocked line names; the rest are counted


def _outside_lines(peer: dict[str, Any], label: Callable[[bytes], str]) -> list[str]:
    """What a connected peer shows that our scope leaves out: the feeds not followed, with
    the command that carries one (the peer's own first), and the blocked ones."""
    if not peer["connected"]:
        return []
    lines = []
    shown = [bytes(feed) for feed in peer.get("not_followed") or {}]
    count = peer.get("not_followed_feeds", len(shown))
    if count:
        messages = peer.get("not_followed_messages")
        held = f", {messages} messages" if messages else ""
        lines.append(
            f"not followed: {count} {_feeds(count)}{held} ({_named(shown, count, label)}),"
            f" nothing of them carried; carry one: tangled follow {feed_text(shown[0])}"
        )
    blocked = [bytes(feed) for feed in peer.get("blocked") or {}]
    count = peer.get("blocked_feeds", len(blocked))
    if count:
        lines.append(f"blocked: {count} {_feeds(count)} ({_named(blocked, count, label)})")
    return lines


def _feeds(count: int) -> str:
    return "feed" if count == 1 else "feeds"


def _named(feeds: list[bytes], count: int, label: Callable[[bytes], str]) -> str:
    """The first feeds by name, and how many more."""
    names = ", ".join(safe(label(feed)) for feed in feeds[:NAMED_IN_A_LINE])
    more = count - min(len(feeds), NAMED_IN_A_LINE)
    return names + (f" and {more} more" if more > 0 else "")


def _peer_lines(peer: dict[str, Any], label: Callable[[bytes], str]) -> list[str]:
    """A peer's line, then (indented) what it shows that our scope leaves out."""
    return [_peer_line(peer, label), *("  " + line for line in _outside_lines(peer, label))]


@click.command()
@json_option
@click.pass_obj
def peers(obj: Context, as_json: bool) -> None:
    """The running node's peers: where we reach each, its state, its last error and when."""
    every: list[dict[str, Any]] = []
    with Backend(obj) as node:
        start: int | None = 0
        while start is not None:
            page = node.call("peers", start=start)
            every.extend(page["peers"])
            start = page.get("next")
    if as_json:
        emit_json(render_body(every))
        return
    label = _labeller(obj)
    for peer in every:
        for line in _peer_lines(peer, label):
            click.echo(line)


@click.command("connect")
@click.argument("address", metavar="HOST:PORT")
@click.argument("key", metavar="FEED_ID")
@click.option(
    "--save",
    is_flag=True,
    help="Also add the peer to the config file, so the node dials it whenever it starts.",
)
@json_option
@click.pass_obj
def connect_command(obj: Context, address: str, key: str, save: bool, as_json: bool) -> None:
    """Make the running node dial the peer FEED_ID at HOST:PORT (and keep redialing it).

    With --save, also from every start on (the node need not be running then). Says whether
    the peer's feed will be carried: only followed feeds are, with the default hops."""
    parse_address(address)
    peer = feed_arg(obj, key)
    saved, where = None, ""
    if save:
        from tanglenode.config.peers import save_peer  # only here: the rest need not load it

        try:
            added = save_peer(obj.config_file, address, feed_text(peer))
        except FileNotFoundError:
            raise NotFound(f"no config at {obj.config_file}; run `tangled init` first") from None
        saved = str(obj.config_file)
        where = f"saved in {saved}" if added else f"already saved in {saved}"
        log.info("peer saved" if added else "peer already saved", config=saved)
        if os.environ.get("TANGLED_PEERS"):
            log.warning("TANGLED_PEERS is set: it overrides the config's peers")
    try:
        done = ask(obj, "connect", address=address, key=peer)
        dialing = True
    except NodeNotRunning:
        if not save:
            raise
        done, dialing = {}, False
    standing = done.get("standing")
    if as_json:
        said = {"dialing": dialing, "saved": saved, "standing": standing}
        emit_json({"address": address, "key": feed_text(peer), **said})
    elif dialing:
        click.echo(f"dialing {address}" + (f" ({where})" if saved else ""))
        click.echo(_standing_line(peer, standing, _labeller(obj)))
    else:
        click.echo(f"{where}; the node is not running: it dials {address} when started")


def _standing_line(peer: bytes, standing: str | None, label: Callable[[bytes], str]) -> str:
    """What the scope will bring of a peer we connect to (node/ipc/scope_notes.py), and the
    command that changes it when it brings nothing."""
    whom, key = safe(label(peer)), feed_text(peer)
    if standing == "not-followed":
        return f"{whom} is not followed: nothing of theirs will be carried; tangled follow {key}"
    if standing == "blocked":
        return f"{whom} is blocked: nothing of theirs will be carried; tangled unblock {key}"
    why = {
        "followed": "followed",
        "hop": "followed by a feed we follow",
        "group": "a member of one of our groups",
        "every-feed": 'hops = "all": every feed is carried',
    }.get(str(standing), str(standing))
    return f"{whom} is carried ({why}): their feed will be replicated"


@click.command("disconnect")
@click.argument("key", metavar="FEED_ID")
@json_option
@click.pass_obj
def disconnect_command(obj: Context, key: str, as_json: bool) -> None:
    """Make the running node stop dialing the peer FEED_ID and close its connections.

    A configured peer is dialed again after a restart; a peer that dials us may come back."""
    peer = feed_arg(obj, key)
    done = ask(obj, "disconnect", key=peer)
    if as_json:
        emit_json({"key": feed_text(peer), **done})
        return
    what = ["stopped dialing"] if done["dialed"] else []
    if done["connections"]:
        what.append(f"closed {done['connections']} connection(s)")
    click.echo(f"{_labeller(obj)(peer)}: {', '.join(what)}")
