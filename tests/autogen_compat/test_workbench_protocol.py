"""AutoGen's Workbench protocol, accepted as it is (``autogen_core.tools.Workbench``).

AutoGen's documentation: a workbench has ``list_tools()`` (tool schemas: ``name``, ``description``,
``parameters``) and ``call_tool(name, arguments=None, cancellation_token=None, call_id=None)``
returning a ``ToolResult(name, result=[TextResultContent | ImageResultContent], is_error)`` whose
``to_text()`` joins the parts with newlines, an image as ``[Image: <base64>]``. ``AssistantAgent``
calls it with those keywords, ``call_id`` being the model's tool call id, and puts ``to_text()`` and
``is_error`` in the ``FunctionExecutionResult``. A workbench is started and stopped with
``start()``/``stop()`` or ``async with``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from nbagent import (
    AssistantAgent,
    CancellationToken,
    CreateResult,
    FunctionCall,
    Image,
    ImageResultContent,
    ReplayChatCompletionClient,
    RequestUsage,
    StaticWorkbench,
    TextResultContent,
    ToolCallExecutionEvent,
    ToolResult,
)
from nbagent.tools import WorkbenchAdapter

RED_PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"


def calls(*items: tuple[str, str, dict[str, Any]]) -> CreateResult:
    return CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id=i, name=n, arguments=json.dumps(a)) for i, n, a in items],
        usage=RequestUsage(prompt_tokens=10, completion_tokens=5),
    )


class AutoGenStyleWorkbench:
    """A workbench written for AutoGen: no nbagent base class; keyword-only use of its parameters
    (AutoGen passes them all by keyword), results in AutoGen's shape."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.started = self.stopped = 0

    async def list_tools(self) -> list[dict[str, Any]]:
        return [
            {
                "name": "weather",
                "description": "The weather in a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            },
            {"name": "snapshot", "description": "A picture of the sky.", "parameters": {"type": "object"}},
            {"name": "broken", "description": "Always fails.", "parameters": {"type": "object"}},
        ]

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
        call_id: str | None = None,
    ) -> ToolResult:
        self.calls.append({"name": name, "arguments": arguments, "token": cancellation_token, "call_id": call_id})
        if name == "weather":
            return ToolResult(name=name, result=[TextResultContent(content=f"Sunny in {arguments['city']}")])  # type: ignore[index]
        if name == "snapshot":
            return ToolResult(
                name=name,
                result=[TextResultContent(content="the sky"), ImageResultContent(content=Image(data=RED_PIXEL))],
            )
        return ToolResult(name=name, result=[TextResultContent(content="the tool broke")], is_error=True)

    async def start(self) -> None:
        self.started += 1

    async def stop(self) -> None:
        self.stopped += 1


async def test_an_autogen_style_workbench_is_called_with_autogens_keywords_and_its_results_read() -> None:
    workbench = AutoGenStyleWorkbench()
    model = ReplayChatCompletionClient(
        [calls(("call_w", "weather", {"city": "Lyon"}), ("call_s", "snapshot", {}), ("call_b", "broken", {}))]
    )
    agent = AssistantAgent("forecaster", model, workbench=workbench)  # type: ignore[arg-type]
    assert {tool["name"] for tool in agent.tools} == set()  # a dynamic workbench: listed per call, not cached
    result = await agent.run(task="Weather and a picture, please")

    assert {tool["name"] for tool in model.requests[0].tools} == {"weather", "snapshot", "broken"}
    by_name = {call["name"]: call for call in workbench.calls}
    assert by_name["weather"]["arguments"] == {"city": "Lyon"}
    assert [by_name[n]["call_id"] for n in ("weather", "snapshot", "broken")] == ["call_w", "call_s", "call_b"]
    assert all(isinstance(call["token"], CancellationToken) for call in workbench.calls)

    execution = next(m for m in result.messages if isinstance(m, ToolCallExecutionEvent))
    assert [(r.call_id, r.content, r.is_error) for r in execution.content] == [
        ("call_w", "Sunny in Lyon", False),
        ("call_s", f"the sky\n[Image: {RED_PIXEL}]", False),
        ("call_b", "the tool broke", True),
    ]


async def test_a_single_call_goes_through_call_tool_with_its_call_id() -> None:
    workbench = AutoGenStyleWorkbench()
    model = ReplayChatCompletionClient([calls(("only", "weather", {"city": "Oslo"}))])
    agent = AssistantAgent("forecaster", model, workbench=[workbench])  # type: ignore[list-item]
    result = await agent.run(task="Oslo?")
    assert result.messages[-1].content == "Sunny in Oslo"
    assert [call["call_id"] for call in workbench.calls] == ["only"]


async def test_a_workbench_returning_a_dumped_tool_result_or_a_wrong_value() -> None:
    class DictWorkbench(AutoGenStyleWorkbench):
        async def call_tool(self, name: str, arguments: Any = None, **kwargs: Any) -> Any:  # type: ignore[override]
            if name == "weather":
                return {
                    "type": "ToolResult",
                    "name": name,
                    "result": [{"type": "TextResultContent", "content": "Rain"}],
                }
            return 42

    model = ReplayChatCompletionClient([calls(("c1", "weather", {"city": "Brest"}), ("c2", "snapshot", {}))])
    agent = AssistantAgent("forecaster", model, workbench=DictWorkbench())  # type: ignore[arg-type]
    result = await agent.run(task="Brest?")
    execution = next(m for m in result.messages if isinstance(m, ToolCallExecutionEvent))
    assert (execution.content[0].content, execution.content[0].is_error) == ("Rain", False)
    assert execution.content[1].is_error and "returned int, not a ToolResult" in execution.content[1].content


def test_tool_result_has_autogens_shape() -> None:
    result = ToolResult(
        name="t", result=[TextResultContent(content="a"), ImageResultContent(content=Image(data="QUJD"))]
    )
    assert result.type == "ToolResult"
    assert result.to_text() == "a\n[Image: QUJD]" and result.to_text(replace_image="<img>") == "a\n<img>"
    assert result.model_dump(mode="json") == {
        "type": "ToolResult",
        "name": "t",
        "result": [
            {"type": "TextResultContent", "content": "a"},
            {"type": "ImageResultContent", "content": {"data": "QUJD", "mime_type": "image/png"}},
        ],
        "is_error": False,
    }
    plain = ToolResult("t", "text", is_error=True)  # nbagent's shape still builds one
    assert (plain.content, plain.result, plain.is_error) == ("text", [TextResultContent(content="text")], True)
    assert ToolResult(name="t", result=[TextResultContent(content="text")], is_error=True) == plain


async def test_a_workbench_is_an_async_context_manager_and_the_agent_leaves_foreign_ones_to_their_owner() -> None:
    workbench = AutoGenStyleWorkbench()
    agent = AssistantAgent("a", ReplayChatCompletionClient(["hi"]), workbench=workbench)  # type: ignore[arg-type]
    [adapter] = agent.workbench
    assert isinstance(adapter, WorkbenchAdapter) and adapter.workbench is workbench
    async with adapter:
        assert workbench.started == 1
    assert workbench.stopped == 1
    await agent.close()  # AutoGen's agent does not stop a workbench it was given
    assert workbench.stopped == 1

    static = StaticWorkbench([])
    async with static as entered:
        assert entered is static


@pytest.mark.parametrize(
    ("workbench", "message"),
    [
        (
            "weather",
            r"workbench must be a Workbench \(an object with list_tools and call_tool\) or a sequence "
            r"of them, got str",
        ),
        ([AutoGenStyleWorkbench(), object()], r"workbench\[1\] must be a Workbench .*got object"),
    ],
)
def test_a_wrong_workbench_argument_says_what_a_workbench_is(workbench: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        AssistantAgent("a", ReplayChatCompletionClient(["x"]), workbench=workbench)


async def test_autogens_static_workbench_with_an_autogen_function_tool() -> None:
    tools = pytest.importorskip("autogen_core.tools")

    async def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    autogen_workbench = tools.StaticWorkbench([tools.FunctionTool(add, description="Add two numbers.")])
    model = ReplayChatCompletionClient([calls(("c1", "add", {"a": 2, "b": 40})), "2 + 40 = 42"])
    agent = AssistantAgent("adder", model, workbench=autogen_workbench, reflect_on_tool_use=True)
    result = await agent.run(task="2 + 40?")
    [offered] = model.requests[0].tools
    assert offered["name"] == "add" and offered["parameters"]["required"] == ["a", "b"]
    execution = next(m for m in result.messages if isinstance(m, ToolCallExecutionEvent))
    assert [(r.call_id, r.content, r.is_error) for r in execution.content] == [("c1", "42", False)]
    assert result.messages[-1].content == "2 + 40 = 42"
    row = agent.trace.tool_calls_df().iloc[0]
    assert (row["tool_name"], row["result"]) == ("add", "42")

    # AutoGen's own ToolResult (image included) is read the same way.
    core = pytest.importorskip("autogen_core")
    pil = pytest.importorskip("PIL.Image")
    image = core.Image.from_pil(pil.new("RGB", (1, 1), "red"))
    autogen_result = tools.ToolResult(
        name="snap", result=[tools.TextResultContent(content="sky"), tools.ImageResultContent(content=image)]
    )
    from nbagent.tools import as_tool_result

    converted = as_tool_result(autogen_result, "snap")
    assert converted.to_text() == autogen_result.to_text()
    assert isinstance(converted.result[1], ImageResultContent)
    assert converted.result[1].content.mime_type == "image/png"
