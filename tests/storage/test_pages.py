"""The pages the IPC serves: each read in one transaction, equal to reading item by item."""

import pytest

from tanglenode.storage.engine.timeline import Insert
from tanglenode.storage.errors import UnknownTimeline
from tanglenode.storage.views.timelines import timeline_name

SPACETIME = timeline_name(None)


class CountingEnv:
    """The store's LMDB environment, counting the transactions begun on it."""

    def __init__(self, env):
        self._env = env
        self.begun = 0

    def begin(self, *args, **kwargs):
        self.begun += 1
        return self._env.begin(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._env, name)


@pytest.fixture
def chat(store):
    root = store.writes.publish("root", {"chat": None})
    for n in range(30):
        store.writes.publish({"n": n, "pad": "x" * 1000}, {"chat": root.id})
    return timeline_name(root.id, "chat")


def counted(store) -> CountingEnv:
    env = CountingEnv(store.ctx.env)
    object.__setattr__(store.ctx, "env", env)  # the context every area shares is frozen
    return env


def test_a_processed_page_is_one_transaction_and_equals_reading_each_message(store, chat):
    expected = [
        (index, store.feeds.get_by_seq(feed, seq))
        for index, feed, seq in store.feeds.processed(3, 20)
    ]
    env = counted(store)
    assert store.feeds.processed_page(3, 20) == expected
    assert env.begun == 1
    assert len(expected) == 20 and [index for index, _m in expected] == list(range(3, 23))


def test_a_processed_page_stops_at_the_byte_cap_with_the_message_that_reaches_it(store, chat):
    page = store.feeds.processed_page(0, 1000, max_bytes=5000)
    sizes = [len(message.raw) for _index, message in page]
    assert sum(sizes[:-1]) < 5000 <= sum(sizes)
    assert store.feeds.processed_page(10_000) == []


def test_timeline_updates_are_one_transaction_with_each_inserted_message(store, chat):
    head = store.timelines.timeline_version(chat)
    commands = store.timelines.timeline_commands(chat, 4, 1000)
    expected = [
        (command, store.feeds.get(command.id) if isinstance(command, Insert) else None)
        for command in commands
    ]
    env = counted(store)
    assert store.timelines.timeline_updates(chat, 4) == (head, expected)
    assert env.begun == 1
    assert store.timelines.timeline_log(chat, 4, 1000) == (head, commands)
    assert env.begun == 2


def test_timeline_updates_stop_at_the_byte_cap(store, chat):
    head, updates = store.timelines.timeline_updates(chat, 0, 1000, max_bytes=4000)
    sizes = [len(message.raw) for _command, message in updates if message]
    assert sum(sizes[:-1]) < 4000 <= sum(sizes) and len(updates) < head
    _head, limited = store.timelines.timeline_updates(chat, 0, 3)
    assert len(limited) == 3


def test_a_timeline_not_created_yet_has_no_updates(store, open_store):
    unknown = timeline_name(b"\x01" * 32, "chat")
    assert store.timelines.timeline_updates(unknown, 0) == (0, [])
    assert store.timelines.timeline_updates(SPACETIME, 0) == (0, [])  # an empty store
    assert store.timelines.timeline_log(SPACETIME, 0) == (0, [])
    with pytest.raises(UnknownTimeline):
        store.timelines.timeline_log(unknown, 0)  # as timeline_version: `not-found` over IPC
