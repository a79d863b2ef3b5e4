"""Construction checks: each mistake gives a clear ValueError/TypeError before anything runs."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from nbagent import (
    AssistantAgent,
    FunctionTool,
    Handoff,
    HandoffMessage,
    ListMemory,
    ReplayChatCompletionClient,
    StaticWorkbench,
    StructuredMessage,
    TextMessage,
    ToolCallSummaryMessage,
)

from .helpers import add


def replay(**info: bool) -> ReplayChatCompletionClient:
    return ReplayChatCompletionClient(["ok"], model_info=info or None)


def test_agent_name_must_be_identifier() -> None:
    with pytest.raises(ValueError, match="valid Python identifier"):
        AssistantAgent("my agent", replay())


def test_tools_and_workbench_are_exclusive() -> None:
    with pytest.raises(ValueError, match="Tools cannot be used with a workbench"):
        AssistantAgent("a", replay(), tools=[add], workbench=StaticWorkbench([add]))


def test_duplicate_tool_names() -> None:
    with pytest.raises(ValueError, match=r"Tool names must be unique: \['add', 'add'\]"):
        AssistantAgent("a", replay(), tools=[add, FunctionTool(add)])


def test_duplicate_tool_names_in_workbench() -> None:
    with pytest.raises(ValueError, match="Tool names must be unique"):
        StaticWorkbench([add, FunctionTool(add)])


def test_duplicate_tool_names_across_workbenches() -> None:
    with pytest.raises(ValueError, match="'add' is offered twice"):
        AssistantAgent("a", replay(), workbench=[StaticWorkbench([add]), StaticWorkbench([add])])


def test_duplicate_handoff_names_case_folded() -> None:
    with pytest.raises(ValueError, match=r"Handoff names must be unique: \['transfer_to_bob', 'transfer_to_bob'\]"):
        AssistantAgent("a", replay(), handoffs=["Bob", "bob"])


def test_handoff_name_equal_to_tool_name() -> None:
    def transfer_to_bob() -> str:
        return "x"

    with pytest.raises(ValueError, match="Handoff names must be unique from tool names"):
        AssistantAgent("a", replay(), tools=[transfer_to_bob], handoffs=["bob"])


def test_handoff_target_equal_to_tool_name_is_taken() -> None:
    """Fix 5 (docs/contract.md): a handoff to ``add`` beside a tool ``add`` is taken (AutoGen refuses it; its
    handoff tool is ``transfer_to_add``, so the names the model sees differ)."""
    agent = AssistantAgent("a", replay(), tools=[add], handoffs=["add"])
    assert [handoff.target for handoff in agent.handoffs.values()] == ["add"]


def test_max_tool_iterations_at_least_one() -> None:
    with pytest.raises(ValueError, match="greater than or equal to 1, got 0"):
        AssistantAgent("a", replay(), max_tool_iterations=0)


def test_tools_need_function_calling() -> None:
    with pytest.raises(ValueError, match="does not support function calling"):
        AssistantAgent("a", replay(function_calling=False), tools=[add])


def test_handoffs_need_function_calling() -> None:
    with pytest.raises(ValueError, match="does not support function calling"):
        AssistantAgent("a", replay(function_calling=False), handoffs=["bob"])


def test_no_tools_on_model_without_function_calling_is_fine() -> None:
    agent = AssistantAgent("a", replay(function_calling=False))
    assert agent.tools == []


def test_handoff_name_must_be_identifier() -> None:
    with pytest.raises(ValueError, match="Handoff name must be a valid identifier"):
        Handoff(target="x", name="bad name")


def test_memory_must_be_memory_or_list() -> None:
    with pytest.raises(TypeError, match="Expected Memory, List\\[Memory\\], or None, got <class 'tuple'>"):
        AssistantAgent("a", replay(), memory=(ListMemory(),))  # type: ignore[arg-type]


def test_unsupported_tool_type() -> None:
    # A ValueError, as AutoGen's "Unsupported tool type" (and a TypeError: issue 19's wording names the item).
    with pytest.raises(ValueError, match=r"AssistantAgent: tools\[0\] must be a function or a BaseTool, got str 'add'"):
        AssistantAgent("a", replay(), tools=["add"])  # type: ignore[list-item]


def test_output_content_type_must_be_pydantic_model() -> None:
    with pytest.raises(TypeError, match="pydantic model class"):
        AssistantAgent("a", replay(), output_content_type=dict)  # type: ignore[arg-type]


def test_plain_callable_becomes_function_tool_with_docstring() -> None:
    agent = AssistantAgent("a", replay(), tools=[add])
    assert agent.tools == [
        {
            "name": "add",
            "description": "Add two numbers.",
            "parameters": {
                "type": "object",
                "properties": {  # AutoGen's shape: a title, and the name as description
                    "a": {"description": "a", "title": "A", "type": "integer"},
                    "b": {"description": "b", "title": "B", "type": "integer"},
                },
                "required": ["a", "b"],
                "additionalProperties": False,
            },
            "strict": False,
        }
    ]


def test_produced_message_types() -> None:
    class Out(BaseModel):
        x: int

    # AutoGen 0.7.5's: the three whatever the tools and handoffs (Swarm's first participant, issue 40.4)
    plain = (TextMessage, ToolCallSummaryMessage, HandoffMessage)
    assert AssistantAgent("a", replay()).produced_message_types == plain
    full = AssistantAgent("a", replay(), tools=[add], handoffs=["bob"], output_content_type=Out)
    assert full.produced_message_types == (*plain, StructuredMessage)
