"""The plain install's core steps (issue 42.2): run in a venv with nbagent and no extra (or only
``[autogen]``) by ``.ci/run``; not collected by pytest (no ``test_`` name). Exits non-zero, naming the
step, when a core step fails; prints one line per step.

    python tests/install/smoke_core.py [--expect-no-pyarrow]
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import io
import sys
import tempfile
import traceback
from collections.abc import Callable
from typing import Any

import nbagent
from nbagent import AssistantAgent, CreateResult, FunctionCall, ReplayChatCompletionClient, RequestUsage
from nbagent.trace.explore import run_table


async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def agent() -> AssistantAgent:
    call = CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id="c1", name="add", arguments='{"a": 1, "b": 2}')],
        usage=RequestUsage(prompt_tokens=10, completion_tokens=5),
    )
    return AssistantAgent("calc", ReplayChatCompletionClient([call, "3", call, "3 again"]), tools=[add])


def main() -> int:
    if "--expect-no-pyarrow" in sys.argv and importlib.util.find_spec("pyarrow") is not None:
        print("smoke: pyarrow is installed, but this venv should have no extra", file=sys.stderr)
        return 2
    calc = agent()
    nbagent.run(calc, "1 + 2?")
    nbagent.run(calc, "1 + 2 again?")
    trace = calc.trace
    run = str(trace.runs_df()["run_id"].iloc[0])
    folder = tempfile.mkdtemp()
    steps: list[tuple[str, Callable[[], Any]]] = [
        ("events_df", trace.events_df),
        ("llm_calls_df", trace.llm_calls_df),
        ("tool_calls_df", trace.tool_calls_df),
        ("runs_df", trace.runs_df),
        ("context_df", trace.context_df),
        ("context_tables", trace.context_tables),
        ("summary", trace.summary),
        ("timeline", lambda: trace.timeline(run).to_html()),
        ("replay", lambda: nbagent.run(trace.replay(run))),
        ("explore table", lambda: run_table(trace).select().page(0, 50)),
        ("to_jsonl / load_jsonl", lambda: nbagent.load_jsonl(trace.to_jsonl(folder)).runs_df()),
        ("_repr_html_", trace._repr_html_),
        ("a long text's frames", long_text),
        ("python -m nbagent demo", demo),
    ]
    failed = 0
    for name, step in steps:
        try:
            step()
        except Exception:
            failed += 1
            print(f"smoke: FAILED {name}\n{traceback.format_exc()}", file=sys.stderr)
        else:
            print(f"smoke: ok {name}")
    return 1 if failed else 0


def long_text() -> None:
    """A text longer than a shared Arrow copy's threshold (schema.LONG_TEXT) in every frame."""
    talker = AssistantAgent("talker", ReplayChatCompletionClient(["x" * 70_000]))
    nbagent.run(talker, "say a lot")
    assert talker.trace.runs_df()["final_text"].str.len().iloc[0] == 70_000
    talker.trace.events_df()
    talker.trace.context_tables()


def demo() -> None:
    from nbagent.__main__ import demo as run_demo

    with contextlib.redirect_stdout(io.StringIO()):
        asyncio.run(run_demo(io.StringIO()))


if __name__ == "__main__":
    sys.exit(main())
