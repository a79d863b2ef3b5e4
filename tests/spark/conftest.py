"""Spark in local mode for nbagent.spark's tests: one session per test module (a JVM start is seconds on
this machine), ``local[2,4]``: two executor threads, a task retried up to four times (a killed Python
worker's partition is run again, as a lost executor's is on a cluster)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.receivers.conftest import local_spark

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A local-mode SparkSession whose Python workers run this interpreter with this checkout's code."""
    os.environ["PYSPARK_PYTHON"] = sys.executable  # the executors' Python: this one, with nbagent and the tests
    paths = [str(ROOT / "src"), str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    yield from local_spark("local[2,4]", tmp_path_factory.mktemp("spark"))
