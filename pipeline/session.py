"""A SparkSession set up for these jobs (settings measured in PIPELINE_NOTES).

Local runs bind to 127.0.0.1, keep Spark's UI and console progress off,
use Arrow for pandas UDFs and a scratch directory of their own. On a
cluster, `master` is the cluster's URL and the rest is the cluster's.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

_JAVA_17 = Path("/usr/lib/jvm/java-17-openjdk-amd64")


def spark_session(
    master: str | None = "local[*]",
    *,
    app: str = "tanglenode",
    driver_memory: str = "2g",
    shuffle_partitions: int | None = None,
):
    """Build (or reuse) the session; import pyspark only here, so the node never needs it.

    `master=None` leaves the master to spark-submit.
    """
    if "JAVA_HOME" not in os.environ and _JAVA_17.is_dir():
        os.environ["JAVA_HOME"] = str(_JAVA_17)  # Spark 4 needs 17+; pin it over newer JDKs
    if master is not None and master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        # Workers run this interpreter (the project's venv), which has the jobs' imports.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    scratch = Path(tempfile.gettempdir()) / f"tanglenode-spark-{os.getuid()}"
    builder = SparkSession.builder.appName(app)
    if master is not None:  # None: spark-submit (or the environment) chose the master
        builder = builder.master(master)
    builder = (
        builder.config("spark.driver.memory", driver_memory)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.local.dir", str(scratch))
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1")
    )
    if shuffle_partitions is not None:
        builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
