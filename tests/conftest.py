"""What every test shares: no `tangled run` outlives the test that started it, a bare
seq in a test's timeframe names the message signed last at that (feed, seq), and a
skip inside a Trio test says why."""

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


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    """A skip inside a Trio test keeps its reason: pytest-trio (0.8) re-raises it as a bare
    `pytest.skip()` over the exception group that carries it; raise the test's own."""
    try:
        return (yield)
    except pytest.skip.Exception as skipped:
        raise _own_skip(skipped) from None


def _own_skip(skipped: BaseException) -> BaseException:
    """The one skip inside the exception group `skipped` was raised over, else `skipped`."""
    if not isinstance(skipped.__context__, BaseExceptionGroup):
        return skipped
    leaves, queue = [], [skipped.__context__]
    while queue:
        exc = queue.pop()
        if isinstance(exc, BaseExceptionGroup):
            queue.extend(exc.exceptions)
        else:
            leaves.append(exc)
    if len(leaves) == 1 and isinstance(leaves[0], pytest.skip.Exception):
        return leaves[0]
    return skipped
