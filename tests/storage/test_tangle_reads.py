"""Listing the tangles a store holds: figures from the timelines' rows, pages bounded."""

from tanglenode.protocol.message import TangleLink
from tanglenode.storage.feeds.ingest import Outcome
from tanglenode.storage.tangle_reads import TangleInfo
from tests.factories import Feed


def ingest(store, *messages):
    results = store.writes.ingest([m.raw for m in messages])
    assert {r.outcome for r in results} == {Outcome.ACCEPTED}, results


def every_page(store, limit, **options) -> tuple[list[TangleInfo], int]:
    """Every tangle, page by page; and how many pages it took."""
    found, after, pages = [], None, 0
    while True:
        page, after = store.tangles.tangle_page(after, limit, **options)
        found.extend(page)
        pages += 1
        if after is None:
            return found, pages


def test_a_tangle_counts_its_members_joined_and_pending_and_its_newest_time(store):
    alice, bob = Feed("alice"), Feed("bob")
    root = alice.append("hello", tangles={"chat": TangleLink(None, None)}, timestamp=1_000)
    first = bob.append("one", tangles={"chat": TangleLink(root.id, (root.id,))}, timestamp=5)
    missing = bob.append("two", tangles={"chat": TangleLink(root.id, (first.id,))})
    waits = alice.append(
        "three", tangles={"chat": TangleLink(root.id, (missing.id,))}, timestamp=9_000
    )
    ingest(store, root)
    ingest(store, first)
    held = store.writes.ingest([waits.raw])  # alice's seq 2: accepted, `missing` is bob's seq 2
    assert held[0].outcome is Outcome.ACCEPTED
    (info,), after = store.tangles.tangle_page()
    assert after is None
    assert (info.root, info.name, info.author) == (root.id, "chat", alice.public)
    assert (info.messages, info.joined, info.pending) == (3, 2, 1)
    assert info.last == 9_000  # the newest claimed time, whatever the order
    version = info.version
    ingest(store, missing)
    (info,), _ = store.tangles.tangle_page()
    assert (info.messages, info.joined, info.pending) == (4, 4, 0)
    assert info.version > version


def test_a_tangle_whose_root_is_not_held_has_no_author(store):
    alice, bob = Feed("alice"), Feed("bob")
    root = alice.root("chat")
    reply = bob.append("hi", tangles={"chat": TangleLink(root.id, (root.id,))})
    ingest(store, reply)
    (info,), _ = store.tangles.tangle_page()
    assert (info.root, info.author, info.messages, info.joined) == (root.id, None, 1, 0)


def test_pages_list_every_tangle_once_in_root_order(store):
    alice = Feed("alice")
    roots = [alice.root(name) for name in ("a", "b", "c", "d", "e")]
    both = alice.append(tangles={"x": TangleLink(None, None), "y": TangleLink(None, None)})
    ingest(store, *roots, both)
    found, pages = every_page(store, 2)
    keys = [(info.root, info.name) for info in found]
    assert sorted(keys) == keys and len(set(keys)) == 7 and pages == 4
    assert [info.name for info in found if info.root == both.id] == ["x", "y"]
    # a page starts after the cursor it is given, whether or not that tangle is held
    after = found[2]
    rest, _ = store.tangles.tangle_page((after.root, after.name), 100)
    assert rest == found[3:]


def test_a_name_filter_and_the_scan_bound_keep_each_page_bounded(store):
    alice = Feed("alice")
    messages = [alice.root("group" if index % 3 == 0 else "chat") for index in range(12)]
    ingest(store, *messages)
    wanted = {m.id for m in messages if "group" in m.tangles}
    found, pages = every_page(store, 100, name="group", scan=2)
    assert {info.root for info in found} == wanted and {i.name for i in found} == {"group"}
    assert pages == 6  # twelve names looked at, two a page
    page, after = store.tangles.tangle_page(None, 100, name="group", scan=2)
    assert len(page) <= 2 and after is not None


def test_an_empty_store_lists_nothing(store):
    assert store.tangles.tangle_page() == ([], None)
