"""Shared scripts and probes for the core tests."""

from __future__ import annotations

import asyncio
from typing import Any

from nbagent import AssistantAgent, CreateResult, FunctionCall, RequestUsage


async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def calls(*items: tuple[str, str, str], thought: str | None = None) -> CreateResult:
    """A model answer made of tool calls ``(id, name, arguments)``."""
    return CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id=i, name=n, arguments=a) for i, n, a in items],
        usage=RequestUsage(prompt_tokens=7, completion_tokens=3),
        thought=thought,
    )


def text(content: str, thought: str | None = None) -> CreateResult:
    return CreateResult(
        finish_reason="stop", content=content, usage=RequestUsage(prompt_tokens=7, completion_tokens=3), thought=thought
    )


def context(agent: AssistantAgent) -> list[dict[str, Any]]:
    """The agent's model context as JSON-ready dicts (what the reference dumps print)."""
    return [message.model_dump(mode="json") for message in agent.model_context.messages]


def kinds(items: Any) -> list[str]:
    return [type(item).__name__ for item in items]


U_GO = {"content": "go", "source": "user", "type": "UserMessage"}


def a_calls(*items: tuple[str, str, str], source: str = "agent", thought: str | None = None) -> dict[str, Any]:
    return {
        "content": [{"id": i, "name": n, "arguments": a} for i, n, a in items],
        "thought": thought,
        "source": source,
        "type": "AssistantMessage",
    }


def a_text(content: str, source: str = "agent", thought: str | None = None) -> dict[str, Any]:
    return {"content": content, "thought": thought, "source": source, "type": "AssistantMessage"}


def ferm(*items: tuple[str, str, str, bool]) -> dict[str, Any]:
    return {
        "content": [{"content": c, "name": n, "call_id": i, "is_error": e} for c, n, i, e in items],
        "type": "FunctionExecutionResultMessage",
    }


def every_call_answered(agent: AssistantAgent) -> bool:
    """True when each tool call in the context has a result right after it (what the OpenAI API needs)."""
    messages = agent.model_context.messages
    for index, message in enumerate(messages):
        if message.type == "AssistantMessage" and not isinstance(message.content, str):
            if index + 1 >= len(messages) or messages[index + 1].type != "FunctionExecutionResultMessage":
                return False
            if [c.id for c in message.content] != [r.call_id for r in messages[index + 1].content]:
                return False
    return True


def other_tasks(before: set[asyncio.Task[Any]]) -> set[asyncio.Task[Any]]:
    """Tasks alive now that were not alive before (the current task excluded)."""
    return {t for t in asyncio.all_tasks() if t not in before and t is not asyncio.current_task() and not t.done()}
