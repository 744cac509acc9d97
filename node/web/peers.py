"""`/peers`: running the peer from the browser, and `/peers/state`, what its script polls.

Theory of operation
-------------------
The page shows, first, each peer (below), then the invites' forms
(node/web/invites.py: make a code with its QR code, use one), a form to
connect to a peer, and this node's own address and feed id, to share (as
text to copy, and as a QR code of the line `tangled connect` takes:
`HOST:PORT @FEED`, drawn by segno as inline SVG, nothing downloaded). Each
peer shows its name, address, whether it is
connected (and which way), whether we follow it (our own contact messages'
stance: following, not followed, blocked; node/web/people.py), messages and
bytes received and sent, how far
we are behind it (the messages it holds that we lack, of the feeds we
carry), the feeds it shows that we do not follow (how many, the first by
name, and the `tangled follow` that carries one) or block, when it was last
seen (since when it is connected, or how long ago its last connection
ended, and why), and the buttons that apply to it: disconnect (when
connected), follow or unfollow (by its follow state), block or unblock.
The connect form can also save the peer in the node's config file, to be
dialed from every start on. Every button and
the form write through `POST /api/OP` (node/web/actions.py): the IPC's
`connect`, `disconnect`, `follow`, ... with their checks and typed errors.

The script (view.js) polls `/peers/state` every `POLL_SECONDS` and redraws
the table from it, computing each peer's rates (messages per second in and
out, and bytes) from two polls: the node keeps counts, never rates, so a
page that is not open costs nothing.

Layout: the table is a table on a wide screen; below 700 px (a phone's
390) each row is a card, its cells stacked and labelled from `data-label`
(CSS only: the same rows, the same script), and the long lines (feed ids,
the connect line, the invite code) wrap anywhere, so nothing scrolls
sideways.
"""

from __future__ import annotations

from typing import Any

import segno

from tanglenode.node.ipc.peers import peers as peers_op
from tanglenode.node.present.names import Names
from tanglenode.node.present.render import render_body
from tanglenode.node.present.text import safe
from tanglenode.node.web.http import (
    Request,
    Response,
    WebContext,
    html_response,
    json_response,
    not_found,
)
from tanglenode.node.web.invites import panel_html as invite_panel
from tanglenode.node.web.page import e, shell
from tanglenode.node.web.people import BLOCKED, FOLLOWING, follow_state, our_stances
from tanglenode.protocol.identity import feed_text
from tanglenode.protocol.ipc import PeersRequest

STYLE = """
#peers .follow{font-size:12px;border-radius:9px;padding:0 .45rem;white-space:nowrap;
background:#eef0f6;color:#556}
#peers .follow[data-follow=following]{background:#dff3e2;color:#216a2c}
#peers .follow[data-follow=blocked]{background:#f8dede;color:#8a2020}
#peers .name{font-weight:600}
#peers td.actions button{margin:.1rem 0}
#qr svg{max-width:100%;height:auto}
#peers:not(:has(tbody tr)){display:none}#peers:has(tbody tr)+.no-peers{display:none}
@media (max-width:700px){
#peers thead{display:none}
#peers,#peers tbody,#peers tr,#peers td{display:block;width:auto}
#peers tr{border:1px solid #e3e6ef;border-radius:10px;padding:.5rem .7rem;margin:.6rem 0;
background:#fff}
#peers td{border:0;padding:.1rem 0;overflow-wrap:anywhere}
#peers td[data-label]::before{content:attr(data-label) ": ";color:#889;font-size:13px}
#peers td[data-label]:empty{display:none}
}
"""
POLL_SECONDS = 2
MAX_SHOWN = 500  # peers on the page (the IPC's page size)
HEADERS = [
    "peer",
    "address",
    "state",
    "received",
    "sent",
    "in /s",
    "out /s",
    "we lack",
    "their feeds not followed",
    "last seen",
    "",
]


async def _peers(web: WebContext) -> list[dict[str, Any]] | None:
    area = web.area
    if area is None or area.node is None:
        return None
    found = await peers_op(area, PeersRequest(0, MAX_SHOWN))
    return found["peers"]


def peer_fields(peer: dict[str, Any], names: Names, follow: str) -> dict[str, Any]:
    """What a row shows of one peer (`peers`' entry; `follow` our stance, node/web/people.py):
    the script's JSON, the page's text."""
    key = peer["key"]
    if peer["connected"]:
        state = f"connected ({peer['direction'] or '?'})"
    elif peer["dialed"]:
        state = "dialing"
    else:
        state = "not connected"
    error = peer.get("last_error")
    connected = peer.get("connected_seconds")
    seen = peer.get("last_seen_age")
    if connected is not None:
        note = f"now (connected {connected} s ago)"
    elif seen is not None:
        note = f"{seen:.0f} s ago"
    else:
        note = "never"
    if error is not None:
        note += f"; {safe(error, 120)} ({peer.get('last_error_age') or 0:.0f} s ago)"
    return {
        "key": feed_text(key),
        "name": safe(names.label(key)),
        "address": safe(peer.get("address") or ""),
        "state": state,
        "connected": bool(peer["connected"]),
        "dialed": bool(peer["dialed"]),
        "received": peer["received"],
        "sent": peer["sent"],
        "bytes_in": peer.get("bytes_in", 0),
        "bytes_out": peer.get("bytes_out", 0),
        "lack": peer["behind_messages"],
        "outside": outside_note(peer, names),
        "note": note,
        "follow": follow,
        "actions": actions_of(bool(peer["connected"]), follow),
    }


def actions_of(connected: bool, follow: str) -> list[str]:
    """The buttons a peer's row offers: what would change something."""
    actions = ["disconnect"] if connected else []
    actions.append("unfollow" if follow == FOLLOWING else "follow")
    actions.append("unblock" if follow == BLOCKED else "block")
    return actions


def outside_note(peer: dict[str, Any], names: Names) -> str:
    """What a connected peer shows that our scope leaves out: how many feeds not followed
    (the first by name, then the command that carries one: the peer's own first), and how
    many blocked; "" for none. Never counted in "we lack": a choice, not a lag."""
    if not peer["connected"]:
        return ""
    said = []
    shown = list(peer.get("not_followed") or {})
    count = int(peer.get("not_followed_feeds", len(shown)))
    if count:
        first = safe(names.label(shown[0]))
        more = f" and {count - 1} more" if count > 1 else ""
        said.append(f"{count}: {first}{more} (tangled follow {feed_text(shown[0])})")
    blocked = int(peer.get("blocked_feeds", len(peer.get("blocked") or {})))
    if blocked:
        said.append(f"{blocked} blocked")
    return "; ".join(said)


def row_html(fields: dict[str, Any]) -> str:
    """One `<tr>` (the script builds the same from `peer_fields`)."""
    actions = "".join(
        f"<button type='button' data-peer-action='{op}'>{op}</button> " for op in fields["actions"]
    )
    cells = [
        fields["address"],
        fields["state"],
        fields["received"],
        fields["sent"],
        "",
        "",
        fields["lack"],
        fields["outside"],
        fields["note"],
    ]
    labelled = "".join(
        f"<td data-label='{e(label)}'>{e(str(text))}</td>"
        for label, text in zip(HEADERS[1:-1], cells, strict=True)
    )
    follow = e(fields["follow"])
    return (
        f"<tr data-key='{e(fields['key'])}' data-follow='{follow}'>"
        f"<td class='peer' title='{e(fields['key'])}'><span class='name'>{e(fields['name'])}"
        f"</span> <span class='follow' data-follow='{follow}'>{follow}</span></td>"
        f"{labelled}<td class='actions'>{actions}</td></tr>"
    )


async def page(web: WebContext, request: Request) -> Response:
    """`/peers`."""
    found = await _peers(web)
    if found is None:
        return not_found("this view has no running node to show peers of")
    status = await web.status(False)
    names = await web.names()
    stances = await our_stances(web)
    own = feed_text(status["feed"])
    listen = str(status.get("listen") or "")
    invite = f"{listen} {own}"
    code = segno.make(invite, error="m").svg_inline(scale=3, dark="#1d2430", border=2)
    rows = "".join(
        row_html(peer_fields(peer, names, follow_state(stances, peer["key"]))) for peer in found
    )
    head = "".join(f"<th>{e(header)}</th>" for header in HEADERS)
    state = web.link("/peers/state")
    empty = "<p class='muted no-peers'>No peers yet: invite someone, or connect below.</p>"
    body = (
        f"<h1>Peers: <span id='peer-count'>{len(found)}</span></h1>"
        f"<table id='peers' data-peers-state='{e(state)}' data-poll='{POLL_SECONDS}'>"
        f"<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>{empty}"
        "<p><output id='peer-result' class='result' aria-live='polite'></output></p>"
        f"{invite_panel()}<h2>Connect to a peer</h2>"
        "<form class='connect' data-api='connect'>"
        "<input name='address' required maxlength='300' placeholder='HOST:PORT' "
        "autocomplete='off'> <input name='key' required maxlength='60' size='48' "
        "placeholder='@FEED_ID' autocomplete='off'> <label><input type='checkbox' "
        "name='save'> save in the config (dialed at every start)</label> "
        "<button type='submit'>Connect</button> "
        "<output class='result' aria-live='polite'></output></form>"
        "<h2>This node</h2>"
        f"<p>feed <code id='own-feed'>{e(own)}</code><br>listening on "
        f"<code id='own-address'>{e(listen)}</code></p>"
        f"<p>To connect from another node: <code id='invite'>tangled connect {e(invite)}</code> "
        "<button type='button' data-copy='invite'>copy</button></p>"
        f"<div id='qr' title='{e(invite)}'>{code}</div>"
    )
    return html_response(shell(web, "peers", body, script=True, style=STYLE))


async def state(web: WebContext, request: Request) -> Response:
    """`/peers/state`: every peer's row, as JSON, for the page's script."""
    if request.args != ("state",):
        return not_found()
    found = await _peers(web)
    if found is None:
        return not_found("this view has no running node to show peers of")
    names = await web.names()
    stances = await our_stances(web)
    shown = [peer_fields(peer, names, follow_state(stances, peer["key"])) for peer in found]
    return json_response({"peers": [render_body(fields) for fields in shown]})
