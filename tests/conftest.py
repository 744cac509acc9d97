"""What every test shares: no `tangled run` outlives the test that started it."""

import pytest

from tanglenode.node.localnet import kill_leftovers


@pytest.fixture(autouse=True)
def _no_node_outlives_its_test():
    """A test that fails before stopping its nodes would leave them running; kill them."""
    yield
    kill_leftovers()
