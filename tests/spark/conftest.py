"""Spark in local mode for nbagent.spark's tests: one session per test module (a JVM start is seconds on
this machine), ``local[2,4]``: two executor threads, a task retried up to four times (a killed Python
worker's partition is run again, as a lost executor's is on a cluster)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.receivers.conftest import local_spark


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A local-mode SparkSession whose Python workers run this interpreter with this checkout's code."""
    yield from local_spark("local[2,4]", tmp_path_factory.mktemp("spark"))
