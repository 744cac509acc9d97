"""`/`: the node at a glance, server-rendered from the status `tangled status` reads.

Our feed, peers and their progress, forks, stalls, the finality watermark and
each timeline's digest; every value from others escaped (node/web/page.py).
"""

from __future__ import annotations

from typing import Any

from tanglenode.node.cli.digest import digest_rows
from tanglenode.node.cli.names import Names
from tanglenode.node.web.http import Request, Response, WebContext, html_response
from tanglenode.node.web.page import e, shell
from tanglenode.protocol.identity import feed_text


async def status_page(web: WebContext, request: Request) -> Response:
    names = await web.names() if web.service is not None else Names()
    return html_response(shell(web, "status", render_status(await web.status(True), names)))


def render_status(status: dict[str, Any], names: Names) -> str:
    """The status page's body: every value from others escaped."""
    feed = feed_text(status["feed"])
    mine = names.name(status["feed"])
    parts = [
        f"<h1>{e(mine) if mine else 'tanglenode'}</h1><p>feed <code>{e(feed)}</code>",
        f" listening on <code>{e(str(status.get('listen', '')))}</code></p>",
        f"<p>{status['feeds']} feeds, {status['messages']} messages, ",
        f"{status['forks_total']} forks, {status['stalls_total']} stalled</p>",
        f"<p>final: the first {status['final']} spacetime positions can no longer change</p>",
        f"<h2>Peers: {status['peers_connected']} connected of {status['peers_total']}</h2><ul>",
    ]
    for peer in status["peers"]:
        parts.append(
            f"<li>{e(names.label(peer['key']))} <code>{e(feed_text(peer['key']))}</code> "
            f"{e(_peer_state(peer))}{_behind_list(peer, names)}</li>"
        )
    parts.append("</ul><h2>Forks</h2><ul>")
    for author, seq in status["forks"]:
        parts.append(
            f"<li>{e(names.label(author))} <code>{e(feed_text(author))}</code> at {int(seq)}</li>"
        )
    parts.append("</ul><h2>Stalls</h2><ul>")
    for stall in status["stalls"]:
        needs_feed, needs_seq = stall["waits_for"]
        parts.append(
            f"<li>{e(names.label(stall['feed']))} {int(stall['seq'])} waits for "
            f"{e(names.label(needs_feed))} {int(needs_seq)}</li>"
        )
    parts.append("</ul><h2>Digests</h2><table>")
    for where, count, digest in digest_rows(status.get("digests", [])):
        parts.append(
            f"<tr><td>{e(where)}</td><td>{count}</td><td><code>{e(digest)}</code></td></tr>"
        )
    parts.append("</table>")
    return "".join(parts)


def _behind_list(peer: dict[str, Any], names: Names) -> str:
    """The feeds a connected peer is behind on, and by how many messages (the first ones)."""
    behind = peer.get("behind") or {}
    if not peer["connected"] or not behind:
        return ""
    items = "".join(
        f"<li>{e(names.label(feed))}: {int(count)} messages</li>" for feed, count in behind.items()
    )
    more = peer["behind_feeds"] - len(behind)
    tail = f"<li class='muted'>and {more} more feeds</li>" if more > 0 else ""
    return f"<details><summary>per feed</summary><ul>{items}{tail}</ul></details>"


def _peer_state(peer: dict[str, Any]) -> str:
    where = peer["address"] or ("inbound" if peer["direction"] == "in" else "-")
    if not peer["connected"]:
        why = f" ({peer['last_error']})" if peer["last_error"] else ""
        return f"{where}: not connected{why}"
    if peer["caught_up"]:
        return f"{where}: caught up"
    return f"{where}: behind by {peer['behind_messages']} messages on {peer['behind_feeds']} feeds"
