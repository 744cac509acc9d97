"""Optional views: off by default, built by `reindex` when turned on, dropped when turned off.

A store turned on later must hold exactly the rows of one that kept the view from the
start; one turned off must hold none of them, and nothing else may change either way.
"""

from __future__ import annotations

import pytest

from tanglenode.config.settings import ViewsSettings
from tanglenode.protocol.message import TangleLink
from tanglenode.storage.engine.causal_time import causal_time_order
from tanglenode.storage.errors import ViewOff
from tanglenode.storage.registry import OPTIONAL, VIEWS
from tanglenode.storage.reindex import contents, reindex
from tanglenode.storage.view_choice import BUILT_KEY
from tanglenode.storage.views.timelines import SPACETIME, timeline_name
from tests.factories import ALL_VIEWS, Feed

CAUSAL = timeline_name(None, order="causal-time")


def chat():
    """A chat of three feeds whose clocks run backwards along the replies."""
    alice, bob, carol = Feed("alice"), Feed("bob"), Feed("carol")
    root = alice.root("chat", "root")
    messages, tip = [root], root.id
    for step, feed in enumerate([bob, carol, alice, bob, carol] * 3):
        message = feed.append(
            {"type": "post", "text": f"r{step}"},
            tangles={"chat": TangleLink(root.id, [tip])},
            timestamp=10_000 - 100 * step,
        )
        messages.append(message)
        tip = message.id
    return root, messages


def twin_rows(store) -> tuple[int, int, list[bytes]]:
    """(ct-nodes rows, ct-time rows, names of causal-time timelines) held by the store."""
    tables = store.ctx.timeline_tables
    with store.ctx.read() as txn:
        names = [
            bytes(name)
            for name in txn.cursor(db=tables.names).iternext(values=False)
            if name[:1] == b"\x03"
        ]
        return (
            txn.stat(tables.causal_nodes)["entries"],
            txn.stat(tables.causal_times)["entries"],
            names,
        )


def test_a_new_store_keeps_no_causal_time_view_and_says_how_to_turn_it_on(open_store):
    store = open_store(views=None)
    _root, messages = chat()
    store.writes.ingest([m.raw for m in messages])
    assert [view.name for view in store.views] == [
        kind.name for kind in VIEWS if kind.name != "causal-time"
    ]
    assert twin_rows(store) == (0, 0, [])
    assert [i for _r, i in store.timelines.timeline(SPACETIME)]  # the rank order is kept
    for read in (
        lambda: store.timelines.timeline(CAUSAL),
        lambda: store.timelines.timeline_version(CAUSAL),
        lambda: store.timelines.timeline_window(CAUSAL, 0, 2**40),
        lambda: store.digests.timeline_digest(CAUSAL),
    ):
        with pytest.raises(ViewOff, match=r"causal_time = true.*tangled reindex causal-time"):
            read()


def test_a_view_turned_on_later_is_built_by_reindex_exactly_as_if_kept_from_the_start(
    open_store,
):
    root, messages = chat()
    kept = open_store("kept", views=ALL_VIEWS)
    kept.writes.ingest([m.raw for m in messages])
    later = open_store("later", views=[])
    later.writes.ingest([m.raw for m in messages[:9]])
    later.close()

    later = open_store("later", views=ALL_VIEWS)  # on, not built: not kept, and said so
    assert not later.ctx.views.keeps("causal-time")
    with pytest.raises(ViewOff, match="turned on but not built"):
        later.timelines.timeline(CAUSAL)
    later.writes.ingest([m.raw for m in messages[9:]])  # arrives while it is not kept
    assert twin_rows(later) == (0, 0, [])
    steps: list[tuple[str, int]] = []
    rebuilt = reindex(
        later.ctx, later.wanted_views(), ["causal-time"], lambda *step: steps.append(step)
    )
    assert "causal-time" in rebuilt and steps[-1][1] == len(messages)
    later.close()

    later = open_store("later", views=ALL_VIEWS)
    assert later.ctx.views.keeps("causal-time")
    assert (
        contents(later.ctx, later.views)["causal-time"]
        == contents(kept.ctx, kept.views)["causal-time"]
    )
    wanted = causal_time_order(
        (m.id, m.tangles["chat"].previous or (), m.timestamp) for m in messages
    )
    chat_twin = timeline_name(root.id, "chat", order="causal-time")
    assert [i for _t, i in later.timelines.timeline(chat_twin)] == list(wanted)
    later.writes.ingest([Feed("dave").append({"type": "post", "text": "after"}).raw])
    assert later.timelines.timeline_version(CAUSAL) > 0  # kept from now on


def test_a_view_turned_off_is_dropped_whole_and_nothing_else_changes(open_store):
    _root, messages = chat()
    store = open_store(views=ALL_VIEWS)
    store.writes.ingest([m.raw for m in messages])
    before = contents(store.ctx, store.views)
    assert twin_rows(store)[0] > 0
    store.close()

    store = open_store(views=[])
    assert twin_rows(store) == (0, 0, [])
    after = contents(store.ctx, store.views)
    assert after.keys() == before.keys() - {"causal-time"}
    for name, rows in after.items():  # the joined view loses its order's timelines only
        assert rows == [row for row in before[name] if not row[0].startswith(b"\x02")], name
    assert any(row[0].startswith(b"\x02") for row in before["joined"])
    store.close()
    store = open_store(views=None)  # no choice: keeps what it has built, still nothing
    assert not store.ctx.views.keeps("causal-time") and twin_rows(store) == (0, 0, [])


def test_a_store_without_the_record_holds_every_view(open_store):
    _root, messages = chat()
    store = open_store(views=ALL_VIEWS)
    store.writes.ingest([m.raw for m in messages])
    with store.ctx.env.begin(write=True) as txn:
        txn.delete(BUILT_KEY, db=store.ctx.tables.meta)
    store.close()
    store = open_store(views=None)
    assert store.ctx.views.keeps("causal-time")
    assert [i for _t, i in store.timelines.timeline(CAUSAL)]


def test_the_tangle_list_tells_the_newest_claimed_time_with_or_without_the_view(open_store):
    _root, messages = chat()
    lists = []
    for name, views in (("with", ALL_VIEWS), ("without", [])):
        store = open_store(name, views=views)
        store.writes.ingest([m.raw for m in messages])
        (info,), _next = store.tangles.tangle_page(limit=10)
        lists.append(info.last)
    assert lists == [max(m.timestamp for m in messages)] * 2


def test_every_optional_view_is_a_view_and_a_setting():
    names = {kind.name for kind in VIEWS}
    fields = set(vars(ViewsSettings()))
    for view in OPTIONAL:
        assert view.built_by in names and view.setting in fields
        assert view.name.replace("-", "_") == view.setting
    assert ViewsSettings(causal_time=True).wanted() == ["causal-time"]
    assert ViewsSettings(joined_order=True).wanted() == ["joined-order"]
    assert ViewsSettings().wanted() == []


def test_the_joined_order_is_optional_and_the_joined_counts_are_kept_without_it(open_store):
    root, messages = chat()
    late = messages[-3]  # held back (its author's last): the two replies after it wait on it
    early = [m for m in messages if m is not late]
    joined_view = timeline_name(root.id, "chat", view="joined")
    kept = open_store("kept", views=["joined-order"])
    kept.writes.ingest([m.raw for m in early])
    bare = open_store("bare", views=[])
    bare.writes.ingest([m.raw for m in early])
    for store in (kept, bare):
        (info,), _next = store.tangles.tangle_page(limit=10)
        assert (info.messages, info.joined) == (len(early), len(early) - 2)
    with pytest.raises(ViewOff, match=r"joined_order = true.*tangled reindex joined"):
        bare.timelines.timeline(joined_view)
    assert len(kept.timelines.timeline(joined_view)) == len(early) - 2
    for store in (kept, bare):
        store.writes.ingest([late.raw])
        (info,), _next = store.tangles.tangle_page(limit=10)
        assert info.joined == len(messages)
    bare.close()
    bare = open_store("bare", views=["joined-order"])
    reindex(bare.ctx, bare.wanted_views(), ["joined"])
    bare.close()
    bare = open_store("bare", views=["joined-order"])
    assert bare.timelines.timeline(joined_view) == kept.timelines.timeline(joined_view)
    assert contents(bare.ctx, bare.views)["joined"] == contents(kept.ctx, kept.views)["joined"]
