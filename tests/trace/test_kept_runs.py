"""What a kept run costs (issue 42.5): what the trace and the replay model keep of many runs, with
frames unchanged.

``kept_runs_frames.json`` holds the frames of a fixed set of runs as 9f5c223 (before the memory
work) made them, ids numbered in order of appearance and clock times left out: the frames of the
same runs now must be the same. Made again with ``python tests/trace/test_kept_runs.py`` (only
when a frame is meant to change).
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import nbagent
from nbagent import (
    AssistantAgent,
    BufferedChatCompletionContext,
    CreateResult,
    FunctionCall,
    ReplayChatCompletionClient,
    RequestUsage,
    Trace,
)
from nbagent.records import LLMCall
from nbagent.trace import store

GOLDEN = Path(__file__).parent / "data" / "kept_runs_frames.json"
ROOT = Path(__file__).resolve().parents[2]
FRAMES = ("runs_df", "events_df", "llm_calls_df", "tool_calls_df", "context_df")
# Clock times and durations differ from run to run; everything else is the same.
TIMES = re.compile(r"(_at|_s|timestamp)$")
ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# Bytes a kept plain run may hold with its trace, 1,000 runs kept in a fresh interpreter (tracemalloc counts
# the same bytes in every fresh process: 2,019 since finished runs' rows are appended to an open block every
# 24 runs, and the bench counts every id a run keeps, none of the id pool's spares; 2,428 at 3f263b8, which
# packed every 256 runs). Issue 42.5's target.
KEPT_RUN_BYTES = 2048
KEPT_RUNS = 1000


async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def tool_answer(n: int) -> CreateResult:
    return CreateResult(
        finish_reason="function_calls",
        content=[
            FunctionCall(id=f"c{n}a", name="add", arguments=f'{{"a": {n}, "b": 2}}'),
            FunctionCall(id=f"c{n}b", name="add", arguments=f'{{"a": 3, "b": {n}}}'),
        ],
        usage=RequestUsage(prompt_tokens=12, completion_tokens=4),
    )


async def fixed_runs() -> tuple[Trace, list[AssistantAgent]]:
    """One trace of: 20 plain runs of one agent (its context past the length at which a trace shares
    its requests with the context's log), 6 tool runs with reflection, 4 streamed runs, and 10 runs
    of an agent whose context is a window of 5 messages (its requests move along the log)."""
    trace = Trace()
    plain = AssistantAgent("plain", ReplayChatCompletionClient([f"answer {i}" for i in range(20)]))
    script: list[str | CreateResult] = []
    for n in range(6):
        script += [tool_answer(n), f"{n + 2} and {n + 3}"]
    tools = AssistantAgent("tools", ReplayChatCompletionClient(script), tools=[add], reflect_on_tool_use=True)
    streamed = AssistantAgent(
        "streamer", ReplayChatCompletionClient([f"a b c {i}" for i in range(4)]), model_client_stream=True
    )
    window = AssistantAgent(
        "window",
        ReplayChatCompletionClient([f"seen {i}" for i in range(10)]),
        model_context=BufferedChatCompletionContext(buffer_size=5),
    )
    agents = [plain, tools, streamed, window]
    for agent in agents:
        trace.attach(agent)
    for i in range(20):
        await plain.run(task=f"plain task {i}")
    for i in range(6):
        await tools.run(task=f"tool task {i}")
    for i in range(4):
        await streamed.run(task=f"streamed task {i}")
    for i in range(10):
        await window.run(task=f"window task {i}")
    return trace, agents


def normalized(trace: Trace) -> dict[str, list[dict[str, Any]]]:
    """Each frame's rows as JSON values: ids numbered in order of appearance, clock times left out."""
    ids: dict[str, str] = {}

    def value(cell: Any) -> Any:
        if cell is None or cell is pd.NA or cell is pd.NaT:
            return None
        if isinstance(cell, float) and math.isnan(cell):
            return None
        if isinstance(cell, str):
            return ID.sub(lambda found: ids.setdefault(found.group(), f"<id {len(ids)}>"), cell)
        if isinstance(cell, (list, tuple)):
            return [value(item) for item in cell]
        if isinstance(cell, dict):
            return {str(key): value(item) for key, item in cell.items()}
        if hasattr(cell, "item"):  # a numpy scalar
            return value(cell.item())
        return cell

    out: dict[str, list[dict[str, Any]]] = {}
    for name in FRAMES:
        frame = getattr(trace, name)()
        columns = [column for column in frame.columns if not TIMES.search(column)]
        out[name] = [
            {column: value(cell) for column, cell in zip(columns, row)}
            for row in frame[columns].astype(object).itertuples(index=False)
        ]
    return out


def test_frames_of_fixed_runs_are_unchanged() -> None:
    trace, _ = asyncio.run(fixed_runs())
    found = json.loads(json.dumps(normalized(trace)))
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert list(found) == list(expected)
    for name in FRAMES:
        assert len(found[name]) == len(expected[name]), name
        for index, (row, want) in enumerate(zip(found[name], expected[name])):
            assert row == want, (name, index)


@pytest.mark.subprocess
def test_a_kept_plain_run_holds_at_most_2_kb() -> None:
    """A plain run kept with its result and trace: under 2,048 bytes (issue 42.5), measured by
    bench/bench_runs_at_scale.py at 1,000 runs, in a fresh interpreter (in a process where AutoGen was
    imported, a run's result is AutoGen's subclass, and other tests' state moves the figure by a few
    hundred bytes)."""
    source = str(Path(nbagent.__file__).resolve().parents[1])  # the nbagent this test imports
    code = (
        "import asyncio, sys\n"
        f"sys.path[:0] = [{source!r}, {str(ROOT)!r}]\n"
        "from bench.bench_runs_at_scale import kept_per_run\n"
        f"print(asyncio.run(kept_per_run({KEPT_RUNS})))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert float(done.stdout.split()[-1]) < KEPT_RUN_BYTES


def test_replay_model_keeps_the_recorded_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """The replay model keeps its last requests as the trace recorded them: a long context's request
    is a view of the context's log (O(1) references), not a copy of the context per call (1.4 KB a
    run of 1,000 kept with a growing context, before). Packing off: a packed row is rebuilt (equal)."""
    monkeypatch.setattr(store, "PACK_RUNS", 10**9)
    trace, agents = asyncio.run(fixed_runs())
    plain = agents[0]
    client = plain.model_client
    assert isinstance(client, ReplayChatCompletionClient)
    kept = {id(request) for request in client.requests}
    plain_calls = [item for item in trace.items if isinstance(item, LLMCall) and id(item.request) in kept]
    assert len(plain_calls) == 20
    last = plain_calls[-1]
    assert client.requests[-1] is last.request
    assert type(last.request.messages) is not list  # shared with the log: the system message, 39 of the context's
    context = asyncio.run(plain.model_context.get_messages())
    assert len(context) == 40 and len(last.request.messages) == 40
    assert list(last.request.messages)[1:] == context[:39]


if __name__ == "__main__":
    made, _ = asyncio.run(fixed_runs())
    GOLDEN.parent.mkdir(exist_ok=True)
    frames = normalized(made)
    lines = ",\n".join(
        f"{json.dumps(name)}: [\n" + ",\n".join(json.dumps(row) for row in frames[name]) + "\n]" for name in FRAMES
    )
    GOLDEN.write_text("{\n" + lines + "\n}\n", encoding="utf-8")
    print(f"wrote {GOLDEN}", file=sys.stderr)
