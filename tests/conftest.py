"""What every test shares: no `tangled run` outlives the test that started it, and a bare
seq in a test's timeframe names the message signed last at that (feed, seq)."""

import pytest

from tanglenode.node.localnet import kill_leftovers
from tanglenode.storage import writes as writes_module
from tests.factories import remember


@pytest.fixture(autouse=True)
def _no_node_outlives_its_test():
    """A test that fails before stopping its nodes would leave them running; kill them."""
    yield
    kill_leftovers()


@pytest.fixture(autouse=True)
def _stores_remember_what_they_sign(monkeypatch):
    """Messages our stores sign can be named by seq in the messages tests build
    (tests.factories.named)."""
    sign = writes_module.sign_message

    def sign_and_remember(*args, **kwargs):
        return remember(sign(*args, **kwargs))

    monkeypatch.setattr(writes_module, "sign_message", sign_and_remember)
