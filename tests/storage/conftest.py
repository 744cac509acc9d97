import pytest

from tanglenode.storage.store import FeedStore
from tests.factories import ALL_VIEWS, keypair


@pytest.fixture
def open_store(tmp_path):
    """Open (or reopen) a real LMDB store under tmp_path, keeping every optional view unless
    `views` says otherwise; all are closed at teardown."""
    opened: list[FeedStore] = []

    def opener(name: str = "store", **options) -> FeedStore:
        options.setdefault("map_size", 256 * 2**20)
        options.setdefault("views", ALL_VIEWS)
        store = FeedStore(tmp_path / name, **options)
        opened.append(store)
        return store

    yield opener
    for store in opened:
        store.close()


@pytest.fixture
def store(open_store):
    return open_store(keypair=keypair("me"))
