"""Timeline digests: the hash of a timeline's order, computed on demand, cached by version."""

import random

import pytest

from tanglenode.protocol.message import TangleLink
from tanglenode.storage.errors import UnknownTimeline
from tanglenode.storage.views import digest as digest_module
from tanglenode.storage.views.digest import EMPTY, order_digest
from tanglenode.storage.views.timelines import SPACETIME
from tests.factories import Feed


def _chat(count: int):
    """A tangle `chat` of `count` replies, one feed each (any arrival order is valid), the
    replies naming the root or the one two before: some ranks hold two messages."""
    root = Feed("d-root").root("chat")
    messages = [root]
    for n in range(count):
        last = messages[max(0, n - 1)].id
        message = Feed(f"d-{n}").append(n, tangles={"chat": TangleLink(root.id, (last,))})
        messages.append(message)
    return root, messages


@pytest.mark.parametrize("order", ["rank", "causal-time"])
def test_the_digest_is_the_hash_of_the_ids_in_order_whatever_the_arrival(open_store, order):
    root, messages = _chat(9)
    found = []
    for seed in range(3):
        store = open_store(f"s{seed}")
        raws = [m.raw for m in messages]
        random.Random(seed).shuffle(raws)
        for raw in raws:  # one at a time: different command logs, different versions
            store.writes.ingest([raw])
        for name in (store.timelines.timeline_name(root.id, "chat", order=order), SPACETIME):
            ids = [msg_id for _key, msg_id in store.timelines.timeline(name)]
            digest = store.digests.timeline_digest(name)
            assert digest.count == len(ids) == len(messages)
            assert digest.digest == order_digest(ids)
            assert digest.version == store.timelines.timeline_version(name)
        found.append(
            store.digests.timeline_digest(
                store.timelines.timeline_name(root.id, "chat", order=order)
            )
        )
    assert len({(d.count, d.digest) for d in found}) == 1
    assert len(found[0].short) == 16 and found[0].digest.hex().startswith(found[0].short)


def test_any_change_of_order_changes_the_digest_and_a_read_pass_is_cached(open_store, monkeypatch):
    monkeypatch.setattr(digest_module, "CHUNK", 2)  # several chunks per pass
    root, messages = _chat(6)
    store = open_store()
    store.writes.ingest([m.raw for m in messages[:-1]])
    name = store.timelines.timeline_name(root.id, "chat")
    before = store.digests.timeline_digest(name)
    assert store.digests.timeline_digest(name) is before  # same version: the cached one
    assert before.digest == order_digest(msg_id for _r, msg_id in store.timelines.timeline(name))
    store.writes.ingest([messages[-1].raw])
    after = store.digests.timeline_digest(name)
    assert after.version > before.version and after.count == before.count + 1
    assert after.digest != before.digest
    swapped = [m.id for m in messages]
    swapped[1], swapped[2] = swapped[2], swapped[1]
    assert order_digest(swapped) != after.digest  # the order counts, not just the set


def test_an_empty_store_and_unknown_tangles(open_store):
    store = open_store()
    assert store.digests.timeline_digest(SPACETIME) == EMPTY
    assert (
        store.digests.timeline_digest(store.timelines.timeline_name(None, order="causal-time"))
        == EMPTY
    )
    assert EMPTY.digest == order_digest([])
    with pytest.raises(UnknownTimeline):
        store.digests.timeline_digest(store.timelines.timeline_name(b"\x01" * 32, "chat"))
    root, messages = _chat(0)
    store.writes.ingest([messages[0].raw])
    joined = store.timelines.timeline_name(root.id, "chat", view="joined")
    assert store.digests.timeline_digest(joined).count in (0, 1)


def test_status_digests_are_the_spacetime_then_a_bounded_list_of_tangles(open_store):
    store = open_store()
    roots = [Feed(f"t{n}").root(f"topic{n}") for n in range(4)]
    store.writes.ingest([root.raw for root in roots])
    found, more = store.digests.timeline_digests(2)
    assert found[0][:2] == (None, None) and more
    assert len(found) == 3 and all(d.count == 1 for _r, _n, d in found[1:])
    assert found[0][2] == store.digests.timeline_digest(SPACETIME) and found[0][2].count == 4
    everything, more = store.digests.timeline_digests(10)
    assert not more and len(everything) == 5
    tangles = {(root.id, f"topic{n}") for n, root in enumerate(roots)}
    assert {(root, name) for root, name, _d in everything[1:]} == tangles
    for root, name, digest in everything[1:]:
        assert digest == store.digests.timeline_digest(store.timelines.timeline_name(root, name))
