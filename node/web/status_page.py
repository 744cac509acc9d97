"""`/`: the node at a glance, server-rendered from the status `tangled status` reads.

Our feed, peers and their progress (behind on the feeds we carry; what else
they show, not followed or blocked, apart: our scope's choice, not a lag),
forks and suspected forks (a seq named with a tag other than the held
message's, until a proof comes), stalls, the finality watermark and each
timeline's digest; every value from others escaped (node/web/page.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tanglenode.node.present.digests import digest_rows
from tanglenode.node.present.names import Names
from tanglenode.node.present.render import tag_text
from tanglenode.node.present.text import safe
from tanglenode.node.web.http import Request, Response, WebContext, html_response
from tanglenode.node.web.page import e, shell
from tanglenode.node.web.tangles import tangle_path
from tanglenode.protocol.identity import feed_text


async def status_page(web: WebContext, request: Request) -> Response:
    names = await web.names() if web.service is not None else Names()
    body = render_status(await web.status(True), names, web.link)
    return html_response(shell(web, "status", body))


def render_status(
    status: dict[str, Any], names: Names, link: Callable[[str], str] = lambda path: path
) -> str:
    """The status page's body: every value from others escaped; `link` makes an href."""

    def label(feed: bytes) -> str:
        return e(safe(names.label(feed)))

    feed = feed_text(status["feed"])
    mine = names.name(status["feed"])
    parts = [
        f"<h1>{e(safe(mine)) if mine else 'tanglenode'}</h1><p>feed <code>{e(feed)}</code>",
        f" listening on <code>{e(str(status.get('listen', '')))}</code></p>",
        f"<p>{status['feeds']} feeds, {status['messages']} messages, ",
        f"{status['forks_total']} forks, {status['stalls_total']} stalled</p>",
        f"<p>final: the first {status['final']} spacetime positions can no longer change</p>",
        f"<h2>Peers: {status['peers_connected']} connected of {status['peers_total']}</h2><ul>",
    ]
    for peer in status["peers"]:
        parts.append(
            f"<li>{label(peer['key'])} <code>{e(feed_text(peer['key']))}</code> "
            f"{e(_peer_state(peer))}{_behind_list(peer, names)}{_outside(peer, names)}</li>"
        )
    parts.append(_none(status["peers"]) + "</ul><h2>Forks</h2><ul>")
    for author, seq in status["forks"]:
        parts.append(f"<li>{label(author)} <code>{e(feed_text(author))}</code> at {int(seq)}</li>")
    suspected, total = status["suspected_forks"], status["suspected_forks_total"]
    parts.append(_none(status["forks"]) + f"</ul><h2>Suspected forks: {int(total)}</h2><ul>")
    for each in suspected:
        parts.append(
            f"<li>{label(each['feed'])} <code>{e(feed_text(each['feed']))}</code> at "
            f"{int(each['seq'])}: {label(each['named_by'])} names <code>"
            f"{e(tag_text(each['named_tag']))}</code>, held <code>"
            f"{e(tag_text(each['held_tag']) or 'nothing')}</code></li>"
        )
    if total > len(suspected):
        parts.append(f"<li class='muted'>and {int(total) - len(suspected)} more</li>")
    parts.append(_none(suspected) + "</ul><h2>Stalls</h2><ul>")
    for stall in status["stalls"]:
        needs_feed, needs_seq = stall["waits_for"]
        why = (
            " (held with another tag: a suspected fork)"
            if stall.get("suspected")
            else " (as a witness: a feed not carried)"
            if stall.get("witness")
            else ""
        )
        parts.append(
            f"<li>{label(stall['feed'])} {int(stall['seq'])} waits for "
            f"{label(needs_feed)} {int(needs_seq)}{why}</li>"
        )
    parts.append(_none(status["stalls"]) + "</ul><h2>Digests</h2><table>")
    digests = status.get("digests", [])
    for entry, (where, count, digest) in zip(digests, digest_rows(digests), strict=True):
        shown = e(where)
        if not entry.get("spacetime"):  # a tangle's: its page
            href = link(tangle_path(entry["tangle"], bytes(entry["root"])))
            shown = f"<a href='{e(href)}'>{shown}</a>"
        parts.append(f"<tr><td>{shown}</td><td>{count}</td><td><code>{e(digest)}</code></td></tr>")
    parts.append("</table>")
    return "".join(parts)


def _none(items: list[Any]) -> str:
    return "" if items else "<li class='muted'>none</li>"


def _behind_list(peer: dict[str, Any], names: Names) -> str:
    """The feeds a connected peer is behind on, and by how many messages (the first ones)."""
    behind = peer.get("behind") or {}
    if not peer["connected"] or not behind:
        return ""
    items = "".join(
        f"<li>{e(safe(names.label(feed)))}: {int(count)} messages</li>"
        for feed, count in behind.items()
    )
    more = peer["behind_feeds"] - len(behind)
    tail = f"<li class='muted'>and {more} more feeds</li>" if more > 0 else ""
    return f"<details><summary>per feed</summary><ul>{items}{tail}</ul></details>"


def _outside(peer: dict[str, Any], names: Names) -> str:
    """The feeds a connected peer shows that our scope leaves out: not followed (with the
    command that carries one, the peer's own first) and blocked; never "behind"."""
    if not peer["connected"]:
        return ""
    parts = []
    for field, what in (("not_followed", "not followed"), ("blocked", "blocked")):
        shown = list(peer.get(field) or {})
        count = int(peer.get(f"{field}_feeds", len(shown)))
        if not count:
            continue
        feeds = ", ".join(e(safe(names.label(feed))) for feed in shown)
        more = count - len(shown)
        feeds += f" and {more} more" if more > 0 else ""
        parts.append(f"<p class='muted'>{what}: {count} feeds ({feeds})")
        if field == "not_followed":
            follow = f"tangled follow {feed_text(shown[0])}"
            parts.append(f"; nothing of them carried: <code>{e(follow)}</code> carries one")
        parts.append("</p>")
    return "".join(parts)


def _peer_state(peer: dict[str, Any]) -> str:
    where = peer["address"] or ("inbound" if peer["direction"] == "in" else "-")
    if not peer["connected"]:
        why = f" ({peer['last_error']})" if peer["last_error"] else ""
        return f"{where}: not connected{why}"
    if peer["caught_up"]:
        return f"{where}: caught up"
    return (
        f"{where}: behind by {peer['behind_messages']} messages on {peer['behind_feeds']}"
        " feeds we carry"
    )
