"""Fixtures: real OTLP receivers (MLflow, Phoenix) and real engines (Spark local mode, polars).

A receiver whose environment is not built, or an engine that is not installed, skips its tests on
a developer's machine (``python -m tests.receivers.install`` builds them) and fails them in CI
(``CI=true``), where ``.ci/run`` installs everything: a green CI never hides a missing receiver.
"""

from __future__ import annotations

import importlib
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from .servers import PINS, QUIET_ENV, STARTERS, Receiver, installed

ROOT = Path(__file__).resolve().parents[2]

IN_CI = os.environ.get("CI", "").lower() == "true"


def _missing(why: str) -> None:
    if IN_CI:
        pytest.fail(f"{why} (CI installs it: see .ci/run)", pytrace=False)
    pytest.skip(why)


def need(module: str) -> ModuleType:
    """``module`` imported, or the test skipped (failed in CI)."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        _missing(f"{module} is not installed ({error}); pip install -e '.[test]'")
        raise  # unreachable: _missing raises


@pytest.fixture(scope="session", autouse=True)
def _quiet_clients() -> Iterator[None]:
    """The receivers' clients in this process send no telemetry either."""
    saved = {key: os.environ.get(key) for key in QUIET_ENV}
    os.environ.update(QUIET_ENV)
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def _receiver(name: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Receiver]:
    if not installed(name):
        _missing(f"receiver {PINS[name]} is not installed: python -m tests.receivers.install {name}")
    receiver = STARTERS[name](tmp_path_factory.mktemp(name))
    try:
        yield receiver
    finally:
        receiver.stop()


@pytest.fixture(scope="session")
def mlflow_receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Receiver]:
    """MLflow's tracking server, started once for the session on 127.0.0.1."""
    need("mlflow")
    yield from _receiver("mlflow", tmp_path_factory)


@pytest.fixture(scope="session")
def phoenix_receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Receiver]:
    """Arize Phoenix, started once for the session on 127.0.0.1."""
    yield from _receiver("phoenix", tmp_path_factory)


@pytest.fixture(params=sorted(PINS))
def receiver(request: pytest.FixtureRequest) -> Receiver:
    """Each receiver in turn (the test runs once per receiver)."""
    return request.getfixturevalue(f"{request.param}_receiver")  # type: ignore[no-any-return]


def local_spark(master: str, scratch: Path, *, unix_sockets: bool = True) -> Iterator[Any]:
    """A local-mode SparkSession on ``master`` (no UI nor progress bars, bound to 127.0.0.1, session time
    zone UTC, its files in ``scratch``, its Python sockets Unix ones unless ``unix_sockets=False``: Spark's
    default, TCP ports of 127.0.0.1), stopped after (the body of a fixture)."""
    need("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        _missing("Spark needs a Java runtime (apt-get install default-jre-headless)")
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # the driver binds to loopback only
    os.environ["PYSPARK_PYTHON"] = sys.executable  # the executors' Python: this one, with nbagent and the tests
    paths = [str(ROOT / "src"), str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    earlier = SparkSession.getActiveSession()
    if earlier is not None:  # getOrCreate would hand back another module's session, its master and settings
        earlier.stop()
    session = (
        SparkSession.builder.master(master)
        .appName("nbagent-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1")
        # The JVM serves each collect()'s rows on a socket that takes one connection, and closes once one has
        # come in, even one that fails its authentication. On a port of 127.0.0.1 (one from the ephemeral
        # range, got by binding port 0) another process's stray connection can take it: a kernel's ZMQ
        # sockets reconnect to ports jupyter_client picked the same way, which the kernel may not hold yet.
        # Two full runs side by side failed so (Connection refused, then Connection reset by peer). Unix
        # sockets have no port to stray to.
        .config("spark.python.unix.domain.socket.enabled", "true" if unix_sockets else "false")
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


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A local-mode SparkSession (``local[2]``), one a module (tests/spark/'s modules, which run on the same worker,
    start their own, ``local[2,4]``, in the same JVM: a session kept for the whole worker was handed back to
    them, workers without nbagent)."""
    yield from local_spark("local[2]", tmp_path_factory.mktemp("spark"))


@pytest.fixture(scope="session")
def polars() -> ModuleType:
    """The polars module."""
    return need("polars")
