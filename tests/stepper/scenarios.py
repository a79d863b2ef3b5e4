"""The SPEC.md scenarios as scripted agents, shared by the stepper tests.

Each scenario builds a fresh agent on a fresh replay script every time it is called, so a stepped run
and an unstepped run see exactly the same model answers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from nbagent import (
    AssistantAgent,
    CreateResult,
    FunctionCall,
    ListMemory,
    MemoryContent,
    ReplayChatCompletionClient,
    RequestUsage,
)


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def mul(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def fail(reason: str) -> str:
    """Always raises."""
    raise ValueError(reason)


class Weather(BaseModel):
    city: str
    degrees: int


def calls(*specs: tuple[str, str, str], thought: str | None = None) -> CreateResult:
    """A model answer made of tool calls ``(id, name, arguments)``."""
    return CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id=i, name=n, arguments=a) for i, n, a in specs],
        usage=RequestUsage(prompt_tokens=10, completion_tokens=5),
        thought=thought,
    )


def text(content: str, thought: str | None = None) -> CreateResult:
    return CreateResult(
        finish_reason="stop",
        content=content,
        usage=RequestUsage(prompt_tokens=12, completion_tokens=3),
        thought=thought,
    )


@dataclass(frozen=True)
class Scenario:
    name: str
    script: Callable[[], list[str | CreateResult]]
    options: Callable[[], dict[str, Any]]
    moves: list[str]
    events: list[str]

    def agent(self) -> AssistantAgent:
        return AssistantAgent("assistant", ReplayChatCompletionClient(self.script()), **self.options())


PRE = ["add_messages", "message_id", "call_llm"]
TOOL_ROUND = ["tool_request", "tool_execution"]

SCENARIOS = [
    Scenario("plain_text", lambda: [text("Hello there.")], dict, [*PRE, "text_exit"], ["TextMessage"]),
    Scenario(
        "one_tool_reflect_off",
        lambda: [calls(("c1", "add", '{"a": 2, "b": 3}'))],
        lambda: {"tools": [add]},
        [*PRE, *TOOL_ROUND, "summarize"],
        ["ToolCallRequestEvent", "ToolCallExecutionEvent", "ToolCallSummaryMessage"],
    ),
    Scenario(
        "one_tool_reflect_on",
        lambda: [calls(("c1", "add", '{"a": 2, "b": 3}')), text("2 + 3 = 5")],
        lambda: {"tools": [add], "reflect_on_tool_use": True},
        [*PRE, *TOOL_ROUND, "reflect"],
        ["ToolCallRequestEvent", "ToolCallExecutionEvent", "TextMessage"],
    ),
    Scenario(
        "two_rounds_then_text",
        lambda: [
            calls(("c1", "add", '{"a": 2, "b": 3}')),
            calls(("c2", "mul", '{"a": 5, "b": 4}')),
            text("(2 + 3) * 4 = 20"),
        ],
        lambda: {"tools": [add, mul], "max_tool_iterations": 3},
        [*PRE, *TOOL_ROUND, "next_llm_call", *TOOL_ROUND, "next_llm_call", "text_exit"],
        ["ToolCallRequestEvent", "ToolCallExecutionEvent"] * 2 + ["TextMessage"],
    ),
    Scenario(
        "keeps_calling_limit_3",
        lambda: [calls((f"c{i}", "add", f'{{"a": {i}, "b": 1}}')) for i in range(3)],
        lambda: {"tools": [add], "max_tool_iterations": 3},
        [*PRE, *TOOL_ROUND, "next_llm_call", *TOOL_ROUND, "next_llm_call", *TOOL_ROUND, "summarize"],
        ["ToolCallRequestEvent", "ToolCallExecutionEvent"] * 3 + ["ToolCallSummaryMessage"],
    ),
    Scenario(
        "parallel_calls",
        lambda: [
            calls(
                ("c1", "add", '{"a": 1, "b": 2}'), ("c2", "mul", '{"a": 3, "b": 4}'), ("c3", "add", '{"a": 5, "b": 6}')
            )
        ],
        lambda: {"tools": [add, mul]},
        [*PRE, *TOOL_ROUND, "summarize"],
        ["ToolCallRequestEvent", "ToolCallExecutionEvent", "ToolCallSummaryMessage"],
    ),
    Scenario(
        "handoff_and_tool",
        lambda: [calls(("c1", "add", '{"a": 1, "b": 2}'), ("c2", "transfer_to_billing", "{}"))],
        lambda: {"tools": [add], "handoffs": ["billing"]},
        [*PRE, *TOOL_ROUND, "handoff_check"],
        ["ToolCallRequestEvent", "ToolCallExecutionEvent", "HandoffMessage"],
    ),
    Scenario(
        "two_handoffs",
        lambda: [calls(("h1", "transfer_to_billing", "{}"), ("h2", "transfer_to_support", "{}"))],
        lambda: {"handoffs": ["billing", "support"]},
        [*PRE, *TOOL_ROUND, "handoff_check"],
        ["ToolCallRequestEvent", "ToolCallExecutionEvent", "HandoffMessage"],
    ),
    Scenario(
        "streaming",
        lambda: ["The answer is forty two."],
        lambda: {"model_client_stream": True},
        [*PRE, "text_exit"],
        ["ModelClientStreamingChunkEvent"] * 5 + ["TextMessage"],
    ),
    Scenario(
        "thought",
        lambda: [calls(("c1", "add", '{"a": 2, "b": 2}'), thought="I should add."), text("4", thought="Done.")],
        lambda: {"tools": [add], "max_tool_iterations": 2},
        [*PRE, *TOOL_ROUND, "next_llm_call", "text_exit"],
        ["ThoughtEvent", "ToolCallRequestEvent", "ToolCallExecutionEvent", "ThoughtEvent", "TextMessage"],
    ),
    Scenario(
        "memory_hit",
        lambda: [text("You like tea.")],
        lambda: {"memory": [ListMemory(memory_contents=[MemoryContent(content="The user likes tea.")])]},
        ["add_messages", "memory", "message_id", "call_llm", "text_exit"],
        ["MemoryQueryEvent", "TextMessage"],
    ),
    # Handoffs offered but not called: past the handoff check, STEP 5 goes on as without handoffs.
    Scenario(
        "handoff_offered_then_tool_loop",
        lambda: [calls(("c1", "add", '{"a": 2, "b": 3}')), text("5")],
        lambda: {"tools": [add], "handoffs": ["billing"], "max_tool_iterations": 2},
        [*PRE, *TOOL_ROUND, "handoff_check", "next_llm_call", "text_exit"],
        ["ToolCallRequestEvent", "ToolCallExecutionEvent", "TextMessage"],
    ),
    Scenario(
        "handoff_offered_then_reflect",
        lambda: [calls(("c1", "add", '{"a": 2, "b": 3}')), text("2 + 3 = 5")],
        lambda: {"tools": [add], "handoffs": ["billing"], "reflect_on_tool_use": True},
        [*PRE, *TOOL_ROUND, "handoff_check", "reflect"],
        ["ToolCallRequestEvent", "ToolCallExecutionEvent", "TextMessage"],
    ),
    Scenario(
        "handoff_offered_then_summary",
        lambda: [calls(("c1", "add", '{"a": 2, "b": 3}'))],
        lambda: {"tools": [add], "handoffs": ["billing"]},
        [*PRE, *TOOL_ROUND, "handoff_check", "summarize"],
        ["ToolCallRequestEvent", "ToolCallExecutionEvent", "ToolCallSummaryMessage"],
    ),
    Scenario(
        "structured_output",
        lambda: [calls(("c1", "add", '{"a": 20, "b": 1}')), '{"city": "Paris", "degrees": 21}'],
        lambda: {"tools": [add], "output_content_type": Weather, "output_content_type_format": "{city}: {degrees}"},
        [*PRE, *TOOL_ROUND, "reflect"],
        ["ToolCallRequestEvent", "ToolCallExecutionEvent", "StructuredMessage[Weather]"],  # AutoGen's type string
    ),
]
