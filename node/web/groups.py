"""`/groups` and `/groups/ROOT`: our private groups, their members, epochs and timeline.

`/groups` lists the groups we are or were in, found by the keys we hold,
with the IPC `group-list` op's own handler (node/ipc/discovery.py, which
`tangled group list` asks), a page of the `group` tangles at a time
(`?after=ROOT` continues). `/groups/ROOT` (ROOT: the group's root message
id without its `%`) reads the group as `tangled group members`, `epochs`
and `timeline` do (`storage.groups.state.read_group`, `describe`, `timeline`,
read through `StoreService.read`): its members by
name, its epochs, and its messages in timeline order, opened where we hold
the key, posts summarised as the CLI summarises them (node/present/summary.py).
A group we hold no key of says so and lists its messages as sealed.

Groups are made and run from these pages too (social.js sends each as
`POST /api/OP` with a `once` key, node/web/actions.py): `/groups` has a form
creating one (IPC `group-create`, whose page then opens); a member's
`/groups/ROOT` has a form adding a member (`group-add`: a feed id, offered
from the people we follow by name) and, on each other member, a button
excluding them (`group-exclude`: a new epoch whose key they do not get),
asked to confirm first. The group's own rules (docs/GROUPS.md) decide who may;
a refusal is shown as the op's typed error. Names,
group names and content are others' text: they reach the page through `e`,
their control and bidi characters as `?` (node/present/text.py `safe`).
"""

from __future__ import annotations

from typing import Any

from tanglenode.node.ipc.area import Area
from tanglenode.node.ipc.discovery import group_list
from tanglenode.node.present.names import Names
from tanglenode.node.present.summary import Summaries
from tanglenode.node.present.text import safe, safe_lines
from tanglenode.node.web.http import (
    Request,
    Response,
    WebContext,
    html_response,
    not_found,
    parse_root,
    root_text,
    segment,
    text_response,
)
from tanglenode.node.web.page import compose, e, listing, shell, when
from tanglenode.node.web.people import followed, our_stances
from tanglenode.protocol.identity import feed_text, message_text
from tanglenode.protocol.ipc import MAX_GROUP_NAME
from tanglenode.protocol.ipc_discovery import GroupListRequest
from tanglenode.storage.groups import state as groups
from tanglenode.storage.groups.state import GROUP, GroupError, UnknownGroup, describe, read_group
from tanglenode.storage.views.timelines import timeline_name

PAGE = 50  # `group` tangles looked at per `/groups` page
MAX_ROWS = 1000  # timeline rows shown: the latest
NAME_SHOWN = 200  # characters of a group's name
PEOPLE_OFFERED = 200  # people we follow offered to add, by name
TEXT_SHOWN = 20_000  # characters of one post
STYLE = """
#group-posts{list-style:none;margin:0;padding:0}
#group-posts .post{background:#fff;border:1px solid #e3e6ef;border-radius:10px;
padding:.6rem 1rem;margin:.5rem 0}
#group-posts header{font-size:13px;color:#667;display:flex;gap:.8rem}
#group-posts header span{font-weight:600;color:#1d2430;font-size:14px}
#group-posts .text{white-space:pre-wrap;overflow-wrap:anywhere;margin:.3rem 0 0}
details.operators{margin-top:2rem}details.operators summary{color:#667;cursor:pointer}
.group-create input[name=name]{width:20rem}
.group-add input[name=member]{width:34rem}
#members li{margin:.2rem 0}#members button{margin-left:.6rem;font-size:12px}
"""

CREATE_FORM = (
    "<form class='group-create'><h2>New group</h2>"
    f"<input name='name' required maxlength='{MAX_GROUP_NAME}' placeholder='its name' "
    "autocomplete='off'> <button type='submit'>Create</button> "
    "<output class='result' aria-live='polite'></output>"
    "<p class='muted'>A private group: only its members can read what is written in it. "
    "You are its first member; add others on its page.</p></form>"
)


def group_name(name: str | None) -> str:
    """A group's name as HTML: escaped, bounded; `(cannot open)` when we cannot read it."""
    if name is None:
        return "<span class='muted'>(cannot open)</span>"
    return e(safe(name, NAME_SHOWN)) or "(unnamed)"


def person(names: Names, feed: bytes) -> str:
    """A feed as a name with its whole id in the title."""
    return f"<span data-feed='{e(feed_text(feed))}' title='{e(feed_text(feed))}'>" + (
        f"{e(safe(names.label(feed)))}</span>"
    )


# -- /groups -----------------------------------------------------------------------------------


async def index(web: WebContext, request: Request) -> Response:
    after_text = request.query.get("after")
    after = None
    if after_text is not None:
        root = parse_root(after_text)
        if root is None:
            return text_response("after: a group id without its %\n", 400)
        after = (root, GROUP)
    if web.keypair is None:
        return html_response(shell(web, "groups", "<h1>Groups</h1><p>This node has no key.</p>"))
    found = await group_list(Area(web.service, web.keypair), GroupListRequest(after, PAGE))
    names = await web.names()
    rows = [
        f"<tr data-id='{e(message_text(info['group']))}'>"
        f"<td><a href='{e(web.link('/groups/' + segment(root_text(info['group']))))}'>"
        f"{group_name(info['name'])}</a></td><td>{info['members']}</td>"
        f"<td>{info['epochs']}</td><td>{'member' if info['member'] else 'former'}</td>"
        f"<td>{e(when(info['last']))}</td><td>{person(names, info['author'])}</td></tr>"
        for info in found["groups"]
    ]
    parts = ["<h1>Groups</h1>", CREATE_FORM]
    following = found["next"]
    more = web.link("/groups", after=root_text(following["root"])) if following else None
    headers = ["name", "members", "epochs", "us", "last activity", "created by"]
    empty = "No groups here: none of those held has a key of ours."
    parts.append(listing("groups", headers, rows, empty, more))
    page_html = shell(web, "groups", "".join(parts), scripts=("social.js",), style=STYLE)
    return html_response(page_html)


# -- /groups/ROOT ------------------------------------------------------------------------------


async def page(web: WebContext, request: Request) -> Response:
    root = parse_root(request.args[0])
    if root is None:
        return not_found("no such group: not a message id")
    if web.keypair is None:
        return not_found("this node has no key to read groups with")
    service = web.service
    try:
        view = await service.read(read_group, web.keypair, root)
    except UnknownGroup:
        return not_found("no such group")
    except GroupError as error:
        return text_response(f"cannot read this group: {error}\n", 404)
    shown = describe(view)
    final = await service.read(groups.final, view)
    rows = await service.read(groups.timeline, view, GROUP, "rank")
    names = await web.names()
    title = safe(shown["name"], NAME_SHOWN) if shown["name"] is not None else "group"
    live = web.link(f"/t/{GROUP}/{segment(root_text(root))}")
    parts = [
        f"<h1>{group_name(shown['name'])}</h1>",
        f"<p class='muted'><code>{e(message_text(root))}</code> · "
        f"<a href='{e(live)}'>its tangle, live</a></p>",
    ]
    if not shown["readable"]:
        parts.append(
            "<p id='sealed'>This node holds no key of this group: it cannot open its "
            f"messages ({len(rows)} held), nor tell its members.</p>"
        )
    member = web.keypair.public in shown["members"]
    ours = web.keypair.public if member else None
    timeline = timeline_name(root, GROUP)
    version = await service.read(lambda store: store.timelines.timeline_version(timeline))
    events = web.link(f"/t/{GROUP}/{segment(root_text(root))}/events")
    parts.append(posts_html(rows, names, events, version))
    if member:
        post_box = compose("group-post", "Write to the group", {"group": message_text(root)})
        parts.append(post_box)
    parts.append(members_html(shown, names, root, ours))
    if member:
        parts.append(add_form(root, names, followed(await our_stances(web)), shown["members"]))
    parts.append(
        "<details class='operators'><summary>Epochs and the whole timeline (for operators)"
        "</summary>"
    )
    parts.append(epochs_html(shown, names))
    parts.append(f"<h2>Timeline</h2><p class='muted'>{len(rows)} messages; the first {final}")
    parts.append(" positions can no longer change.</p>")
    parts.append(timeline_html(shown, rows, names))
    parts.append("</details>")
    page_html = shell(web, title, "".join(parts), script=True, scripts=("social.js",), style=STYLE)
    return html_response(page_html)


def posts_html(rows: list[dict[str, Any]], names: Names, events: str, version: int) -> str:
    """The group's posts we can open, as a conversation (the newest `MAX_ROWS`), kept live
    through the group tangle's stream (social.js redraws the page when it changes)."""
    summaries = Summaries(names.label)
    posts = [row for row in rows if row["type"] == "group/post" and row["valid"]][-MAX_ROWS:]
    items = []
    for row in posts:
        content = row["content"]
        text = content.get("text") if isinstance(content, dict) else None
        if row.get("erased"):
            shown = "(erased)"
        elif isinstance(text, str):
            shown = safe_lines(text[:TEXT_SHOWN] + ("…" if len(text) > TEXT_SHOWN else ""))
        else:
            shown = safe(summaries.content_line(content))
        items.append(
            f"<li class='post' data-id='{e(message_text(row['id']))}'><header>"
            f"{person(names, row['author'])}<time>{e(when(row['timestamp']))}</time></header>"
            f"<p class='text'>{e(shown)}</p></li>"
        )
    empty = "" if items else "<p class='muted'>Nothing written here yet.</p>"
    return (
        f"<h2>Conversation</h2>{empty}<ol id='group-posts' data-thread-events='{e(events)}' "
        f"data-version='{version}'>{''.join(items)}</ol>"
    )


def members_html(
    shown: dict[str, Any], names: Names, root: bytes, ours: bytes | None = None
) -> str:
    """The members by name; when `ours` (we are a member), a button excluding each other."""
    items = []
    for member in shown["members"]:
        button = ""
        if ours is not None and member != ours:
            label = safe(names.label(member))
            button = (
                f"<button type='button' data-exclude='{e(feed_text(member))}' "
                f"data-name='{e(label)}'>exclude</button>"
            )
        items.append(f"<li>{person(names, member)}{button}</li>")
    return (
        f"<h2>Members: {len(shown['members'])}</h2>"
        f"<ul id='members' data-group='{e(message_text(root))}'>{''.join(items)}</ul>"
        "<p><output id='members-result' class='result' aria-live='polite'></output></p>"
    )


def add_form(root: bytes, names: Names, follows: list[bytes], members: list[bytes]) -> str:
    """The form adding a member: a feed id, the people we follow offered by name."""
    offered = [feed for feed in follows if feed not in members][:PEOPLE_OFFERED]
    options = "".join(
        f"<option value='{e(feed_text(feed))}'>{e(safe(names.label(feed)))}</option>"
        for feed in offered
    )
    return (
        f"<form class='group-add' data-group='{e(message_text(root))}'><h2>Add a member</h2>"
        "<input name='member' required maxlength='60' list='people' placeholder='@FEED_ID "
        "(or pick someone you follow)' autocomplete='off'> "
        f"<datalist id='people'>{options}</datalist>"
        "<button type='submit'>Add</button> "
        "<output class='result' aria-live='polite'></output>"
        "<p class='muted'>They get the group's key: they can read all of it.</p></form>"
    )


def epochs_html(shown: dict[str, Any], names: Names) -> str:
    rows = []
    for epoch in shown["epochs"]:
        members = ", ".join(person(names, member) for member in epoch["members"])
        excluded = ", ".join(person(names, member) for member in epoch["excluded"])
        rows.append(
            f"<tr data-id='{e(message_text(epoch['id']))}'>"
            f"<td><code>{e(message_text(epoch['id'])[:12])}…</code></td>"
            f"<td>{person(names, epoch['author'])}</td>"
            f"<td>{'current' if epoch['current'] else 'past'}</td>"
            f"<td>{members}</td><td>{excluded}</td></tr>"
        )
    return (
        f"<h2>Epochs: {len(rows)}</h2><table id='epochs'><thead><tr><th>epoch</th>"
        "<th>opened by</th><th>state</th><th>members</th><th>excluded</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def timeline_html(shown: dict[str, Any], rows: list[dict[str, Any]], names: Names) -> str:
    """The group's messages in (rank, id) order, the latest `MAX_ROWS`."""
    summaries = Summaries(names.label)
    invalid, pending = shown["invalid"], set(shown["pending"])
    cut = max(0, len(rows) - MAX_ROWS)
    parts = []
    if cut:
        parts.append(f"<p class='muted'>The first {cut} messages are not shown.</p>")
    parts.append(
        "<table id='group-timeline'><thead><tr><th>#</th><th>author</th><th>time</th>"
        "<th>type</th><th>what</th></tr></thead><tbody>"
    )
    for position, row in enumerate(rows[cut:], cut + 1):
        state, what = row_state(row, invalid, pending), what_html(row, summaries, names)
        if state == "invalid":
            what += f" <span class='muted'>[invalid: {e(str(invalid.get(row['id'], '')))}]</span>"
        css = f" class='{state}'" if state in ("invalid", "pending") else ""
        parts.append(
            f"<tr data-id='{e(message_text(row['id']))}' data-state='{state}'{css}>"
            f"<td class='pos'>{position}</td><td class='author'>{person(names, row['author'])}</td>"
            f"<td class='time'>{e(when(row['timestamp']))}</td>"
            f"<td class='type'>{e(row['type'] or 'sealed')}</td><td class='text'>{what}</td></tr>"
        )
    parts.append("</tbody></table>")
    return "".join(parts)


def row_state(row: dict[str, Any], invalid: dict[bytes, str], pending: set[bytes]) -> str:
    if row["valid"]:
        return "valid"
    if row["type"] is None:
        return "sealed"
    return "pending" if row["id"] in pending else "invalid"


def what_html(row: dict[str, Any], summaries: Summaries, names: Names) -> str:
    """What a message says: a post's content in one line, the members an init, add or
    exclude names; nothing for one we cannot open."""
    kind = row["type"]
    if kind is None:
        return "<span class='muted'>(cannot open)</span>"
    if kind == "group/post":
        return e(safe(summaries.content_line(row["content"])))
    members = ", ".join(person(names, member) for member in row["members"] or ())
    verb = {"group/init": "members", "group/add-member": "added"}.get(kind, "excluded")
    return f"{verb} {members}" if members else ""
