"""`/thread/NAME/ROOT`: one conversation, as people read it.

Theory of operation
-------------------
The conversation's tangle timeline (the order every node agrees on,
docs/TIMELINES.md), its last `MAX_POSTS` messages read at one version as
`/t/NAME/ROOT` reads them: the first post, then each reply inline in
timeline order, each with its author's name (their whole id in the
title), the time its author claims, and its whole text (a post's lines
kept, up to `TEXT_SHOWN` characters; other kinds in one summary line;
a message waiting for one it names marked as waiting; on each of our own,
a "delete" button erasing its content on every node, IPC `delete`, asked
to confirm first, as on `/t/`). Below them, the box
to reply (page.py's `compose`, sent by view.js: IPC `publish` at the
tangle's tips, with a `once` key).

The page stays live through the tangle's own stream (`/t/NAME/ROOT/events`,
node/web/tangles.py): social.js opens it at the page's version and, when
the timeline changes (a reply from any node, a late message placed), draws
the page again, once the reply box is empty, so nothing typed is lost. The
operators' table of the same tangle is one link away.
"""

from __future__ import annotations

from typing import Any

from tanglenode.node.present.names import Names
from tanglenode.node.present.summary import Summaries
from tanglenode.node.present.text import safe
from tanglenode.node.web.home import STYLE as HOME_STYLE
from tanglenode.node.web.home import authors_html, post_text
from tanglenode.node.web.http import (
    Request,
    Response,
    WebContext,
    html_response,
    not_found,
    parse_root,
)
from tanglenode.node.web.page import compose, e, shell, when
from tanglenode.node.web.tangles import ERASE_BUTTON, PENDING, tangle_path
from tanglenode.protocol.identity import feed_text, message_text
from tanglenode.protocol.limits import MAX_TANGLE_NAME_BYTES
from tanglenode.storage.views.timelines import timeline_name

MAX_POSTS = 1000  # the newest shown
TEXT_SHOWN = 20_000  # characters of one post

STYLE = (
    HOME_STYLE
    + """
#posts{list-style:none;margin:0;padding:0}
.post{background:#fff;border:1px solid #e3e6ef;border-radius:10px;padding:.7rem 1rem;
margin:.6rem 0}
.post.reply{margin-left:1.5rem}
.post header{font-size:13px;color:#667;display:flex;flex-wrap:wrap;gap:.2rem .8rem}
.post header .who{font-weight:600;color:#1d2430;font-size:14px}
.post header .erase{margin-left:auto;font-size:12px;padding:0 .5rem}
.post .text{white-space:pre-wrap;overflow-wrap:anywhere;margin:.3rem 0 0}
.post.first .text{font-size:17px}
.post.pending{opacity:.7}.post.pending header::after{content:"waiting for a message it names";
font-style:italic;color:#a06000}
@media (max-width:600px){.post.reply{margin-left:.6rem}}
"""
)


def post_html(names: Names, summaries: Summaries, message: Any, state: str, first: bool) -> str:
    """One message of the thread: who, when, what."""
    role = "first" if first else "reply"
    css = f"post {role}" + (" pending" if state == PENDING else "")
    who = (
        f"<span class='who' title='{e(feed_text(message.author))}'>"
        f"{e(safe(names.label(message.author)))}</span>"
    )
    erase = ERASE_BUTTON if names.is_ours(message.author) and message.has_content else ""
    return (
        f"<li class='{css}' data-id='{e(message_text(message.id))}' data-state='{e(state)}'>"
        f"<header>{who}<time>{e(when(message.timestamp))}</time>{erase}</header>"
        f"<p class='text'>{e(post_text(message, summaries, TEXT_SHOWN))}</p></li>"
    )


async def page(web: WebContext, request: Request) -> Response:
    """`/thread/NAME/ROOT`: the conversation's messages in timeline order, then live."""
    name, given = request.args[0], request.args[1]
    root = parse_root(given)
    if root is None or len(name.encode("utf-8", "surrogatepass")) > MAX_TANGLE_NAME_BYTES:
        return not_found("no such thread: the root is not a message id, or the name too long")
    timeline = timeline_name(root, name)

    def read(store):
        version, start, entries = store.timelines.timeline_tail(timeline, MAX_POSTS)
        held = [(store.feeds.get(msg_id), state) for _rank, msg_id, state in entries]
        return version, start, held, store.feeds.get(root)

    version, start, held, first = await web.service.read(read)
    names = await web.names()
    summaries = Summaries(names.label)
    posts = [
        post_html(names, summaries, message, state, message.id == root)
        for message, state in held
        if message is not None
    ]
    authors: list[bytes] = [first.author] if first is not None else []
    for message, _state in held:
        if message is not None and message.author not in authors:
            authors.append(message.author)
    title = safe((post_text(first, summaries, 60).splitlines() or [name])[0], 60)
    table = web.link(tangle_path(name, root))
    events = web.link(tangle_path(name, root) + "/events")
    earlier = f"<p class='muted'>The first {start} messages are not shown.</p>" if start else ""
    missing = "" if first is not None else "<p class='muted'>The first post is not held here.</p>"
    count = start + len(held)
    body = (
        f"<p class='muted'><a href='{e(web.link('/'))}'>← home</a> · "
        f"<span class='authors'>{authors_html(names, authors)}</span> · "
        f"<span id='message-count'>{count}</span> messages · "
        f"<a href='{e(table)}'>as a table (operators)</a></p>"
        f"{missing}{earlier}"
        f"<ol id='posts' data-thread-events='{e(events)}' data-version='{version}'>"
        f"{''.join(posts)}</ol>"
    )
    body += compose("publish", "Write a reply", {"tangle": name, "root": message_text(root)})
    return html_response(
        shell(web, title or "thread", body, script=True, scripts=("social.js",), style=STYLE)
    )
