"""The slow tier of issue 40.5: AutoGen 0.7.5's own tests against nbagent, through the shim.

The files of :data:`run.FILES` run in one pytest process for each folder, shim mode and key
(``run.run_files``, once for the module); what fails in each file must be one of the failures ``expected.json``
lists for it, each with a reason that docs/contract.md explains ("AutoGen's own tests against nbagent"), and at
least as many tests as listed must pass. The source distributions come from the package index (pip), once,
into ``~/.cache/nbagent``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.autogen_upstream import run

TIMEOUT_S = 1200
"""Each pytest process's hang guard."""

EXPECTED = json.loads((Path(__file__).parent / "expected.json").read_text(encoding="utf-8"))
CONTRACT = (Path(__file__).parents[2] / "docs" / "contract.md").read_text(encoding="utf-8")


def test_every_reason_is_explained_in_the_contract() -> None:
    for reason in EXPECTED["reasons"]:
        assert f"`{reason}`" in CONTRACT, reason


@pytest.fixture(scope="module")
def results() -> dict[str, dict[str, object]]:
    """Every file's counts, from one run of them all."""
    return run.run_files(sorted(run.FILES), timeout=TIMEOUT_S)


@pytest.mark.slow
@pytest.mark.timeout(len({run.together(name) for name in run.FILES}) * TIMEOUT_S)  # the first runs them all
@pytest.mark.parametrize("name", sorted(run.FILES))
def test_autogens_own_tests_pass_but_for_the_listed_failures(name: str, results: dict[str, dict[str, object]]) -> None:
    expected = EXPECTED["files"][name]
    result = results[name]
    if "cannot_run" in result:
        pytest.skip(f"{name}: {result['cannot_run']}")
    assert not result.get("timeout"), f"{name}'s pytest process did not finish in {TIMEOUT_S} s"
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
    with pytest.raises(ValueError, match="test_other::test_x"):
        run.file_of("test_other", "test_x", stems)


def test_files_share_a_process_only_with_their_folder_mode_and_key() -> None:
    shared: dict[tuple[str, str, bool], list[str]] = {}
    for name in run.FILES:
        shared.setdefault(run.together(name), []).append(name)
    for (folder, mode, keyless), names in shared.items():
        assert {str(Path(name).parent) for name in names} == {folder}
        assert {run.FILES[name][1] for name in names} == {mode}
        assert {name in run.NO_KEY for name in names} == {keyless}
    assert len(shared) < len(run.FILES)
