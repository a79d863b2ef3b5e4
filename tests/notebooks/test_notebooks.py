"""Every notebook runs top to bottom in a real kernel, offline, in the README's first command's venv
(``binder_python``: ``-e .[lab]`` alone, as mybinder.org builds it too), and is committed without outputs."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ._kernel import NOTEBOOKS, ROOT, cell_outputs, error_outputs, execute, leftover_tasks, output_text

if TYPE_CHECKING:  # nbformat is imported where it is used: 3 s, paid by every worker collecting the file
    import nbformat

EXPECTED_NOTEBOOKS = [
    "01_quickstart.ipynb",
    "02_walkthrough_steps_1_5.ipynb",
    "02_walkthrough_steps_1_5.zh.ipynb",
    "03_tool_loop_lab.ipynb",
    "04_trace_analysis.ipynb",
    "05_live_models.ipynb",
    "06_batch_runs.ipynb",
    "07_autogen_teams.ipynb",
    "08_experiments.ipynb",
]

# Lines each notebook must print when it runs offline: the behaviour its text explains happened.
EXPECTED_OUTPUT = {
    "08_experiments.ipynb": [
        "brief: contains 0.68, words 3.7",
        "careful: contains 0.90, words 11.0",
        "contains: delta +0.22 [+0.08, +0.38], McNemar exact p = 0.0127",
        "only brief passed: 3 · only careful passed: 14",
        "careful lost: ['t13', 't23', 't43']",
        "{'parted_at': 4, 'parting_move': 'tool_request', 'parting': 'tool_arguments'}",
        "paused before: call_llm",
        "fork answered: I looked it up: it is 26 °C in Dakar today.",
        "the fork scored: {'contains': True, 'words': 11.0}",
        "{'mean_a': 0.0, 'mean_b': 1.0}",
    ],
    "01_quickstart.ipynb": [
        "model: replay",
        "It is sunny in Tokyo: 18 °C, which is 64.4 °F.",
        "get_weather, convert_to_fahrenheit",
        "convert_to_fahrenheit    {'celsius': 18}",
    ],
    "02_walkthrough_steps_1_5.ipynb": [
        "'Hi, I'm Ada.' is 2 times in the context the model sees",
        "the run failed: ModelConnectionError: the connection was reset",
        "context after the retry: Hi, I'm Ada. | Nice to meet you, Ada.",
        "['TextMessage', 'MemoryQueryEvent', 'TextMessage']",
        "1 memory system message in the context after two turns",
        "STEP 1: New messages into model_context  [_add_messages_to_context]",
        "STEP 2: Query memory  [_update_model_context_with_memory]\nevents: ['MemoryQueryEvent']",
        "STEP 3: Make a message id  [_run_steps]\nevents: []",
        "STEP 4: Call the LLM  [_call_llm, iteration 0]",
        "tools offered: ['get_weather'] | tool_choice: auto",
        "STEP 5: Reflect on the tool results  [_reflect_on_tool_use_flow, iteration 0]\nevents: ['Response']",
        "answer: It is 12 °C and cloudy in Paris: take a jacket.",
        "stepper: ready · 0 moves",
        "every chunk points at it:  True",
        "the chunks rebuild it:     True",
        "transfer_to_planner - Handoff to planner. - parameters: []",
        "['TextMessage', 'ToolCallRequestEvent', 'ToolCallExecutionEvent', 'ToolCallSummaryMessage']",
        "LLM calls: 3",
        "ValueError: AssistantAgent: max_tool_iterations must be an int greater than or equal to 1, got 0",
        "get_weather in the fork -> Error: the weather service is down",
        "the walk forked from is paused before: tool_execution",
        "the fork: The weather service is down, so I cannot check: take a jacket to be safe.",
        "the runs diverge at aligned move 6",
        "reflect_on_tool_use=False: 1 LLM call(s) -> ToolCallSummaryMessage: '18 °C, sunny'",
        "reflect_on_tool_use=True: 2 LLM call(s) -> TextMessage: 'It is sunny and 18 °C in Tokyo.'",
        "target: billing | content: Transferred to billing",
        "warning: Multiple handoffs detected.",
        "second run: AgentBusyError - agent 'assistant' is running",
        "context:    ['first task', 'first answer']",
        "['TextMessage', 'ThoughtEvent', 'ToolCallRequestEvent', 'ToolCallExecutionEvent', 'ToolCallSummaryMessage']",
        "ValueError: Tools cannot be used with a workbench.",
        'lookup_order({"order_id": "A17"}) -> {"order": "A17", "status": "shipped", "eta_days": 2}',
        "- get_weather done: 12 °C, cloudy",
        # issue 29: design point 1 with the limit reached, point 2's default running, the handoff's
        # context, and a HandoffMessage feeding AutoGen's Swarm of nbagent agents.
        "LLM calls: 2 | scripted answers never asked for: 1",
        "answer: ToolCallSummaryMessage '18 °C, sunny'",
        "reflect_on_tool_use defaults to True",
        "answer: Weather(city='Tokyo', celsius=18) | tool_choice of the reflection call: none",
        "  context: FunctionExecutionResultMessage [FunctionExecutionResult(content='12 °C, cloudy'",
        "---------- HandoffMessage (triage) ----------\nTransferred to billing",
        "---------- TextMessage (billing) ----------\nThe double charge is refunded. TERMINATE",
        "billing's context: ['UserMessage', 'AssistantMessage', 'FunctionExecutionResultMessage', 'UserMessage',",
    ],
    "03_tool_loop_lab.ipynb": [
        "slow: done after 0.6 s",
        "Error: tool 'teleport' not found in any workbench",
        "LLM calls: 3 | answer: results for 'attempt 3'",
        "LLM calls: 4 | tools offered in the last one: [] | tool_choice: none",
        "⚠ divide failed: Error: ZeroDivisionError: float division by zero",
        "still running: False",
        "Error: the run was cancelled before this tool call finished",
        "Hello again!",
        "response: None | view status: cancelled | agent running: False",
        "convert_time: Convert time between timezones ['source_timezone', 'target_timezone', 'time']",
        "T21:00:00+09:00 +9.0h",
        "is_error: True | Error executing tool get_current_time: Invalid timezone",
        "server running: False",
    ],
    "04_trace_analysis.ipynb": [
        "Trace(191 items, 12 runs)",
        "23 runs, 35 LLM calls, 23 tool calls, 277 events",
        "no weather station in Atlantis",
        "the prompt grew on 9 of 9 turns",
        # the run explorer: the weather runs asked about Atlantis, the selection's query printed
        "2 of 23 runs kept by: runs[runs[\"agent\"].isin(['weather']) & (runs[\"task\"].str.contains('atlantis'",
        "same runs as recorded: True",
        "dtypes kept over both sessions: True",
        "no OTLP receiver configured: set NBAGENT_OTLP_ENDPOINT (and NBAGENT_OTLP_HEADERS) to send the trace",
    ],
    "05_live_models.ipynb": [
        "mode: OFFLINE: recorded cassette and replay model, no network",
        "model: scripted-local-server | CassetteChatCompletionClient",
        "Paris has light rain at 18 °C, while Tokyo is sunny at 24 °C.",
        'the model called get_weather({"city": "Paris"}) -> Paris: 18 degrees, light rain',
        "answer: In Paris it is 18 degrees with light rain.",
        "answer: 6 times 7 is 42.",
        "2 model calls recorded in multiply.cassette.json",
        "same as recorded: True",
        "CassetteMismatchError: cassette multiply.cassette.json: request #1 differs from the recording",
        "This is nbagent's offline replay model",
    ],
    "06_batch_runs.ipynb": [
        "200 tasks: {'normal': 184, 'rate limited': 8, 'server down': 4, 'tool hangs': 4}",
        "done | forecaster: done · 200/200 done · 192 ok · 8 failed · 14,592 tokens",
        "status: ok 192 · error 4 · timeout 4 · cancelled 0",
        "(tool hangs): timeout after",
        "paused before: tool_execution | the recorded result: Error: the run was cancelled before this tool call",
        "they diverge at aligned move 5",
        "the replayed run: cancelled | the recorded run: cancelled",
        "  7 server down  error    after 3 attempt(s): ModelServerError: HTTP 503: overloaded",
        " 13 tool hangs   timeout  after 1 attempt(s): TimeoutError: the task ran past its timeout (3 s)",
        "tokens: 14,592 in all, 76.0 per ok task",
        # the run explorer over the batch's runs (every attempt): the failed and timed-out ones
        "24 of 216 runs kept by: runs[runs[\"status\"].isin(['error', 'cancelled'])].sort_values(['duration_s']",
        "model calls by kind (failed attempts count too): {'normal': 368, 'rate limited': 24, 'server down': 12,",
        "       1    initial  error ModelRateLimitError: HTTP 429: rate limit reached",
        "retried after a rate limit: 8 tasks, each ok on attempt 2",
        "resumed: 192 tasks skipped, 8 run again",
        "one dataset: 2 sessions, 200 tasks, 192 ok",
    ],
    "07_autogen_teams.ipynb": [
        "ok | billing answered: You were charged twice for order A17: the extra 49 EUR will be refunded within 5 days.",
        "tools offered: ['transfer_to_billing'] | tool_choice: auto",
        "billing's context: ['user: I was charged twice for order A17. Can y', 'triage: Transferred to billing, ado",
        "stepper: finished",
        "autogen_agentchat.base._task TaskResult | stop reason: Text 'TERMINATE' mentioned",
        "billing reflection           5        0        none       True",
        "{'Swarm': 2, 'billing': 8, 'triage': 7}",
        "same runs as recorded: True",
        "['invoke_agent Swarm', 'invoke_agent billing', 'invoke_agent triage']",
        "HandoffMessage -> billing",
        "nbagent's billing answered: True",
        "moves in nbagent's trace: 12 | in AutoGen's: 0",
    ],
}


# The Chinese walkthrough prints what the English one prints, but the stepper's STEP lines, which are in
# the design description's terms (nbagent.set_language("zh")).
_ZH_STEPS = {
    "STEP 1: New messages into model_context": "STEP 1: 新消息进 model_context",
    "STEP 2: Query memory": "STEP 2: 查记忆、把命中的塞进上下文",
    "STEP 3: Make a message id": "STEP 3: 生成 message_id",
    "STEP 4: Call the LLM": "STEP 4: 第一次调 LLM",
    "STEP 5: Reflect on the tool results": "STEP 5: 再调一次 LLM 生成自然语言总结 (reflect)",
}


def _in_chinese(line: str) -> str:
    for english, chinese in _ZH_STEPS.items():
        line = line.replace(english, chinese)
    return line


EXPECTED_OUTPUT["02_walkthrough_steps_1_5.zh.ipynb"] = [
    _in_chinese(line) for line in EXPECTED_OUTPUT["02_walkthrough_steps_1_5.ipynb"]
]


def test_the_chinese_walkthrough_runs_the_english_ones_code() -> None:
    """Every code cell of the Chinese walkthrough is the English one's, in its order (the English one may
    hold more); every text cell is in Chinese; it links the design description."""
    import nbformat

    english, chinese = (nbformat.read(ROOT / "notebooks" / name, as_version=4) for name in EXPECTED_NOTEBOOKS[1:3])
    english_code = [cell.source for cell in english.cells if cell.cell_type == "code"]
    chinese_code = [cell.source for cell in chinese.cells if cell.cell_type == "code"]
    assert 'nbagent.set_language("zh")' in chinese_code[0]
    chinese_code[0] = "\n".join(line for line in chinese_code[0].split("\n") if "set_language" not in line)
    chinese_code[0] = chinese_code[0].replace("import nbagent\n\n\n", "import nbagent\n\n")
    rest = iter(english_code)
    assert all(any(source == other for other in rest) for source in chinese_code)  # in order, each in the English
    assert len(chinese_code) >= 0.9 * len(english_code)
    texts = [cell.source for cell in chinese.cells if cell.cell_type == "markdown"]
    assert all(re.search(r"[\u4e00-\u9fff]", text) for text in texts)
    for notebook in (english, chinese):
        assert "](../docs/design.zh.md)" in notebook.cells[0].source


def test_the_five_notebooks_are_there() -> None:
    assert [path.name for path in NOTEBOOKS] == EXPECTED_NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_without_outputs(path: Path) -> None:
    import nbformat

    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    dirty = [
        index
        for index, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and (cell.outputs or cell.execution_count is not None)
    ]
    assert dirty == [], f"{path.name}: cells {dirty} hold outputs; clear them before committing"
    assert "widgets" not in nb.metadata, f"{path.name} holds saved widget state"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_notebooks_start_with_an_explanation(path: Path) -> None:
    import nbformat

    nb = nbformat.read(path, as_version=4)
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")
    markdown = sum(cell.cell_type == "markdown" for cell in nb.cells)
    code = len(nb.cells) - markdown
    assert markdown * 2 >= code, f"{path.name}: {code} code cells for {markdown} text cells; explain, not just run"


@pytest.mark.kernel
@pytest.mark.timeout(900)  # the first builds the lab venv when it is not cached (binder_python)
def test_lab_venv_is_isolated(binder_python: Path) -> None:
    """The venv sees nbagent from this checkout, has what the notebooks import, and none of the test tools."""
    probe = (
        "import sys, nbagent, duckdb, pyarrow, ipykernel, jupyterlab; "
        "print(nbagent.__file__); print(sys.prefix != sys.base_prefix); "
        "import importlib.util as u; print(u.find_spec('pytest') is None)"
    )
    lines = subprocess.run([str(binder_python), "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert lines == [str(ROOT / "src" / "nbagent" / "__init__.py"), "True", "True"]


@pytest.mark.kernel
@pytest.mark.timeout(900)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_offline_in_the_lab_venv(path: Path, binder_kernels: Path) -> None:
    """Each notebook runs top to bottom where a user runs it: the venv of the README's first command
    (``-e .[lab]`` alone: a package the notebooks import and the lab extra lacks fails here)."""
    nb = execute(path, binder_kernels)
    assert error_outputs(nb) == []
    assert leftover_tasks(nb) == "leftover tasks: []", "the notebook leaves background tasks running"
    text = output_text(nb)
    missing = [line for line in EXPECTED_OUTPUT.get(path.name, []) if line not in text]
    assert missing == [], f"{path.name} did not print: {missing}"
    assert all(cell.execution_count is not None for cell in nb.cells if cell.cell_type == "code"), "a cell did not run"


@pytest.mark.kernel
def test_a_notebook_that_leaves_a_task_running_is_caught(tmp_path: Path, kernels_dir: Path) -> None:
    import nbformat

    source = "import asyncio\nforgotten = asyncio.get_running_loop().create_task(asyncio.sleep(60))"
    path = tmp_path / "leaky.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)]), path)
    nb = execute(path, kernels_dir)
    assert error_outputs(nb) == []
    assert leftover_tasks(nb).startswith("leftover tasks: ['<coroutine object sleep at ")


@pytest.mark.kernel
def test_an_error_output_is_caught(tmp_path: Path, kernels_dir: Path) -> None:
    import nbformat

    path = tmp_path / "broken.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 / 0")]), path)
    assert error_outputs(execute(path, kernels_dir)) == ["cell 1: ZeroDivisionError: division by zero"]


@pytest.mark.kernel
def test_a_print_the_kernel_flushed_in_two_pieces_reads_as_one_line(tmp_path: Path, kernels_dir: Path) -> None:
    # On a loaded machine the kernel's timed flush can fall between the writes of one print(); the
    # flush forced here does it every time (notebook 07's "same runs as recorded: True" once came as
    # "same runs as recorded:" and " True\n").
    import nbformat

    source = "import sys\nprint('same runs as recorded:', end='')\nsys.stdout.flush()\nprint('', True)"
    path = tmp_path / "split.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)]), path)
    nb = execute(path, kernels_dir)
    assert [output["text"] for output in nb.cells[1].outputs] == ["same runs as recorded:", " True\n"]
    assert "same runs as recorded: True\n" in output_text(nb)


def test_cell_outputs_merge_consecutive_pieces_of_one_stream_only() -> None:
    import nbformat

    def stream(name: str, text: str) -> nbformat.NotebookNode:
        return nbformat.v4.new_output("stream", name=name, text=text)

    shown = nbformat.v4.new_output("execute_result", data={"text/plain": "42"}, execution_count=1)
    cell = nbformat.v4.new_code_cell(
        "",
        outputs=[
            stream("stdout", "a:"), stream("stdout", " 1\n"), stream("stderr", "Trace"), stream("stderr", "back\n"),
            stream("stdout", "b\n"), shown, stream("stdout", "c\n"),
        ],
    )  # fmt: skip
    merged = cell_outputs(cell)
    assert [(output.get("name"), output.get("text")) for output in merged] == [
        ("stdout", "a: 1\n"), ("stderr", "Traceback\n"), ("stdout", "b\n"), (None, None), ("stdout", "c\n"),
    ]  # fmt: skip
    assert cell.outputs[0]["text"] == "a:"  # the notebook's own outputs are left as they came
    nb = nbformat.v4.new_notebook(cells=[cell])
    assert output_text(nb) == "a: 1\n\nTraceback\n\nb\n\n42\nc\n"
    assert error_outputs(nb) == ["cell 0: stderr traceback:\nTraceback\n"]
