"""`/docs` and `/doc/ROOT`: the documents held, and one document live with blame and history.

`/docs` lists the documents (`store.documents.held`, shown a page at a time).
`/doc/ROOT` (ROOT: the doc/init's message id without its `%`) shows:

- `#text`: the text at the processed frontier, in runs coloured by the
  author who typed them (`data-author`; the colour is a hash of the author's
  key, node/web/doc_events.py `colour`), with a legend of names; view.js
  keeps it live from `/doc/ROOT/events` (node/web/doc_events.py);
- `a#history`, a link to `/doc/ROOT/history`, every edit with its author,
  time and id (node/web/doc_history.py);
- `aside#comments`, the comments on its ranges, kept current from
  `/doc/ROOT/comments` (node/web/doc_comments.py);
- `section#rendered`, the text with the ranges of other documents it
  includes, kept current from `/doc/ROOT/rendered`
  (node/web/doc_transclusion.py);
- `input#version`, a slider over the versions (0 is the doc/init, each edit
  woven in is one more), and `#revision`: the text at the weft of the
  version chosen, dyed against the version before it or against the
  current text (inserted text in `ins`, removed text in `del`, each titled
  with who did it), which view.js fetches from `/doc/ROOT/at?v=N` (JSON,
  `revision_body`) as the slider moves. The page renders the last version so.

A version a proof removed has no weft any more: `v` names the last version
at or before it. Text others wrote reaches the page only through `e`, and
the script only through `textContent`; its control, bidi and zero-width
characters show as `?` (`doc_events.readable`, one for one: positions hold).
"""

from __future__ import annotations

import json
from typing import Any

from tanglenode.node.ipc.area import Area
from tanglenode.node.ipc.discovery import group_list
from tanglenode.node.present.names import Names
from tanglenode.node.present.text import safe, safe_lines
from tanglenode.node.service.store_service import StoreService
from tanglenode.node.web import doc_events
from tanglenode.node.web.doc_comments import comments, margin_html
from tanglenode.node.web.doc_history import history
from tanglenode.node.web.doc_paths import bad_request, doc_path, number
from tanglenode.node.web.doc_text import (
    Run,
    author_body,
    blamed_snapshot,
    colour,
    label,
    readable,
)
from tanglenode.node.web.doc_transclusion import rendered, rendered_html
from tanglenode.node.web.http import (
    Request,
    Response,
    WebContext,
    html_response,
    json_response,
    not_found,
    parse_root,
    text_response,
)
from tanglenode.node.web.page import e, listing, shell, when
from tanglenode.protocol.doc_link import BadLink, parse_link
from tanglenode.protocol.identity import feed_text, message_text
from tanglenode.protocol.ipc_discovery import GroupListRequest
from tanglenode.protocol.limits import MAX_SEQ
from tanglenode.storage.documents.rows import Version
from tanglenode.storage.errors import UnknownDocument

PAGE = 200  # documents per `/docs` page
AUTHORS_SHOWN = 4  # names in a document's row, then "and N more"
GROUPS_OFFERED = 100  # groups the new-document form offers
WINDOW = 64  # versions read back from `v` to find the one shown and the one before it
AGAINST = ("previous", "current")  # what `#revision` is dyed against

STYLE = (
    "<style>#text,#revision{white-space:pre-wrap;font:14px/1.5 ui-monospace,monospace;"
    "background:#fff;border:1px solid #dde;padding:.7rem;min-height:2rem}"
    "#legend span,#revision-info span{padding:0 .35rem;border-radius:3px}"
    "#legend span{margin-right:.4rem}"
    "ins{background:#d8f5d8;color:#0a5c0a}del{background:#fadcdc;color:#8c1010}"
    "#version{width:100%}.splice{animation:fresh 2s ease-out}"
    "#text.editor{min-height:6rem;outline:none;caret-color:#1d2430}"
    ".new-doc{margin:1rem 0 1.5rem}.new-doc h2{font-size:1.05rem;margin:0 0 .4rem}"
    ".new-doc input{width:min(24rem,100%)}.new-doc .result[data-state=error]{color:#b03030}"
    "#text.editor[contenteditable=plaintext-only]:focus,#text.editor[contenteditable=true]:focus"
    "{border-color:#5a7bd6;box-shadow:0 0 0 2px #d6e0fa}"
    "#text .unsaved{background-image:linear-gradient(#0000 90%,#8896 90%)}"
    "#text mark.presence{background:none;position:relative;display:inline-block;width:0;"
    "height:1.2em;vertical-align:text-bottom;border-left:2px solid;margin-right:-2px}"
    "#text mark.presence::after{content:attr(data-presence);position:absolute;left:-2px;"
    "top:-1.15em;font:600 10px/1.2 system-ui,sans-serif;color:#fff;background:var(--who);"
    "padding:0 3px;border-radius:3px 3px 3px 0;white-space:nowrap;pointer-events:none}"
    "#text .linked{background:#ffe08a!important;outline:1px solid #c89000}"
    "#document{display:grid;grid-template-columns:minmax(0,1fr) 20rem;column-gap:1.2rem}"
    "#document>*{grid-column:1}#document>#comments{grid-column:2;grid-row:1/span 40;"
    "font-size:13px;align-self:start}"
    "#comments textarea,#comments input{width:100%;box-sizing:border-box}"
    "#comment-list{padding-left:1.2rem}.comment{margin-bottom:.8rem;cursor:pointer}"
    ".comment.deleted q{text-decoration:line-through}.comment.chosen{outline:2px solid #c89000}"
    "#rendered-text{white-space:pre-wrap;font:14px/1.5 ui-monospace,monospace}"
    ".included{background:#e4ecff;border-bottom:2px solid #5a7bd6}"
    ".not-followed{background:#eee;color:#555;font-style:italic}"
    "@media (max-width:60rem){#document{display:block}}</style>"
)


# -- /docs -------------------------------------------------------------------------------------


async def index(web: WebContext, request: Request) -> Response:
    try:
        start = number(request.query, "start", 0)
    except ValueError as error:
        return bad_request(error)
    assert start is not None
    documents = await web.service.read(lambda store: store.documents.held())
    names = await web.names()
    # newest edit first: the documents people work on now at the top
    facts = await web.service.read(lambda store: [_facts(store, d) for d in documents])
    order = sorted(range(len(documents)), key=lambda i: -facts[i][1])
    shown = [(documents[i], facts[i]) for i in order[start : start + PAGE]]
    rows = [
        f"<tr data-doc='{e(message_text(d.id))}'><td><a href='{e(web.link(doc_path(d.id)))}'>"
        f"{e(safe(d.title)) or '(untitled)'}</a></td>"
        f"<td class='authors'>{e(_authors(names, d.author, authors))}</td>"
        f"<td class='last-edit'>{e(when(last))}</td>"
        f"<td>{d.versions}</td><td>{d.length}</td>"
        f"<td>{d.set_aside or ''}</td><td>{'private' if d.group else 'public'}</td></tr>"
        for d, (authors, last) in shown
    ]
    parts = [STYLE, f"<h1>Documents</h1><p>{len(documents)} held.</p>", await new_form(web)]
    more = web.link("/docs", start=start + PAGE) if start + PAGE < len(documents) else None
    headers = ["title", "authors", "last edit", "versions", "characters", "set aside", "who"]
    empty = "None yet: start one above, or <code>tangled doc create TITLE</code>."
    parts.append(listing("documents", headers, rows, empty, more))
    parts.append(f"<script defer src='{e(web.link('/editor.js'))}'></script>")
    return html_response(shell(web, "documents", "".join(parts), script=True))


def _facts(store, info) -> tuple[list[bytes], int]:
    """A document's authors (its creator first, then who wove text into it) and when it
    was last edited (the newest version's claimed time; the creation's if none)."""
    authors = [info.author]
    last = info.created
    try:
        weft = store.documents.base_weft(info.id)
        authors += sorted(feed for feed in weft if feed != info.author)
        newest = store.documents.document_versions(info.id, info.versions, 1)
        if newest:
            last = max(last, newest[-1].timestamp)
    except UnknownDocument:
        pass
    return authors, last


def _authors(names: Names, creator: bytes, authors: list[bytes]) -> str:
    """Up to AUTHORS_SHOWN names, then how many more."""
    shown = [label(names, author) for author in authors[:AUTHORS_SHOWN]]
    more = len(authors) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


async def new_form(web: WebContext) -> str:
    """The form that starts a document (editor.js sends it as `POST /api/doc-create`, once,
    and opens the new document's page): a title, and whether it is public or private to
    one of the groups we are a member of (IPC `group-list`'s first page)."""
    options = ["<option value='' selected>public: every node that carries us</option>"]
    if web.keypair is not None:
        area = Area(web.service, web.keypair)
        found = await group_list(area, GroupListRequest(None, GROUPS_OFFERED))
        for info in found["groups"]:
            if info.get("member"):
                name = safe(info["name"] or "") or "(unnamed group)"
                options.append(
                    f"<option value='{e(message_text(info['group']))}'>"
                    f"private to the group {e(name)}</option>"
                )
    return (
        "<form id='new-doc' class='new-doc'><h2>New document</h2>"
        "<input name='title' required maxlength='200' placeholder='title' autocomplete='off'> "
        f"<select name='group' aria-label='who can read it'>{''.join(options)}</select> "
        "<button type='submit'>Create</button> "
        "<output class='result' aria-live='polite'></output></form>"
    )


# -- /doc/ROOT ---------------------------------------------------------------------------------


async def page(web: WebContext, request: Request) -> Response:
    doc = parse_root(request.args[0])
    if doc is None:
        return not_found("no such document: not a message id")
    service, names = web.service, await web.names()
    try:
        version, runs = await blamed_snapshot(service, doc)
        revision = await revision_body(service, doc, version, "previous", names)
    except UnknownDocument:
        return not_found("no such document")
    linked = await _linked(web, doc, request.query.get("link"))
    if isinstance(linked, Response):
        return linked
    highlight, linked_html = linked
    init = await service.read(lambda store: store.feeds.get(doc))
    title = init.content.get("title", "") if init and isinstance(init.content, dict) else ""
    if not title:  # a private document's init is sealed: its title is the one it opened to
        held = await service.read(lambda store: store.documents.held())
        title = next((d.title for d in held if d.id == doc), "")
    title = safe(title) if isinstance(title, str) else ""
    author = init.author if init is not None else None
    heading = (
        f"<h1>{e(title) or '(untitled)'}</h1><p class='muted'>started by "
        f"{e(label(names, author)) if author else 'unknown'} on "
        f"{e(when(init.timestamp if init else None))} · <code>{e(message_text(doc))}</code>"
        f" · <a id='history' href='{e(web.link(doc_path(doc, 'history')))}'>every edit</a></p>"
    )
    body = [
        STYLE,
        heading,
        f"<section id='document' data-doc-events='{e(web.link(doc_path(doc, 'events')))}'"
        f" data-at='{e(web.link(doc_path(doc, 'at')))}'>",
        "<p id='live' class='live' data-state='connecting'>connecting</p>",
        f"<p id='legend'>{legend(runs, names)}</p>",
        linked_html,
        editor_html(web, doc, version, highlight, runs, names),
        margin_html(web.link(doc_path(doc, "comments"))),
        rendered_html(web.link(doc_path(doc, "rendered"))),
        "<h2>History</h2>",
        f"<p><label for='version'>version</label> <input id='version' type='range' min='0'"
        f" max='{version}' step='1' value='{version}'></p>",
        "<p><label for='against'>dyed against</label> <select id='against'>"
        "<option value='previous' selected>the version before</option>"
        "<option value='current'>the current text</option></select></p>",
        f"<p id='revision-info'>{revision_info(revision) if revision else ''}</p>",
        f"<div id='revision' data-version='{revision['version'] if revision else ''}'>"
        f"{dye_html(revision) if revision else ''}</div>",
        "</section>",
    ]
    return html_response(shell(web, title or "document", "".join(body), script=True))


async def _linked(web: WebContext, doc: bytes, given: str | None) -> tuple[str, str] | Response:
    """For `?link=LINK` (docs/DOCUMENTS.md, "Links"): the `#text` attribute that tells the
    script which range to highlight, and a line saying what the link points at (or
    how it read, if all of it was deleted); a 400 or 404 response for a bad link."""
    if given is None:
        return "", ""
    try:
        link = parse_link(given)
    except BadLink as error:
        return text_response(f"link: {error}\n", 400)
    if link.doc != doc:
        return text_response("link: it points into another document\n", 400)
    try:
        found = await web.service.read(lambda store: store.documents.resolve_link(link))
    except UnknownDocument as error:
        return not_found(f"the link does not point into this document: {error}")
    if found.was is not None:
        shown = e(safe_lines(found.was[:2000]))
        return "", f"<p id='linked'>The linked text was deleted since; it read: <q>{shown}</q></p>"
    end = found.start + len(found.text)
    return (
        f" data-highlight='{found.start}:{end}'",
        f"<p id='linked'>The link points at characters {found.start} to {end}, highlighted.</p>",
    )


def editor_html(
    web: WebContext, doc: bytes, version: int, highlight: str, runs: list[Run], names: Names
) -> str:
    """`#text`, the text dyed by author and the editor in one (editor.js makes it editable
    in place; without the script it is the dyed text, read-only). Its exact value travels
    as JSON in `data-text` (the spans show unsafe characters as `?`), the version it is
    the text of in `data-version`, who we are (the colour of what we type before the node
    has woven it) in `data-self`, and others' carets come on the page's stream."""
    exact = json.dumps("".join(text for text, _author in runs), ensure_ascii=True)
    ours = author_body(web.keypair.public if web.keypair is not None else None, names)
    return (
        f"<div id='text' class='editor' role='textbox' aria-multiline='true'"
        f" aria-label='the document' spellcheck='false' data-version='{version}'{highlight}"
        f" data-doc='{e(message_text(doc))}' data-text='{e(exact)}'"
        f" data-self='{e(ours['author'] or '')}' data-self-name='{e(ours['name'])}'"
        f" data-self-colour='{e(ours['colour'])}'>{blame_html(runs, names)}</div>"
        "<p class='muted'>Type in the text: it is sent as you type, merged with what others "
        "write meanwhile; their carets show where they are. "
        "<output id='editor-state' class='result' aria-live='polite'>loading</output></p>"
        f"<script defer src='{e(web.link('/editor.js'))}'></script>"
    )


def legend(runs: list[Run], names: Names) -> str:
    """Each author of the text once, in the order they first appear, in their colour."""
    seen: list[bytes | None] = []
    for _text, author in runs:
        if author not in seen:
            seen.append(author)
    return "".join(
        f"<span data-author='{e(body['author'] or '')}' style='background:{body['colour']}'"
        f" title='{e(body['author'] or '')}'>{e(body['name'])}</span>"
        for body in (author_body(author, names) for author in seen)
    )


def blame_html(runs: list[Run], names: Names) -> str:
    """The text as spans, each with its author's id (`data-author`) and colour."""
    parts = []
    for text, author in runs:
        who = feed_text(author) if author is not None else ""
        name = label(names, author) if author is not None else "unknown"
        parts.append(
            f"<span data-author='{e(who)}' style='background:{colour(author)}'"
            f" title='{e(name)}'>{e(readable(text))}</span>"
        )
    return "".join(parts)


# -- /doc/ROOT/at, /doc/ROOT/events ------------------------------------------------------------


async def part(web: WebContext, request: Request) -> Response:
    doc = parse_root(request.args[0])
    if doc is None or request.args[1] not in ("events", "at", "history", "comments", "rendered"):
        return not_found()
    if request.args[1] == "rendered":
        return await rendered(web, request, doc)
    if request.args[1] == "events":
        return await doc_events.events(web, request, doc)
    if request.args[1] == "comments":
        return await comments(web, request, doc)
    if request.args[1] == "history":
        return await history(web, request, doc)
    try:
        wanted = number(request.query, "v")
        if wanted is None:
            raise ValueError("v: the version to show is missing (?v=N)")
        against = request.query.get("against", "previous")
        if against not in AGAINST:
            raise ValueError("against: previous or current")
    except ValueError as error:
        return bad_request(error)
    try:
        body = await revision_body(web.service, doc, wanted, against, await web.names())
    except UnknownDocument:
        return not_found("no such document")
    if body is None:
        return not_found(f"no version at or before {wanted}")
    return json_response(body)


async def versions_at(
    service: StoreService, doc: bytes, wanted: int
) -> tuple[Version | None, Version | None]:
    """The last version at or before `wanted` (the head if past it) and the one before it."""
    head, _entries = await service.read(
        lambda store: store.documents.document_splices(doc, MAX_SEQ, 0)
    )
    wanted = min(wanted, head)
    start = max(0, wanted - WINDOW + 1)
    versions = await service.read(
        lambda store: store.documents.document_versions(doc, start, WINDOW)
    )
    found = [v for v in versions if v.number <= wanted]
    if not found:
        return None, None
    return found[-1], found[-2] if len(found) > 1 else None


async def revision_body(
    service: StoreService, doc: bytes, wanted: int, against: str, names: Names
) -> dict[str, Any] | None:
    """The text at version `wanted`'s weft and its dyed difference (None: no such version).

    `against` "previous": from the version before to this one; "current": from this
    one to the text now. Spans: `{text, inserted_by, removed_by}`, each author a name
    or null."""
    shown, previous = await versions_at(service, doc, wanted)
    if shown is None:
        return None
    if against == "current":
        old, new, compared = shown.msg_id, None, None
    else:
        before = previous.msg_id if previous is not None else 0  # a gap: from the doc/init
        old = shown.msg_id if shown.number == 0 else before
        new, compared = shown.msg_id, previous.number if previous is not None else 0
    text = await service.read(lambda store: store.documents.document_revision(doc, shown.msg_id))
    spans = await service.read(lambda store: store.documents.document_dye(doc, old, new))
    return {
        "version": shown.number,
        "msg": message_text(shown.msg_id),
        **author_body(shown.author, names),
        "time": when(shown.timestamp),
        "inserted": shown.inserted,
        "deleted": shown.deleted,
        "against": against,
        "compared": compared,
        "text": readable(text),
        "spans": [
            {
                "text": readable(span.text),
                "inserted_by": None if span.inserted_by is None else label(names, span.inserted_by),
                "removed_by": None if span.removed_by is None else label(names, span.removed_by),
            }
            for span in spans
        ],
    }


def revision_info(body: dict[str, Any]) -> str:
    """`v3 by NAME at TIME, +4 -1 · %AbCdEfGh…`, as view.js writes it too: the edit's id is
    the version's name on every node (`tangled doc show D --at %AbCdEfGh` takes it)."""
    return (
        f"v{body['version']} by <span style='background:{body['colour']}'>{e(body['name'])}</span>"
        f" at {e(body['time'])}, +{body['inserted']} -{body['deleted']} · "
        f"<code title='{e(body['msg'])}'>{e(body['msg'][:9])}…</code>"
    )


def dye_html(body: dict[str, Any]) -> str:
    """Dyed spans: inserted text in `ins`, removed in `del`, titled with who did it."""
    parts = []
    for span in body["spans"]:
        if span["inserted_by"] is not None:
            parts.append(f"<ins title='{e('inserted by ' + span['inserted_by'])}'>")
            parts.append(f"{e(span['text'])}</ins>")
        elif span["removed_by"] is not None:
            parts.append(f"<del title='{e('removed by ' + span['removed_by'])}'>")
            parts.append(f"{e(span['text'])}</del>")
        else:
            parts.append(e(span["text"]))
    return "".join(parts)
