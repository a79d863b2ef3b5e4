"""The suite's tiers (tests/conftest.py): sub-markers imply ``slow``, a test not marked ``slow`` cannot start a
child process, and a missing optional dependency is a skip with its reason, not a failure."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.conftest import (
    GUARD,
    PRODUCT,
    SUB_MARKERS,
    ChildProcessStarted,
    missing_optional,
    pytest_cmdline_main,
    wholly_slow,
)


async def test_the_guard_refuses_every_way_to_start_a_child_process(request: pytest.FixtureRequest) -> None:
    assert GUARD.armed_for == request.node.nodeid  # this test is not slow
    try:
        with pytest.raises(ChildProcessStarted, match=r"test_tiers.py::.* is not marked slow .*subprocess.Popen"):
            subprocess.run(["true"], check=False)
        with pytest.raises(ChildProcessStarted, match=r"subprocess.Popen\(\('true',\)\)"):
            await asyncio.create_subprocess_exec("true")
        with pytest.raises(ChildProcessStarted, match=r"multiprocessing Process.start"):
            multiprocessing.get_context("spawn").Process(target=print).start()
        with pytest.raises(ChildProcessStarted, match=r"os.system\('true'\)"):
            os.system("true")
        with pytest.raises(ChildProcessStarted, match=r"os.fork"):
            os.fork()
        assert len(GUARD.attempts) == 5 and "@pytest.mark.slow" in GUARD.attempts[0]
    finally:
        GUARD.attempts.clear()  # refused on purpose: the test does not fail for them


@pytest.mark.slow
def test_a_slow_test_starts_child_processes_freely() -> None:
    assert GUARD.armed_for is None
    assert subprocess.run(["true"], check=False).returncode == 0


@pytest.mark.parametrize("marker", SUB_MARKERS)
def test_every_sub_marker_is_registered_and_implies_slow(marker: str, request: pytest.FixtureRequest) -> None:
    registered = {line.split(":", 1)[0] for line in request.config.getini("markers")}
    assert {"slow", marker} <= registered
    marked = [item for item in request.session.items if item.get_closest_marker(marker)]
    assert all(item.get_closest_marker("slow") for item in marked)


def test_a_missing_optional_module_is_a_skip_with_its_extra_and_anything_else_is_not() -> None:
    assert missing_optional(ModuleNotFoundError("No module named 'duckdb'", name="duckdb")) == (
        "needs duckdb, which the test extra installs: pip install -e '.[test]'"
    )
    assert missing_optional(ModuleNotFoundError("No module named 'pandas'", name="pandas")) is None  # a core one
    assert missing_optional(ValueError("duckdb")) is None
    hint = ImportError("Parquet files need pyarrow: pip install 'nbagent-loop[parquet]'")
    assert missing_optional(hint) == f"an optional feature: {hint}"


def test_an_optional_module_missing_inside_nbagent_is_not_skipped() -> None:
    """The plain install must work without its extras: an import error raised in nbagent's own code fails."""
    code = compile(
        "raise ModuleNotFoundError(\"No module named 'duckdb'\", name='duckdb')", str(PRODUCT / "x.py"), "exec"
    )
    with pytest.raises(ModuleNotFoundError) as raised:
        exec(code, {})
    assert missing_optional(raised.value) is None


def fast_tier_config(*args: str, xdist: bool = True, **option: object) -> SimpleNamespace:
    """What ``pytest_cmdline_main`` reads of a config: the command line, ``-m``, the options, the xdist plugin."""
    return SimpleNamespace(
        invocation_params=SimpleNamespace(args=args),
        option=SimpleNamespace(markexpr="not  slow", numprocesses=4, **option),
        pluginmanager=SimpleNamespace(has_plugin=lambda name: xdist),
    )


@pytest.mark.parametrize(
    ("args", "addopts", "option", "expected"),
    [
        (("-m", "not slow"), "", {}, 3),  # FAST_TIER_WORKERS: three on the 2-core machine
        (("-m", "not slow", "-n", "2"), "", {}, 4),  # the command line's (xdist parses it later)
        (("-m", "not slow", "-n0"), "", {}, 4),
        (("-m", "not slow", "--numprocesses=auto"), "", {}, 4),
        (("-m", "not slow", "-nauto"), "", {}, 4),
        (("-m", "not slow"), "-n 2", {}, 4),  # PYTEST_ADDOPTS's
        (("-m", "not slow", "--pdb"), "", {"usepdb": True}, 0),  # xdist refuses --pdb and --trace
        (("-m", "not slow", "--trace"), "", {"trace": True}, 0),
    ],
)
def test_the_fast_tier_runs_on_its_workers_unless_told_otherwise(
    monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...], addopts: str, option: dict[str, object], expected: int
) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.setenv("PYTEST_ADDOPTS", addopts)
    config = fast_tier_config(*args, **option)
    pytest_cmdline_main(config)  # type: ignore[arg-type]
    assert config.option.numprocesses == expected


def test_a_worker_and_a_run_without_xdist_are_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker given workers would start its own, each of them theirs, without end; without xdist (a core-only
    install) there is one process and nothing to set."""
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    worker = fast_tier_config("-m", "not slow")
    worker.option.numprocesses = None  # as xdist leaves it in a worker (the hook must not set it, to 0 or more)
    pytest_cmdline_main(worker)  # type: ignore[arg-type]
    assert worker.option.numprocesses is None
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    plain = fast_tier_config("-m", "not slow", xdist=False)
    pytest_cmdline_main(plain)  # type: ignore[arg-type]
    assert plain.option.numprocesses == 4  # untouched: pytest alone never reads it


@pytest.mark.parametrize(
    ("source", "slow"),
    [
        ("pytestmark = pytest.mark.kernel\n", True),
        ("pytestmark = [pytest.mark.timeout(120), pytest.mark.mcp]\n", True),
        ("pytestmark = (pytest.mark.slow,)\n", True),
        ("pytestmark = pytest.mark.filterwarnings('ignore')\n", False),
        ("pytestmark = pytest.mark.kernel\npytestmark = []\n", False),  # the last assignment counts
        ("pytestmark = [pytest.mark.kernel]\npytestmark += [pytest.mark.timeout(5)]\n", False),
        ("pytestmark: list = [pytest.mark.kernel]\n", False),
        ("def test_a():\n    pytestmark = pytest.mark.kernel\n", False),  # not the module's
        ("pytestmark = pytest.mark.kernel\ndef broken(:\n", False),  # collected: pytest says what is wrong
        ("import pytest\n", False),
    ],
)
def test_a_file_is_left_out_of_the_fast_tier_only_when_its_module_mark_says_slow(
    source: str, slow: bool, tmp_path: Path
) -> None:
    path = tmp_path / "test_x.py"
    path.write_text(source, encoding="utf-8")
    assert wholly_slow(path) is slow
