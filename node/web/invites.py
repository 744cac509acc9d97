"""The peers page's invites: "Invite someone" (a code and its QR code) and "Use an invite".

Theory of operation
-------------------
Both forms write through `POST /api/OP` (node/web/actions.py) like every
other button: `invite-create` and `invite-use` are the IPC's own ops, with
their checks and typed refusals (docs/PEERS.md, "Invites"). A made code is
shown once, as text to copy and as a QR code drawn here by segno
(`with_qr`: a `data:` URI of an SVG, added to the op's reply, so no URL
ever carries the code and nothing is fetched to draw it). The node keeps
only the code's hash: a code the page did not show is gone for good, and
`tangled invite list` names it by id only.
"""

from __future__ import annotations

from typing import Any

import segno

from tanglenode.protocol.ipc_invites import MAX_USES

EXPIRES = (("1 hour", 3600), ("1 day", 86_400), ("7 days", 7 * 86_400), ("30 days", 30 * 86_400))


def with_qr(ok: dict[str, Any]) -> dict[str, Any]:
    """`invite-create`'s reply, with `qr`: the code as a QR code (an SVG `data:` URI)."""
    code = ok.get("code")
    if not isinstance(code, str):
        return ok
    qr = segno.make(code, error="m").svg_data_uri(scale=3, dark="#1d2430", border=2)
    return {**ok, "qr": qr}


def panel_html() -> str:
    """The two forms (view.js `invitesPanel` wires them)."""
    choices = "".join(
        f"<option value='{seconds}'{' selected' if seconds == 7 * 86_400 else ''}>{label}</option>"
        for label, seconds in EXPIRES
    )
    return (
        "<section id='invites'><h2>Invite someone</h2>"
        "<form class='invite-create'>"
        f"<label>uses <input name='uses' type='number' min='1' max='{MAX_USES}' value='1' "
        "required></label> "
        f"<label>good for <select name='expires'>{choices}</select></label> "
        "<label><input type='checkbox' name='follow_back' checked> follow them back</label> "
        "<button type='submit'>Make a code</button>"
        "<output class='result' aria-live='polite'></output></form>"
        "<div class='invite-made' hidden><p>Give this code to the person you invite; it is "
        "shown once (the node keeps only its hash):</p>"
        "<textarea class='invite-code' readonly rows='3' cols='60'></textarea> "
        "<button type='button' class='invite-copy'>copy</button>"
        "<p><img class='invite-qr' alt='the invite code as a QR code'></p></div>"
        "<h2>Use an invite</h2>"
        "<form class='invite-use'>"
        "<textarea name='code' required maxlength='1024' rows='3' cols='60' "
        "placeholder='inv1.…' autocomplete='off'></textarea> "
        "<button type='submit'>Join</button>"
        "<output class='result' aria-live='polite'></output></form></section>"
    )
