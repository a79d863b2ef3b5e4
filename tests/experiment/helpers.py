"""Tasks and replay variants for the experiment tests."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from nbagent import AssistantAgent, CreateResult, FunctionCall, FunctionTool, ReplayChatCompletionClient


def arithmetic(n: int = 4) -> pd.DataFrame:
    """``n`` tasks ``"i+i?"`` whose ``expected`` answer is ``2i``."""
    return pd.DataFrame(
        {
            "task_id": [f"t{i}" for i in range(n)],
            "task": [f"{i}+{i}?" for i in range(n)],
            "expected": [str(2 * i) for i in range(n)],
        }
    )


def right(row: Mapping[str, Any]) -> AssistantAgent:
    """A variant that answers each task's ``expected``."""
    return AssistantAgent("right", ReplayChatCompletionClient([str(row["expected"])]))


def constant(answer: str) -> AssistantAgent:
    """A variant (an agent, copied per run) that answers ``answer`` to everything."""
    return AssistantAgent("constant", ReplayChatCompletionClient([answer]))


def broken(city: str) -> str:
    """A tool that fails."""
    raise RuntimeError(f"no weather for {city}")


def tool_variant(row: Mapping[str, Any]) -> AssistantAgent:
    """A variant that calls a failing tool once, then answers ``expected``."""
    call = FunctionCall(id="c1", name="broken", arguments='{"city": "Paris"}')
    client = ReplayChatCompletionClient(
        [CreateResult(finish_reason="function_calls", content=[call]), str(row["expected"])]
    )
    return AssistantAgent("tools", client, tools=[FunctionTool(broken)], reflect_on_tool_use=True)
