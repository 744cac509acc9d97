"""The HTML every page shares: the shell, the navigation, feeds and times as text.

Everything that came from others (names, content, errors, addresses) goes
through `e` (`html.escape`, quotes too) before it reaches a page; the pages
build no HTML from others' text any other way. The one script
(`/view.js`) is loaded with `defer` by the pages that stay live; it reads
what it needs from `data-` attributes, never from inline script.
"""

from __future__ import annotations

import html
from datetime import UTC, datetime

from tanglenode.node.web.http import WebContext

e = html.escape

STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:72rem;padding:0 1rem 3rem;
color:#1d2430;background:#fbfbfd}
nav{display:flex;flex-wrap:wrap;gap:.3rem 1.2rem;padding:.7rem 0;border-bottom:1px solid #dde;
margin-bottom:1rem}
input,textarea,select{max-width:100%;box-sizing:border-box}
button{font:inherit;font-size:14px;padding:.2rem .75rem;border:1px solid #c5cbe0;
border-radius:6px;background:#fff;color:#1d2430;cursor:pointer}
button:hover{border-color:#3050a0}button:disabled{opacity:.6;cursor:default}
button[type=submit]{background:#3050a0;border-color:#3050a0;color:#fff;font-weight:600}
textarea,input:not([type=checkbox]){border:1px solid #c5cbe0;border-radius:6px;padding:.3rem .45rem}
code,.id{overflow-wrap:anywhere}
nav a{color:#3050a0;text-decoration:none;font-weight:600}
code,.id{font:13px ui-monospace,monospace;color:#555}
table{border-collapse:collapse;width:100%}
td,th{text-align:left;padding:.25rem .5rem;border-bottom:1px solid #eef;vertical-align:top}
th{font-size:13px;color:#667}
.muted{color:#889}
#timeline tbody tr{counter-increment:pos}
#timeline td.pos::before{content:counter(pos)}
#timeline td.pos,#timeline td.time{white-space:nowrap;color:#889;font-size:13px;width:1%}
#timeline td.author{white-space:nowrap;width:1%;padding-right:1.5rem}
.pending td{color:#a06000;font-style:italic}
.pending td.text::after{content:" (pending: waits for a message it names)";font-size:12px}
.invalid td{color:#b03030;text-decoration:line-through}
.fresh{animation:fresh 2s ease-out}
.moved{animation:moved 2s ease-out}
@keyframes fresh{from{background:#d9f7d9}to{background:transparent}}
@keyframes moved{from{background:#fff1c2}to{background:transparent}}
.live{font-size:13px;color:#667}
#editor{width:100%;box-sizing:border-box;font:13px/1.45 ui-monospace,monospace}
.compose{margin:1rem 0}.compose textarea{width:100%;box-sizing:border-box;font:inherit}
.compose .result[data-state=error]{color:#b03030}
.live[data-state=live]::before{content:"● ";color:#2a9d3a}
.live[data-state=reconnecting]::before{content:"● ";color:#c08000}
"""


def shell(
    web: WebContext,
    title: str,
    body: str,
    *,
    script: bool = False,
    scripts: tuple[str, ...] = (),
    style: str = "",
) -> str:
    """A whole page: `title` (plain text) and `body` (HTML, already escaped); `script` loads
    `/view.js`, `scripts` more of the package's scripts after it (app.py `SCRIPTS`), `style`
    the page's own CSS."""
    sources = (["/view.js"] if script else []) + [f"/{name}" for name in scripts]
    script_tag = "".join(f"<script defer src='{e(web.link(src))}'></script>" for src in sources)
    links = [("/", "home"), ("/docs", "documents"), ("/groups", "groups")]
    links += [("/peers", "peers"), ("/status", "status"), ("/tangles", "tangles")]
    nav = "".join(f"<a href='{e(web.link(path))}'>{text}</a>" for path, text in links)
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<title>{e(title)} · tanglenode</title><link rel='icon' href='data:,'>"
        f"<style>{STYLE}{style}</style>{script_tag}</head>"
        f"<body><nav>{nav}</nav>{body}</body></html>\n"
    )


def compose(op: str, what: str, data: dict[str, str], *, name_field: bool = False) -> str:
    """A box to write a post: the script sends it as `POST /api/OP` with `data` (the
    form's `data-` attributes) and shows the node's answer, typed errors included
    (node/web/actions.py). `name_field` asks for a new tangle's name too."""
    attributes = "".join(f" data-{key}='{e(value)}'" for key, value in data.items())
    name = (
        "<input name='tangle' required maxlength='64' placeholder='tangle name' "
        "autocomplete='off'> "
        if name_field
        else ""
    )
    return (
        f"<form class='compose' data-api='{e(op)}'{attributes}>"
        f"<textarea name='text' required maxlength='8000' rows='2' placeholder='{e(what)}'>"
        f"</textarea><div>{name}<button type='submit'>Post</button> "
        "<output class='result' aria-live='polite'></output></div></form>"
    )


def listing(
    table_id: str, headers: list[str], rows: list[str], empty: str, more: str | None
) -> str:
    """An index page's table (`rows` are `<tr>`s, already escaped), or `empty` (HTML) when
    there are none, and a link to the next page when `more` (an href) is given."""
    if not rows:
        return f"<p class='muted'>{empty}</p>"
    head = "".join(f"<th>{e(header)}</th>" for header in headers)
    body = "".join(rows)
    table = f"<table id='{table_id}'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    return table + (f"<p><a href='{e(more)}'>more</a></p>" if more else "")


def when(milliseconds: int | None) -> str:
    """A claimed time as `YYYY-MM-DD HH:MM:SS` UTC; the number if it is no date."""
    if milliseconds is None:
        return ""
    try:
        moment = datetime.fromtimestamp(milliseconds / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return str(milliseconds)[:20]
    return moment.strftime("%Y-%m-%d %H:%M:%S")
