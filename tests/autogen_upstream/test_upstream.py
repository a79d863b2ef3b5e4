"""The slow tier of issue 40.5: AutoGen 0.7.5's own tests against nbagent, through the shim.

The files of :data:`run.FILES` run in one pytest process for each folder, shim mode and key
(``run.run_files``, run when the first of its files' tests needs it); what fails in each file must be one
of the failures ``expected.json`` lists for it, each with a reason that docs/contract.md explains
("AutoGen's own tests against nbagent"), and at least as many tests as listed must pass. The source
distributions come from the package index (pip), once, into ``~/.cache/nbagent``.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.autogen_upstream import run

TIMEOUT_S = 1200
"""Each pytest process's hang guard."""
DOWNLOAD_S = 2400
"""The first test's allowance for the downloads and installs of ``run.sources`` and ``run.extras`` (600 s each)."""

EXPECTED = json.loads((Path(__file__).parent / "expected.json").read_text(encoding="utf-8"))
CONTRACT = (Path(__file__).parents[2] / "docs" / "contract.md").read_text(encoding="utf-8")


def test_every_reason_is_explained_in_the_contract() -> None:
    for reason in EXPECTED["reasons"]:
        assert f"`{reason}`" in CONTRACT, reason


RUN: dict[tuple[str, str, bool], dict[str, dict[str, object]]] = {}
"""The counts of each pytest process run (``run.together``), run when its first file's test needs it."""


def counts(name: str) -> dict[str, object]:
    """File ``name``'s counts, from the run of the files it shares a process with (run once)."""
    shared = run.together(name)
    if shared not in RUN:
        RUN[shared] = run.run_files(sorted(n for n in run.FILES if run.together(n) == shared), timeout=TIMEOUT_S)
    return RUN[shared][name]


@pytest.mark.slow
@pytest.mark.timeout(TIMEOUT_S + DOWNLOAD_S)  # the first of a process's files runs them all
@pytest.mark.parametrize("name", sorted(run.FILES))
def test_autogens_own_tests_pass_but_for_the_listed_failures(name: str) -> None:
    expected = EXPECTED["files"][name]
    result = counts(name)
    if "cannot_run" in result:
        pytest.skip(f"{name}: {result['cannot_run']}")
    assert not result.get("timeout"), f"{name}'s pytest process did not finish in {TIMEOUT_S} s: {result['output']}"
    assert not result.get("crashed"), f"{name}'s pytest process crashed ({result['crashed']}): {result['output']}"
    failing = {line.split(": ", 1)[0] for line in result.get("failing", [])}  # type: ignore[union-attr]
    unlisted = sorted(failing - set(expected["known"]))
    assert unlisted == [], f"{name}: failures docs/contract.md does not list"
    assert int(result.get("passed", 0)) >= expected["passed"]  # type: ignore[call-overload]
    assert all(reason in EXPECTED["reasons"] for reason in expected["known"].values())


def test_a_report_case_is_counted_for_the_file_of_its_module() -> None:
    stems = {"test_memory": "autogen-core/test_memory.py", "test_tools": "autogen-core/test_tools.py"}
    assert run.file_of("test_memory.TestMemory", "test_query", stems) == "autogen-core/test_memory.py"
    assert run.file_of("test_tools", "test_func_tool", stems) == "autogen-core/test_tools.py"
    # a file that failed to collect: no class name, the module as the case's name
    assert run.file_of("", "test_tools", stems) == "autogen-core/test_tools.py"
    assert run.file_of("test_other", "test_x", stems) is None
    assert run.file_of("pytest", "internal", stems) is None  # pytest's own internal error


def test_a_case_of_no_file_is_an_error_of_every_file_of_the_process() -> None:
    stems = {"test_memory": "autogen-core/test_memory.py", "test_tools": "autogen-core/test_tools.py"}
    results: dict[str, dict[str, object]] = {
        name: {"passed": 0, "failed": 0, "errors": 0, "skipped": 0, "failing": []} for name in stems.values()
    }
    report = ET.fromstring(
        '<testsuite><testcase classname="test_memory" name="test_a"/>'
        '<testcase classname="test_tools.TestT" name="test_b[x.y]"><failure message="boom"/></testcase>'
        '<testcase classname="pytest" name="internal"><error message="internal error"/></testcase>'
        '<testcase classname="test_gone" name="test_c"/></testsuite>'  # a pass of no file: not counted as a pass
    )
    run.count_cases(report.iter("testcase"), stems, results)
    memory, tools = results["autogen-core/test_memory.py"], results["autogen-core/test_tools.py"]
    assert (memory["passed"], memory["failed"], memory["errors"]) == (1, 0, 2)
    assert (tools["passed"], tools["failed"], tools["errors"]) == (0, 1, 2)
    unowned = ["pytest::internal: internal error", "test_gone::test_c: passed, of no file run"]
    assert tools["failing"] == ["test_tools.TestT::test_b[x.y]: boom", *unowned]
    assert memory["failing"] == unowned


def test_files_share_a_process_only_with_their_folder_mode_and_key() -> None:
    shared: dict[tuple[str, str, bool], list[str]] = {}
    for name in run.FILES:
        shared.setdefault(run.together(name), []).append(name)
    for (folder, mode, keyless), names in shared.items():
        assert {str(Path(name).parent) for name in names} == {folder}
        assert {run.FILES[name][1] for name in names} == {mode}
        assert {name in run.NO_KEY for name in names} == {keyless}
    assert len(shared) < len(run.FILES)
