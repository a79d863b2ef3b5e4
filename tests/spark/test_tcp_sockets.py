"""nbagent.spark.run_batch on Spark's default sockets, TCP ports of 127.0.0.1, as users run it. The other Spark
tests use Unix sockets (docs/testing.md, "Ports in tests"). run_batch's job and its check of the task ids
open no result socket, and this test reads what it wrote without one either: counts come back through Py4J
and files are read with pyarrow. So no other process's stray connection can take a socket it needs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nbagent.spark import run_batch
from tests.receivers.conftest import local_spark

from .agents import weather
from .test_run_batch import cities, run_ids

pytestmark = [pytest.mark.slow, pytest.mark.spark]


@pytest.fixture(scope="module")
def tcp_spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A session on Spark's default sockets (``spark.python.unix.domain.socket.enabled`` false)."""
    yield from local_spark("local[2,4]", tmp_path_factory.mktemp("spark"), unix_sockets=False)


def test_a_batch_over_tcp_sockets_commits_each_task_once(tcp_spark: Any, tmp_path: Path) -> None:
    assert tcp_spark.sparkContext.getConf().get("spark.python.unix.domain.socket.enabled") == "false"
    frame = tcp_spark.createDataFrame(cities(40)).repartition(2)
    got = run_batch(frame, weather, tmp_path, concurrency=4, part_size=8, timeout=60)
    assert got.count() == 40 and got.where("status = 'ok'").count() == 40
    assert got.select("task_id").distinct().count() == 40
    runs = run_ids(tmp_path, "runs")
    assert len(runs) == 40 and len(set(runs)) == 40
