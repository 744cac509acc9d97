"""`/`: the home page, the conversations the people we follow wrote in, newest first.

Theory of operation
-------------------
A conversation is a tangle whose root is no document's and no private
group's (`tangles.kind_of`) and is a post held here (a comment's thread on
a document, say, is not one): a first post and the replies that join it.
The page reads, in one worker-thread call (`recent_threads`), the newest
`PER_FEED` messages of our own feed and of each feed we follow (our
contact messages' stances, node/web/people.py; at most `MAX_FEEDS` feeds),
and collects the tangles those messages are in, each with the newest
claimed time among them. The newest `THREADS` conversations are shown,
each by its first post's text (up to `FIRST_SHOWN` characters, its layout
kept, its unsafe characters as `?`), the names of the people who wrote in
it (the first post's author first, from its last `AUTHORS_READ`
messages), the number of replies and when it last moved; each opens its
thread page (node/web/thread.py). Claimed times are the authors' own: a
clock set ahead keeps a thread on top, as in any feed reader of signed
logs.

A box at the top starts a conversation (a post rooting a new `chat`
tangle: IPC `publish`, sent by social.js with a `once` key), whose thread
page then opens. The operators' tables (`/tangles`, `/t/NAME/ROOT`) are one
click away, on each thread and in the navigation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tanglenode.node.present.names import Names
from tanglenode.node.present.summary import Summaries
from tanglenode.node.present.text import safe, safe_lines
from tanglenode.node.web.http import (
    Request,
    Response,
    WebContext,
    html_response,
    root_text,
)
from tanglenode.node.web.page import e, shell, when
from tanglenode.node.web.people import followed, our_stances
from tanglenode.node.web.tangles import kind_of, thread_path
from tanglenode.protocol.identity import feed_text
from tanglenode.protocol.message import Message
from tanglenode.storage.views.timelines import timeline_name

PER_FEED = 50  # newest messages read of each feed
MAX_FEEDS = 300  # feeds read: ours and those we follow
THREADS = 40  # conversations shown
AUTHORS_READ = 200  # a thread's newest messages read for its authors
AUTHORS_SHOWN = 6  # names shown on a thread; the rest counted
FIRST_SHOWN = 600  # characters of a first post shown
CONVERSATION = "chat"  # the tangle a conversation started here is in


@dataclass
class Thread:
    """One conversation as the home page shows it."""

    name: str
    root: bytes
    first: Message | None  # the first post; None when the root is not held
    messages: int  # in its timeline, the first post included
    authors: list[bytes]  # who wrote in it, the first post's author first
    last: int  # the newest claimed time of what we read of it


def recent_threads(store: Any, feeds: list[bytes]) -> list[Thread]:
    """The conversations `feeds` wrote in lately, newest first (a worker thread's read)."""
    latest: dict[tuple[str, bytes], int] = {}
    for info in store.feeds.held_of(feeds[:MAX_FEEDS]):
        if info.head_seq <= 0:
            continue
        start = max(1, info.head_seq - PER_FEED + 1)
        for message in store.feeds.read_feed(info.author, start, PER_FEED):
            for name, link in message.tangles.items():
                key = (name, message.id if link.root is None else link.root)
                latest[key] = max(latest.get(key, message.timestamp), message.timestamp)
    threads: list[Thread] = []
    for (name, root), last in sorted(latest.items(), key=lambda item: -item[1]):
        first = store.feeds.get(root)
        if first is None or not is_conversation(name, first):
            continue
        threads.append(thread_of(store, name, root, first, last))
        if len(threads) >= THREADS:
            break
    return threads


def is_conversation(name: str, first: Message) -> bool:
    """Whether the tangle (name, first's id) is a conversation people read: no document's,
    no group's, and rooted at a post (or at a message whose content is gone), not at a
    comment on a document or any other kind's own tangle."""
    if kind_of(name, first) != "conversation":
        return False
    content = first.content
    return not first.has_content or (isinstance(content, dict) and content.get("type") == "post")


def thread_of(store: Any, name: str, root: bytes, first: Message | None, last: int) -> Thread:
    """Conversation (name, root): its size and its authors, from its newest messages."""
    _version, start, entries = store.timelines.timeline_tail(
        timeline_name(root, name), AUTHORS_READ
    )
    authors = [first.author] if first is not None else []
    for _rank, msg_id, _state in entries:
        message = store.feeds.get(msg_id)
        if message is not None and message.author not in authors:
            authors.append(message.author)
    return Thread(name, root, first, start + len(entries), authors, last)


def post_text(message: Message | None, summaries: Summaries, limit: int) -> str:
    """What a message says, to show in full (a post's text, its lines kept) up to `limit`
    characters; other kinds in their one summary line."""
    if message is None:
        return "(the first post is not held here)"
    if not message.has_content:
        return "(erased)"
    content = message.content
    if isinstance(content, dict) and content.get("type") == "post":
        text = content.get("text")
        if isinstance(text, str):
            cut = text[:limit] + ("…" if len(text) > limit else "")
            return safe_lines(cut)
    return safe(summaries.line(message))


def authors_html(names: Names, authors: list[bytes]) -> str:
    shown = [
        f"<span class='who' title='{e(feed_text(feed))}'>{e(safe(names.label(feed)))}</span>"
        for feed in authors[:AUTHORS_SHOWN]
    ]
    more = len(authors) - AUTHORS_SHOWN
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def replies_text(thread: Thread) -> str:
    replies = thread.messages - 1 if thread.first is not None else thread.messages
    replies = max(0, replies)
    return "1 reply" if replies == 1 else f"{replies} replies"


def thread_html(web: WebContext, names: Names, summaries: Summaries, thread: Thread) -> str:
    """One conversation of the home page: a card that opens its thread."""
    link = web.link(thread_path(thread.name, thread.root))
    text = post_text(thread.first, summaries, FIRST_SHOWN)
    return (
        f"<article class='thread' data-root='{e(root_text(thread.root))}' "
        f"data-tangle='{e(thread.name)}'><a class='open' href='{e(link)}'>"
        f"<p class='first'>{e(text)}</p></a>"
        f"<p class='meta'><span class='authors'>{authors_html(names, thread.authors)}</span>"
        f" · <span class='replies'>{e(replies_text(thread))}</span>"
        f" · <span class='when'>{e(when(thread.last))}</span></p></article>"
    )


STYLE = """
.thread{background:#fff;border:1px solid #e3e6ef;border-radius:10px;padding:.8rem 1rem;
margin:.7rem 0}
.thread a.open{color:inherit;text-decoration:none;display:block}
.thread a.open:hover .first{color:#3050a0}
.thread .first{white-space:pre-wrap;overflow-wrap:anywhere;margin:0 0 .4rem;font-size:16px}
.meta{margin:0;font-size:13px;color:#667}.meta .who{font-weight:600;color:#1d2430}
.new-thread textarea{width:100%;font:inherit;border-radius:8px;padding:.5rem}
.new-thread .result[data-state=error]{color:#b03030}
"""


async def page(web: WebContext, request: Request) -> Response:
    """`/`: the conversations of the people we follow, and a box to start one."""
    if web.keypair is None or web.service is None:
        body = "<h1>Home</h1><p>This node has no key: it follows no one.</p>"
        return html_response(shell(web, "home", body))
    stances = await our_stances(web)
    follows = followed(stances)
    feeds = [web.keypair.public, *follows]
    threads = await web.service.read(recent_threads, feeds)
    names = await web.names()
    summaries = Summaries(names.label)
    cards = "".join(thread_html(web, names, summaries, thread) for thread in threads)
    if not cards:
        cards = (
            "<p class='muted' id='no-threads'>Nothing yet: start a conversation, or follow "
            f"people on the <a href='{e(web.link('/peers'))}'>peers</a> page.</p>"
        )
    who = "you" if not follows else "you and the people you follow"
    body = (
        "<h1>Home</h1>"
        f"<p class='muted'>Conversations {e(who)} wrote in, newest first · "
        f"<a href='{e(web.link('/tangles'))}'>all tangles (operators)</a></p>"
        f"<form class='new-thread' data-tangle='{CONVERSATION}'>"
        "<textarea name='text' required maxlength='8000' rows='3' "
        "placeholder='Start a conversation'></textarea>"
        "<div><button type='submit'>Post</button> "
        "<output class='result' aria-live='polite'></output></div></form>"
        f"<section id='threads'>{cards}</section>"
    )
    return html_response(shell(web, "home", body, scripts=("social.js",), style=STYLE))
