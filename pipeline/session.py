"""A SparkSession set up for these jobs (settings measured in PIPELINE_NOTES).

Local runs bind to 127.0.0.1, keep Spark's UI and console progress off,
use Arrow for pandas UDFs and a scratch directory of their own. On a
cluster, `master` is the cluster's URL and the rest is the cluster's.

The JVM's own output (its start-up warnings, Spark's log through
`log4j2.properties`, Python workers' stderr) goes where `jvm_log` says:
the driver JVM is a child process that inherits file descriptor 2 when
pyspark starts it, so the session points fd 2 at the log file for that
moment only and restores it at once; the JVM keeps writing to the file for
its whole life, and our own stderr is the terminal again. `tangled
pipeline` shows the file only when something fails.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

_JAVA_17 = Path("/usr/lib/jvm/java-17-openjdk-amd64")
LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")


def scratch_dir() -> Path:
    """Spark's scratch space and the JVM logs: one directory of our own under the temp dir."""
    return Path(tempfile.gettempdir()) / f"tanglenode-spark-{os.getuid()}"


def java_missing() -> str | None:
    """Why Spark cannot start a JVM here, or None: no JAVA_HOME and no `java` on PATH."""
    if "JAVA_HOME" in os.environ or _JAVA_17.is_dir() or shutil.which("java"):
        return None
    return "Spark needs a Java 17+ runtime and none is installed (`make install` installs one)"


@contextlib.contextmanager
def _stderr_to(path: Path | None) -> Iterator[None]:
    """Point file descriptor 2 at `path` while the block runs (children keep it)."""
    if path is None:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(path, "ab") as log:
            os.dup2(log.fileno(), 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def spark_session(
    master: str | None = "local[*]",
    *,
    app: str = "tanglenode",
    driver_memory: str = "2g",
    shuffle_partitions: int | None = None,
    jvm_log: Path | None = None,
):
    """Build (or reuse) the session; import pyspark only here, so the node never needs it.

    `master=None` leaves the master to spark-submit. `jvm_log`: a file for the
    JVM's output (None: it shares our stderr).
    """
    if "JAVA_HOME" not in os.environ and _JAVA_17.is_dir():
        os.environ["JAVA_HOME"] = str(_JAVA_17)  # Spark 4 needs 17+; pin it over newer JDKs
    if master is not None and master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        # Workers run this interpreter (the project's venv), which has the jobs' imports.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    scratch = scratch_dir()
    with _stderr_to(jvm_log):
        from pyspark.sql import SparkSession

        builder = SparkSession.builder.appName(app)
        if master is not None:  # None: spark-submit (or the environment) chose the master
            builder = builder.master(master)
        java_options = f"-XX:TieredStopAtLevel=1 -Dlog4j2.configurationFile={LOG4J_CONFIG}"
        builder = (
            builder.config("spark.driver.memory", driver_memory)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.execution.arrow.pyspark.enabled", "true")
            .config("spark.local.dir", str(scratch))
            .config("spark.driver.extraJavaOptions", java_options)
            # Kept frames and spilled blocks are written by Kryo, not Java's own serialization
            # (a frame evicted to disk row by row through ObjectOutputStream stalled a job).
            .config("spark.serializer", "org.apache.spark.serializer.KryoSerializer")
        )
        if shuffle_partitions is not None:
            builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        session = builder.getOrCreate()
        if jvm_log is None:  # no file to hold warnings: keep the shared stderr to errors
            session.sparkContext.setLogLevel("ERROR")
    return session


def spark_session_for(master: str, memory: str, *, jvm_log: Path | None = None):
    """The session `tangled pipeline --master --memory` asks for: 'submitted' leaves the
    master (and the memory) to spark-submit."""
    if master == "submitted":
        return spark_session(None, jvm_log=jvm_log)
    return spark_session(master, driver_memory=memory, jvm_log=jvm_log)


def kept(frame):
    """`frame` computed once and kept for the rest of the job, its plan cut (`localCheckpoint`):
    written serialized to the scratch disk, where the system's page cache holds what memory
    allows, so a kept frame costs disk, never the JVM's heap (docs/PIPELINE.md, "Memory").
    Kept in the heap (serialized, spilling to disk), a 10M-message archive's events ran a
    2g heap out of memory."""
    from pyspark import StorageLevel

    return frame.localCheckpoint(storageLevel=StorageLevel.DISK_ONLY)
