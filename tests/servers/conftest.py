"""The ``realserver`` tier: every test here talks to a real server process on 127.0.0.1.

A missing llama-server binary, model or chat template skips the llama.cpp tests on a developer's
machine (the skip says how to build them: ``tests/servers/build_llama_server.sh``) and FAILS them in
CI (``CI`` set), where ``.ci/run`` builds them first.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from .realservers import Running, fakellm_server, llama_server, missing, reset_fakellm


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.realserver)


def require_llama(tools: bool = False) -> None:
    lacking = missing(tools)
    if not lacking:
        return
    how = "build them with tests/servers/build_llama_server.sh (about 7-12 minutes on 2 cores, once per machine)"
    if os.environ.get("CI"):
        pytest.fail(f"realserver tier: {'; '.join(lacking)}: {how}", pytrace=False)
    pytest.skip(f"{'; '.join(lacking)}: {how}")


@pytest.fixture(scope="session")
def server_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("server-logs")


@pytest.fixture(scope="session")
def llama(server_logs: Path) -> Iterator[Running]:
    """One llama-server for the session (the tests that kill a server start their own)."""
    require_llama()
    with llama_server(server_logs) as running:
        yield running


@pytest.fixture(scope="session")
def llama_tools(server_logs: Path) -> Iterator[Running]:
    """One llama-server on the Qwen2.5 chat template for the session: the model can call tools."""
    require_llama(tools=True)
    with llama_server(server_logs, tools=True) as running:
        yield running


@pytest.fixture(scope="session")
def fakellm_session(server_logs: Path) -> Iterator[Running]:
    with fakellm_server(server_logs) as running:
        yield running


@pytest.fixture
def fakellm(fakellm_session: Running) -> Running:
    reset_fakellm(fakellm_session)
    return fakellm_session
