"""Every code block of the README runs as it is: each Python block alone, as a script and in a kernel.

A block is self-contained: it runs in a fresh process (a script whose top-level ``await`` runs in
``asyncio.run``, as ``python -m asyncio`` does) and in a fresh notebook kernel, in an empty folder,
offline. The SQL block runs in DuckDB on what the Traces block wrote; the set-up block is the
command ``.ci/run`` runs.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ._kernel import OFFLINE_ENV, ROOT, error_outputs, execute, leftover_tasks, output_text

README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"^```(\w+)\n(.*?)^```$", README, flags=re.S | re.M)
PYTHON = [code for lang, code in BLOCKS if lang == "python"]
SQL = [code for lang, code in BLOCKS if lang == "sql"]

# Runs a block with top-level await as a script does inside asyncio.run.
RUNNER = textwrap.dedent(
    """
    import ast, asyncio, sys, types
    source = open(sys.argv[1], encoding="utf-8").read()
    code = compile(source, "README block", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    namespace = {"__name__": "__main__"}
    result = eval(code, namespace)
    if isinstance(result, types.CoroutineType):
        asyncio.run(result)
    """
)

# What each block prints that shows it did what its text says.
EXPECTED = {
    "A first run": [
        "TextMessage What is 2 + 3?",
        "ToolCallRequestEvent [FunctionCall(id='c1', name='add', arguments='{\"a\": 2, \"b\": 3}')]",
        "ToolCallExecutionEvent [FunctionExecutionResult(content='5', name='add', call_id='c1', is_error=False)]",
        "TextMessage 2 + 3 = 5",
    ],
    "Step through the loop": ["1 add_messages _add_messages_to_context"],
    "Traces": ["True"],
    "Models": [],
    "Many runs": ["20"],
    "Experiments": [
        "{'terse': 0.75, 'careful': 1.0}",
        "delta +0.25, only careful passed: 10, only terse: 0, p = 0.0020",
        "40",
    ],
    "AutoGen's own agents and teams": ["Hello from AutoGen."],
    "Cassettes": ["Hello!"],
    "Replay, fork and compare": ["[False, False, False, False, True, True]", "True"],
}


def _title(code: str) -> str:
    before = README[: README.index(code)]
    heading = re.findall(r"^#+ (.*)$|^\*\*(\w+)\*\*", before, flags=re.M)[-1]
    return heading[0] or heading[1]


def test_the_readme_has_the_blocks_this_test_knows() -> None:
    assert sorted(_title(code) for code in PYTHON) == sorted(EXPECTED)
    assert len(SQL) == 1


def test_the_setup_block_is_what_ci_runs() -> None:
    """``.ci/run`` runs the README's test command: whole on one line, or its install (the venv, pip) as one
    command line and its pytest as a later one (lint, types and the other tiers' set-up between, in that venv)."""
    setup = next(code for lang, code in BLOCKS if lang == "bash")
    test_command = [line for line in setup.splitlines() if line.endswith("-m pytest")]
    assert test_command
    *parts, pytest_run = test_command[0].split(" && ")
    install = " && ".join(parts)
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines() if not line.lstrip().startswith("#")]
    in_two = install in ci and pytest_run in ci and ci.index(install) < ci.index(pytest_run)
    assert test_command[0] in ci or in_two, f".ci/run does not run {test_command[0]!r}"


@pytest.mark.parametrize("code", PYTHON, ids=_title)
@pytest.mark.subprocess
def test_block_runs_as_a_script(code: str, tmp_path: Path) -> None:
    (tmp_path / "block.py").write_text(code, encoding="utf-8")
    (tmp_path / "runner.py").write_text(RUNNER, encoding="utf-8")
    env = {"PATH": "/usr/bin:/bin", **OFFLINE_ENV}
    done = subprocess.run(
        [sys.executable, "runner.py", "block.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for line in EXPECTED[_title(code)]:
        assert line in done.stdout.splitlines()


@pytest.mark.kernel
@pytest.mark.parametrize("code", PYTHON, ids=_title)
def test_block_runs_in_a_kernel(code: str, tmp_path: Path, kernels_dir: Path) -> None:
    import nbformat

    path = tmp_path / "block.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)]), path)
    nb = execute(path, kernels_dir)
    assert error_outputs(nb) == []
    assert leftover_tasks(nb) == "leftover tasks: []"
    printed = output_text(nb).splitlines()
    for line in EXPECTED[_title(code)]:
        assert line in printed


@pytest.mark.subprocess
def test_the_sql_block_runs_on_what_the_traces_block_wrote(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    traces = next(code for code in PYTHON if _title(code) == "Traces")
    (tmp_path / "block.py").write_text(traces, encoding="utf-8")
    (tmp_path / "runner.py").write_text(RUNNER, encoding="utf-8")
    subprocess.run(
        [sys.executable, "runner.py", "block.py"], cwd=tmp_path, check=True, capture_output=True, timeout=120
    )
    rows = duckdb.connect().execute(SQL[0].replace("'traces/", f"'{tmp_path}/traces/")).fetchall()
    assert [(agent, runs, sessions) for agent, runs, sessions, _ in rows] == [("assistant", 1, 1), ("other", 1, 1)]
