"""``python -m nbagent``: the headless demo and the JupyterLab launcher."""

from __future__ import annotations

import hashlib
import io
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from nbagent import __main__ as cli
from nbagent.messages import TextMessage
from nbagent.models import ReplayChatCompletionClient
from tests.ports import free_port

from ._kernel import ROOT

DEMO_LINES = [
    "-- STEP 1: New messages into model_context  [_add_messages_to_context]",
    "-- STEP 2: Query memory  skipped: the agent has no memory (memory=None)",
    "-- STEP 3: Make a message id  [_run_steps]",
    "-- STEP 4: Call the LLM  [_call_llm]",
    "   LLM call (initial), 2 messages, 2 tools",
    "-- STEP 5: Tool calls requested  [_process_model_result]",
    '   ToolCallRequestEvent  get_weather({"city": "Paris"}); get_weather({"city": "Tokyo"})',
    "-- STEP 5: Run the tools  [_execute_tool_calls]",
    '   tool call get_weather({"city": "Paris"})',
    '   tool call get_weather({"city": "Tokyo"})',
    "   ToolCallExecutionEvent  get_weather -> 12 C, cloudy; get_weather -> 18 C, sunny",
    "-- STEP 5: Call the LLM again with the results  [_call_llm]",
    "   LLM call (tool_loop), 4 messages, 2 tools",
    "-- STEP 5: Tool calls requested  [_process_model_result]",
    '   ToolCallRequestEvent  subtract({"a": 18, "b": 12})',
    "-- STEP 5: Run the tools  [_execute_tool_calls]",
    '   tool call subtract({"a": 18, "b": 12})',
    "   ToolCallExecutionEvent  subtract -> 6.0",
    "-- STEP 5: Call the LLM again with the results  [_call_llm]",
    "   LLM call (tool_loop), 6 messages, 2 tools",
    "-- STEP 5: Text: the final answer  [_text_exit]",
    "   Response: TextMessage  Paris has 12 C and clouds, Tokyo 18 C and sun: Tokyo is 6 degrees warmer.",
    "run finished  status=ok",
]


async def test_demo_prints_every_move_and_event_in_order() -> None:
    out = io.StringIO()
    agent = await cli.demo(out)
    lines = out.getvalue().splitlines()
    start = lines.index(f"run started  agent=assistant  task={cli.SCRIPTED_TASK}")
    assert lines[start + 1 : start + 1 + len(DEMO_LINES)] == DEMO_LINES
    assert lines[0] == "nbagent demo: offline, on the replay model (no network, no API key)"
    assert isinstance(agent.model_client, ReplayChatCompletionClient) and agent.model_client.remaining == 0


async def test_demo_prints_the_dataframes() -> None:
    out = io.StringIO()
    agent = await cli.demo(out)
    text = out.getvalue()
    titles = [
        "agent.context_df()",
        "agent.trace.llm_calls_df()",
        "agent.trace.tool_calls_df()",
        "agent.trace.summary()",
    ]
    positions = [text.index(f"\n{title}\n") for title in titles]
    assert positions == sorted(positions)
    assert len(agent.context_df()) == 6
    summary_lines = text[positions[-1] :].split("\n")[2:]
    assert [line.split() for line in summary_lines if line] == [
        ["runs", "1"],
        ["llm_calls", "3"],
        ["prompt_tokens", "250"],
        ["completion_tokens", "69"],
        ["tool_calls", "3"],
        ["tool_errors", "0"],
    ]


def test_describe_a_user_message() -> None:
    assert cli.describe(TextMessage(content="hi   there", source="user")) == "   TextMessage  hi there"


@pytest.mark.subprocess
def test_python_m_nbagent_demo_runs_offline() -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(ROOT), "OPENAI_API_KEY": "", "NBAGENT_BASE_URL": ""}
    done = subprocess.run(
        [sys.executable, "-m", "nbagent", "demo"], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert DEMO_LINES[-2] in done.stdout.splitlines()
    assert "agent.trace.tool_calls_df()" in done.stdout


def test_lab_opens_jupyterlab_on_the_walkthrough(monkeypatch: pytest.MonkeyPatch) -> None:
    launched: list[tuple[str, list[str]]] = []
    environments: list[dict[str, str]] = []

    def execve(path: str, argv: list[str], env: dict[str, str]) -> None:
        launched.append((path, list(argv)))
        environments.append(env)

    monkeypatch.setattr(cli.os, "execve", execve)
    cli.main(["lab", "--port", "8899", "--no-browser", "--", "--allow-root"])
    folder = ROOT / "notebooks"
    assert cli.notebooks_dir() == folder
    assert launched == [
        (
            sys.executable,
            [
                sys.executable,
                "-m",
                "jupyterlab",
                f"--ServerApp.root_dir={folder}",
                f"--LabApp.default_url=/lab/tree/{cli.WALKTHROUGH}",
                "--ContentsManager.pre_save_hook=nbagent.__main__.save_without_outputs",
                "--ContentsManager.post_save_hook=nbagent.__main__.after_save",
                "--ServerApp.port=8899",
                "--no-browser",
                "--allow-root",
            ],
        )
    ]
    # The server's save hooks learn which shipped notebooks it serves, with their content's hashes.
    assert set(json.loads(environments[0][cli.MANIFEST_VARIABLE])["notebooks"]) == cli.SHIPPED


def test_lab_as_root_allows_root_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    """JupyterLab refuses to run as root; the README's one command must work on a root machine."""
    launched: list[list[str]] = []
    monkeypatch.setattr(cli.os, "execve", lambda path, argv, env: launched.append(list(argv)))
    monkeypatch.setattr(cli.os, "geteuid", lambda: 0)
    cli.main(["lab", "--no-browser"])
    monkeypatch.setattr(cli.os, "geteuid", lambda: 1000)
    cli.main(["lab", "--no-browser"])
    assert [argv.count("--allow-root") for argv in launched] == [1, 0]


@pytest.mark.timeout(120)
@pytest.mark.subprocess
def test_python_m_nbagent_lab_serves_the_walkthrough(tmp_path: Path) -> None:
    """A real JupyterLab starts (offline) with the notebooks folder as its root and the walkthrough in it."""
    port, token = free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_DATA_DIR": str(tmp_path / "data"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
    }
    command = [sys.executable, "-m", "nbagent", "lab", "--port", str(port), "--no-browser", "--",
               "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}"]  # fmt: skip
    server = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    url = f"http://127.0.0.1:{port}/api/contents/{cli.WALKTHROUGH}?content=0&token={token}"
    try:
        deadline = time.monotonic() + 90
        while True:
            assert server.poll() is None, server.stderr.read().decode()[-2000:] if server.stderr else ""
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    model = json.load(response)
                break
            except (urllib.error.URLError, ConnectionError):
                assert time.monotonic() < deadline, "JupyterLab did not answer within 90 s"
                time.sleep(0.5)
        assert (model["name"], model["path"], model["type"]) == (cli.WALKTHROUGH, cli.WALKTHROUGH, "notebook")
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    # The URL it prints for the user opens the walkthrough, not the Launcher.
    printed = server.stderr.read().decode() if server.stderr else ""
    assert f"http://127.0.0.1:{port}/lab/tree/{cli.WALKTHROUGH}?token=" in printed


def test_lab_without_the_walkthrough_says_how_to_get_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["lab", "--dir", str(tmp_path)]) == 2
    assert f"02_walkthrough_steps_1_5.ipynb not found in --dir {tmp_path};" in capsys.readouterr().err


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main([])
    assert exit_info.value.code == 2
    assert "demo" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--help"], ["lab", "--help"], ["demo", "--help"]])
def test_help_is_plain_text_and_documents_every_option(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert "``" not in text and "`" not in text  # no reStructuredText markup from a docstring
    if argv[0] == "lab":
        for option in ("--port PORT", "--no-browser", "--dir DIR"):
            line = next(line for line in text.splitlines() if line.strip().startswith(option))
            assert len(line.strip()) > len(option) + 5, f"{option} has no help: {line!r}"


@pytest.mark.timeout(150)
@pytest.mark.subprocess
def test_running_the_shipped_notebooks_in_lab_rewrites_no_tracked_file(tmp_path: Path) -> None:
    """JupyterLab saves what it ran (outputs, widget state, kernel metadata): under `nbagent lab` a shipped
    notebook is saved as the repository keeps it, byte for byte; any other notebook keeps its outputs."""
    folder = tmp_path / "notebooks"
    folder.mkdir()
    shipped = (ROOT / "notebooks" / cli.WALKTHROUGH).read_bytes()
    (folder / cli.WALKTHROUGH).write_bytes(shipped)
    port, token = free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_DATA_DIR": str(tmp_path / "data"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
    }
    command = [sys.executable, "-m", "nbagent", "lab", "--dir", str(folder), "--port", str(port), "--no-browser",
               "--", "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}"]  # fmt: skip
    server = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    base = f"http://127.0.0.1:{port}/api/contents"
    headers = {"Authorization": f"token {token}", "Content-Type": "application/json"}

    def call(method: str, name: str, body: dict[str, object] | None = None) -> dict[str, object]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{base}/{name}", data=data, method=method, headers=headers)
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)  # type: ignore[no-any-return]

    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                model = call("GET", cli.WALKTHROUGH)
                break
            except (urllib.error.URLError, ConnectionError):
                assert server.poll() is None and time.monotonic() < deadline, "JupyterLab did not answer"
                time.sleep(0.5)
        notebook: dict[str, Any] = model["content"]  # type: ignore[assignment]
        # What running it in Lab leaves in the model Lab saves:
        for count, cell in enumerate(c for c in notebook["cells"] if c["cell_type"] == "code"):
            cell["execution_count"] = count + 1
            cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "ran\n"}]
            cell["metadata"]["execution"] = {"iopub.status.idle": "2026-12-01T22:00:00.000Z"}
        notebook["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
        notebook["metadata"]["language_info"] = {"name": "python", "version": "3.11.7", "mimetype": "text/x-python"}
        call("PUT", cli.WALKTHROUGH, {"type": "notebook", "format": "json", "content": notebook})
        call("PUT", "Untitled.ipynb", {"type": "notebook", "format": "json", "content": notebook})
        unchanged = (folder / cli.WALKTHROUGH).read_bytes()
        # An edit to a cell is saved, and the edited notebook is still the shipped one on its next save.
        notebook["cells"][0]["source"] = "# edited\n"
        call("PUT", cli.WALKTHROUGH, {"type": "notebook", "format": "json", "content": notebook})
        call("PUT", cli.WALKTHROUGH, {"type": "notebook", "format": "json", "content": notebook})
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    assert unchanged == shipped
    edited = json.loads((folder / cli.WALKTHROUGH).read_text())
    assert "".join(edited["cells"][0]["source"]) == "# edited\n" and "widgets" not in edited["metadata"]
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in edited["cells"])
    mine = json.loads((folder / "Untitled.ipynb").read_text())
    assert mine["cells"][1]["outputs"] and "widgets" in mine["metadata"]


def _saved(name: str, root: Path) -> dict[str, Any]:
    """A notebook's content as the save hook leaves it, saved as ``name`` in a server serving ``root``."""
    content = {
        "cells": [{"cell_type": "code", "source": "1", "metadata": {}, "outputs": [{"output_type": "stream"}],
                   "execution_count": 1}],
        "metadata": {"widgets": {"state": {}}},
    }  # fmt: skip
    model = {"type": "notebook", "content": content}
    cli.save_without_outputs(model, name, contents_manager=SimpleNamespace(root_dir=str(root)))
    return content


def _stripped(content: dict[str, Any]) -> bool:
    return content["cells"][0]["outputs"] == [] and "widgets" not in content["metadata"]


def test_only_the_shipped_notebooks_nbagent_lab_laid_out_are_saved_without_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """By path in the folder served and by content, never by a bare name, never through a symlink."""
    assert {path.name for path in (ROOT / "notebooks").glob("*.ipynb")} == cli.SHIPPED
    shipped = {name: (ROOT / "notebooks" / name).read_bytes() for name in cli.SHIPPED}
    folder, outside = tmp_path / "mine", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    (folder / cli.WALKTHROUGH).write_bytes(shipped[cli.WALKTHROUGH])  # a copy of the shipped one
    (folder / "04_trace_analysis.ipynb").write_text('{"cells": [], "metadata": {"mine": 1}}')  # the user's own
    (outside / "01_quickstart.ipynb").write_bytes(shipped["01_quickstart.ipynb"])
    (folder / "01_quickstart.ipynb").symlink_to(outside / "01_quickstart.ipynb")  # a symlink with a shipped name
    (folder / "sub").mkdir()
    (folder / "sub" / "03_tool_loop_lab.ipynb").write_bytes(shipped["03_tool_loop_lab.ipynb"])  # not at its path
    manifest = cli.shipped_manifest(folder)
    assert manifest["notebooks"] == {cli.WALKTHROUGH: hashlib.sha256(shipped[cli.WALKTHROUGH]).hexdigest()}
    monkeypatch.setenv(cli.MANIFEST_VARIABLE, json.dumps(manifest))

    assert _stripped(_saved(cli.WALKTHROUGH, folder))
    for mine in ("04_trace_analysis.ipynb", "01_quickstart.ipynb", "sub/03_tool_loop_lab.ipynb", "08_mine.ipynb"):
        assert not _stripped(_saved(mine, folder)), mine
    assert not _stripped(_saved(cli.WALKTHROUGH, tmp_path))  # another folder served: not the copy laid out
    assert (outside / "01_quickstart.ipynb").read_bytes() == shipped["01_quickstart.ipynb"]

    # After a save as shipped, the saved file is known by its new content (post-save hook).
    (folder / cli.WALKTHROUGH).write_text('{"cells": [], "metadata": {"edited": true}}')
    cli.after_save({}, str(folder / cli.WALKTHROUGH), contents_manager=None)
    assert _stripped(_saved(cli.WALKTHROUGH, folder))
    # A user's notebook renamed to the shipped name keeps its outputs.
    (folder / cli.WALKTHROUGH).unlink()
    (folder / "04_trace_analysis.ipynb").rename(folder / cli.WALKTHROUGH)
    assert not _stripped(_saved(cli.WALKTHROUGH, folder))


def test_without_nbagent_lab_nothing_is_stripped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(cli.MANIFEST_VARIABLE, raising=False)
    assert not _stripped(_saved(cli.WALKTHROUGH, ROOT / "notebooks"))
    monkeypatch.setenv(cli.MANIFEST_VARIABLE, "not json")
    assert not _stripped(_saved(cli.WALKTHROUGH, ROOT / "notebooks"))


def test_lab_on_the_checkout_lists_every_shipped_notebook() -> None:
    manifest = cli.shipped_manifest(ROOT / "notebooks")
    assert manifest["root"] == str((ROOT / "notebooks").resolve())
    assert set(manifest["notebooks"]) == cli.SHIPPED


def test_every_cell_of_a_shipped_notebook_has_an_id() -> None:
    """JupyterLab gives a cell without an ``id`` one when it saves (nbformat 4.5), so a shipped notebook with
    such a cell is rewritten by its first save under `nbagent lab` (the walkthrough's exercise cells had none:
    test_running_the_shipped_notebooks_in_lab_rewrites_no_tracked_file failed in CI)."""
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        text = path.read_text(encoding="utf-8")
        cells = json.loads(text)["cells"]
        # and as Lab writes it: keys sorted, one space of indent
        assert json.dumps(json.loads(text), indent=1, ensure_ascii=False, sort_keys=True) + "\n" == text, path.name
        assert [index for index, cell in enumerate(cells) if "id" not in cell] == [], path.name
        assert len({cell["id"] for cell in cells}) == len(cells), path.name
