import pytest


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for the whole suite: two cores, two shuffle partitions."""
    from tanglenode.pipeline.session import spark_session

    session = spark_session("local[2]", driver_memory="1g", shuffle_partitions=2)
    yield session
    session.stop()
