"""Spark in local mode for nbagent.spark's tests: one session per test module (a JVM start is seconds on
this machine), ``local[2,4]``: two executor threads, a task retried up to four times (a killed Python
worker's partition is run again, as a lost executor's is on a cluster)."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.receivers.conftest import _missing, need

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A local-mode SparkSession whose Python workers run this interpreter with this checkout's code."""
    need("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        _missing("Spark needs a Java runtime (apt-get install default-jre-headless)")
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable  # the executors' Python: this one, with nbagent and the tests
    paths = [str(ROOT / "src"), str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    scratch: Path = tmp_path_factory.mktemp("spark")
    session = (
        SparkSession.builder.master("local[2,4]")
        .appName("nbagent-spark-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.warehouse.dir", str(scratch / "warehouse"))
        .config("spark.local.dir", str(scratch / "local"))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
