"""The pipeline tests' shared parts: one SparkSession, one small archive of a real store.

Spark runs on a JVM: where no Java 17+ runtime is installed (`make install` installs
one), every test that starts Spark, in this process or in a `tangled pipeline` child,
asks for `java` (or for `spark`, which does) and is skipped, saying why.
"""

import random

import pytest

from tanglenode.pipeline.export import export
from tanglenode.pipeline.session import java_missing
from tests.pipeline.archives import build_store


@pytest.fixture(scope="session")
def java():
    """Skips the test, with the reason, where Spark cannot start a JVM."""
    reason = java_missing()
    if reason is not None:
        pytest.skip(reason)


@pytest.fixture(scope="session")
def spark(java):
    """One local SparkSession for the whole suite: two cores, two shuffle partitions."""
    from tanglenode.pipeline.session import spark_session

    session = spark_session("local[2]", driver_memory="1g", shuffle_partitions=2)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def archive(tmp_path_factory):
    directory = tmp_path_factory.mktemp("archive")
    store, feeds = build_store(directory / "store", random.Random(5))
    try:
        counts = export(store, directory / "out")
    finally:
        store.close()
    assert counts["evidence"] == 2  # the fork's pair; the feed ends before it
    return directory / "out", feeds
