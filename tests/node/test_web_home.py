"""The home and thread pages against a real store: whose conversations home lists and in what
order, what is not a conversation, the reply counts, and that others' names, texts and tangle
names are escaped, their control and bidi characters shown as `?`."""

from __future__ import annotations

import pytest

from tanglenode.node.web import home, thread
from tanglenode.protocol.contacts import contact_content
from tanglenode.protocol.identity import feed_text, message_text
from tests.node.test_web_docs import ESCAPED, HOSTILE, ME, OUTSIDER, PEER, Site, root

BIDI = "abc\u202edef"


@pytest.fixture
async def site(tmp_path):
    made = Site(tmp_path)
    yield made
    made.store.close()


async def post(at: Site, who, text, tangles):
    """A post by `who` (ME through the service, anyone else through their own store)."""
    content = {"type": "post", "text": text}
    if who is ME:
        return (await at.service.publish(content, tangles)).id
    return (await at.peer(who, lambda store: store.writes.publish(content, tangles))).id


async def test_home_lists_what_we_and_those_we_follow_wrote_in_newest_first(site):
    about = {"type": "about", "about": feed_text(PEER.public), "name": HOSTILE + BIDI}
    await site.peer(PEER, lambda store: store.writes.publish(about))
    await site.service.publish(contact_content(PEER.public, following=True, blocking=None), None)
    theirs = await post(site, PEER, HOSTILE + "\nsecond line " + BIDI, {"chat": None})
    await post(site, ME, "a reply", {"chat": theirs})
    await post(site, PEER, "and one more", {"chat": theirs})
    strangers = await post(site, OUTSIDER, "not followed, not answered", {"chat": None})
    ours = await post(site, ME, "ours, the newest", {HOSTILE: None})
    doc = (await site.service.create_document("a document")).id

    code, page = await site.get(home.page)
    assert code == 200
    listed = [
        part.split("'", 1)[0] for part in page.split("<article class='thread' data-root='")[1:]
    ]
    assert listed == [root(ours), root(theirs)]  # newest first; no stranger's, no document
    assert root(strangers) not in page and root(doc) not in page
    assert "<script>alert" not in page
    assert f"<p class='first'>{ESCAPED}\nsecond line abc?def</p>" in page  # lines kept
    assert f"data-tangle='{ESCAPED}'" in page
    assert f"~{ESCAPED}abcdef</span>" in page and "\u202e" not in page  # names drop them
    first, second = page.split("<article")[1:3]
    assert "0 replies" in first and "2 replies" in second
    assert second.index(f"~{ESCAPED}") < second.index(feed_text(ME.public)[:9])  # its author first


async def test_the_thread_page_reads_in_timeline_order_escaped(site):
    first = await post(site, PEER, HOSTILE, {"chat": None})
    await post(site, ME, "me " + BIDI, {"chat": first})
    code, page = await site.get(thread.page, "chat", root(first))
    assert code == 200 and "<script>alert" not in page.replace("<script defer src=", "")
    texts = [part.split("</p>")[0] for part in page.split("<p class='text'>")[1:]]
    assert texts == [ESCAPED, "me abc?def"]
    assert f"<li class='post first' data-id='{message_text(first)}'" in page
    assert page.count("<li class='post reply'") == 1
    assert "<textarea name='text'" in page and "data-api='publish'" in page
    assert f"data-root='{message_text(first)}'" in page
    assert f"/t/chat/{root(first)}/events" in page  # kept live by its tangle's stream

    assert (await site.get(thread.page, "chat", "not-an-id"))[0] == 404
    assert (await site.get(thread.page, "x" * 100, root(first)))[0] == 404
