"""Tools as AutoGen 0.7.5 defines them (issue 28.1), each checked against AutoGen's own object.

The same code is run with AutoGen's classes and with nbagent's (only the imports differ), and the
results are compared: a generic ``BaseTool[Args, Result]`` written with AutoGen's constructor and
``run``, ``BaseStreamTool``, ``BaseToolWithState`` and a workbench's saved state, ``FunctionTool``'s
schema for the same function (descriptions, titles, ``additionalProperties``, strict mode, inlined
``$defs``, a ``functools.partial``), ``args_type()``/``return_type()``/``state_type()``,
``global_imports`` with ``ImportFromModule``, ``return_value_as_string``, bad arguments raising
pydantic's ``ValidationError``, ``create(tools=[Tool objects], tool_choice=<Tool>)`` over real HTTP, and
a workbench listing plain dict schemas without ``parameters``.
"""

from __future__ import annotations

import functools
import json
import warnings
from collections.abc import AsyncGenerator
from typing import Annotated, Any, Literal

import autogen_core
import autogen_core.code_executor
import autogen_core.tools as ag_tools
import pytest
from pydantic import BaseModel, ValidationError, model_serializer

import nbagent
from nbagent import (
    AssistantAgent,
    BaseStreamTool,
    BaseTool,
    BaseToolWithState,
    CancellationToken,
    CreateResult,
    FunctionCall,
    FunctionTool,
    ImportFromModule,
    OpenAIChatCompletionClient,
    ReplayChatCompletionClient,
    StaticWorkbench,
    ThoughtEvent,
    ToolArgumentsError,
    ToolCallExecutionEvent,
    UserMessage,
    load_component,
)
from tests.models.chat_server import ChatServer, Reply

FAKE_KEY = "sk-" + "test-0123456789"  # a fake key, made at run time


# --------------------------------------------------------------------------- the functions compared


class Point(BaseModel):
    x: int
    y: int = 0


class Route(BaseModel):
    start: Point
    stops: list[Point] = []


def weather(
    city: str,
    days: Annotated[int, "how many days ahead"] = 3,
    unit: Literal["c", "f"] = "c",
    tags: list[str] | None = None,
    point: Point | None = None,
    route: Route | None = None,
) -> str:
    return f"{city}:{days}:{unit}"


async def add(a: int, b: int) -> int:
    return a + b


def greet(name: Annotated[str, "who to greet"], cancellation_token: CancellationToken) -> str:
    return f"hello {name}"


def no_arguments() -> Point:
    return Point(x=1)


FUNCTIONS = [weather, add, greet, no_arguments]


@pytest.mark.parametrize("func", FUNCTIONS, ids=lambda func: func.__name__)
def test_function_tool_schema_equals_autogens(func: Any) -> None:
    ours = FunctionTool(func, description="what it does")
    theirs = ag_tools.FunctionTool(func, description="what it does")
    assert ours.schema == theirs.schema
    assert json.dumps(ours.schema) == json.dumps(theirs.schema)  # same key order too
    assert ours.args_type().model_json_schema() == theirs.args_type().model_json_schema()
    assert ours.args_type().__name__ == theirs.args_type().__name__ == f"{func.__name__}args"
    assert ours.return_type() == theirs.return_type()
    assert ours.state_type() is theirs.state_type() is None


def test_a_parameter_without_annotated_text_is_described_by_its_name_and_titled() -> None:
    properties = FunctionTool(weather, description="d").schema["parameters"]["properties"]
    assert properties["city"] == {"description": "city", "title": "City", "type": "string"}
    assert properties["days"]["description"] == "how many days ahead"
    assert FunctionTool(weather, description="d").schema["parameters"]["additionalProperties"] is False


def test_strict_refuses_defaulted_parameters_as_autogen_does() -> None:
    with pytest.raises(ValueError) as theirs:
        _ = ag_tools.FunctionTool(weather, description="d", strict=True).schema
    with pytest.raises(ValueError) as ours:
        _ = FunctionTool(weather, description="d", strict=True).schema
    assert str(ours.value) == str(theirs.value)
    assert "Default arguments are not allowed in strict mode" in str(ours.value)
    strict = FunctionTool(add, description="d", strict=True)
    assert strict.schema == ag_tools.FunctionTool(add, description="d", strict=True).schema
    assert strict.schema["strict"] is True
    with pytest.raises(ValueError, match="strict mode"):  # an agent offers it: refused at once
        AssistantAgent("a", ReplayChatCompletionClient([]), tools=[FunctionTool(weather, strict=True)])


def test_a_partial_is_named_after_the_function_it_wraps() -> None:
    def scale(value: int, factor: int) -> int:
        """Scale a value."""
        return value * factor

    ours = FunctionTool(functools.partial(scale, factor=3), description="x")
    theirs = ag_tools.FunctionTool(functools.partial(scale, factor=3), description="x")
    assert ours.name == theirs.name == "scale"
    assert ours.schema == theirs.schema
    assert FunctionTool(functools.partial(scale, factor=3)).description == "Scale a value."  # not partial's doc


async def test_a_partial_runs() -> None:
    def scale(value: int, factor: int) -> int:
        return value * factor

    tool = FunctionTool(functools.partial(scale, factor=3), description="x")
    assert await tool.run_json({"value": 2}, CancellationToken()) == 6


class Custom(BaseModel):
    value: int

    @model_serializer
    def as_text(self) -> dict[str, Any]:
        return {"custom": self.value * 10}


class Plain(BaseModel):
    city: str
    note: str = "München"


class Scalar(BaseModel):
    value: int

    @model_serializer
    def as_number(self) -> int:
        return self.value


@pytest.mark.parametrize(
    "value",
    [Plain(city="test"), Custom(value=2), Scalar(value=7), "text", 42],
    ids=["model", "model_serializer", "non-dict serializer", "str", "int"],
)
def test_return_value_as_string_equals_autogens(value: Any) -> None:
    ours = FunctionTool(add, description="d").return_value_as_string(value)
    theirs = ag_tools.FunctionTool(add, description="d").return_value_as_string(value)
    assert ours == theirs
    if isinstance(value, Plain):
        assert ours == '{"city": "test", "note": "M\\u00fcnchen"}'


async def test_bad_arguments_raise_pydantics_validation_error() -> None:
    for tool in (FunctionTool(add, description="d"), ag_tools.FunctionTool(add, description="d")):
        with pytest.raises(ValidationError) as caught:
            await tool.run_json({"a": "not a number"}, CancellationToken())
        assert caught.value.errors()[0]["loc"] == ("b",) or caught.value.errors()[0]["loc"] == ("a",)
    with pytest.raises(ValidationError) as ours:
        await FunctionTool(add, description="d").run_json({"a": 1}, CancellationToken())
    assert isinstance(ours.value, ToolArgumentsError) and isinstance(ours.value, ValueError)
    assert [error["type"] for error in ours.value.errors()] == ["missing"]
    assert "arguments for tool 'add' do not match its schema: b: Field required" in str(ours.value)


# --------------------------------------------------------------------------- BaseTool[Args, Result]


class AddArgs(BaseModel):
    a: int
    b: int


class Sum(BaseModel):
    total: int


def adder_class(base: Any) -> Any:
    """The same user code, written once, on AutoGen's or nbagent's ``BaseTool``."""

    class Adder(base[AddArgs, Sum]):  # type: ignore[misc,valid-type]
        def __init__(self) -> None:
            super().__init__(AddArgs, Sum, "adder", "Add two numbers.")

        async def run(self, args: AddArgs, cancellation_token: Any) -> Sum:
            return Sum(total=args.a + args.b)

    return Adder


async def test_a_generic_base_tool_with_autogens_constructor() -> None:
    ours, theirs = adder_class(BaseTool)(), adder_class(ag_tools.BaseTool)()
    assert ours.schema == theirs.schema
    assert (ours.name, ours.description) == (theirs.name, theirs.description) == ("adder", "Add two numbers.")
    assert ours.args_type() is AddArgs and ours.return_type() is Sum and ours.state_type() is None
    result = await ours.run_json({"a": 1, "b": 2}, CancellationToken())
    assert result == await theirs.run_json({"a": 1, "b": 2}, autogen_core.CancellationToken()) == Sum(total=3)
    assert ours.return_value_as_string(result) == theirs.return_value_as_string(result) == '{"total": 3}'
    with pytest.raises(ValidationError):
        await ours.run_json({"a": "x", "b": 2}, CancellationToken())
    assert isinstance(ours, nbagent.Tool)  # AutoGen's protocol


async def test_a_generic_base_tool_runs_in_the_agent() -> None:
    script = [
        CreateResult(
            finish_reason="function_calls", content=[FunctionCall(id="c1", name="adder", arguments='{"a": 2, "b": 5}')]
        )
    ]
    agent = AssistantAgent("a", ReplayChatCompletionClient(script), tools=[adder_class(BaseTool)()])
    result = await agent.run(task="2 + 5")
    execution = next(m for m in result.messages if isinstance(m, ToolCallExecutionEvent))
    assert execution.content[0].content == '{"total": 7}' and not execution.content[0].is_error


class Progress(BaseModel):
    step: int


def counter_class(base: Any, event: Any) -> Any:
    class Counter(base[AddArgs, Any, Sum]):  # type: ignore[misc,valid-type]
        def __init__(self) -> None:
            super().__init__(AddArgs, Sum, "counter", "Count from a to b.")

        async def run_stream(self, args: AddArgs, cancellation_token: Any) -> AsyncGenerator[Any, None]:
            for step in range(args.a, args.b):
                yield event(content=f"step {step}", source="counter")
            yield Sum(total=args.b - args.a)

        async def run(self, args: AddArgs, cancellation_token: Any) -> Sum:  # AutoGen requires it too
            return Sum(total=args.b - args.a)

    return Counter


async def test_a_base_stream_tool_streams_its_events_in_the_agent() -> None:
    from autogen_agentchat.messages import ThoughtEvent as AgThought

    theirs = counter_class(ag_tools.BaseStreamTool, AgThought)()
    items = [item async for item in theirs.run_json_stream({"a": 1, "b": 3}, autogen_core.CancellationToken())]
    ours = counter_class(BaseStreamTool, ThoughtEvent)()
    mine = [item async for item in ours.run_json_stream({"a": 1, "b": 3}, CancellationToken())]
    assert [getattr(item, "content", item) for item in mine] == [getattr(item, "content", item) for item in items]
    assert ours.streams and ours.schema == theirs.schema
    assert await ours.run_json({"a": 1, "b": 3}) == Sum(total=2)
    script = [
        CreateResult(
            finish_reason="function_calls",
            content=[FunctionCall(id="c1", name="counter", arguments='{"a": 0, "b": 2}')],
        )
    ]
    agent = AssistantAgent("a", ReplayChatCompletionClient(script), tools=[ours])
    messages = [message async for message in agent.run_stream(task="count")]
    thoughts = [m.content for m in messages if isinstance(m, ThoughtEvent)]
    assert thoughts == ["step 0", "step 1"]
    execution = next(m for m in messages if isinstance(m, ToolCallExecutionEvent))
    assert execution.content[0].content == '{"total": 2}'


def progress_class(base: Any, event: Any) -> Any:
    class Progressing(base[AddArgs, Any, Sum]):  # type: ignore[misc,valid-type]
        """Yields a Progress value per step, an event between, and its Sum last (or fails after a step)."""

        def __init__(self, name: str = "progress") -> None:
            super().__init__(AddArgs, Sum, name, "Count with progress.")

        async def run_stream(self, args: AddArgs, cancellation_token: Any) -> AsyncGenerator[Any, None]:
            for step in range(args.a, args.b):
                yield Progress(step=step)
                yield event(content=f"step {step}", source="progress")
            if args.b < 0:
                raise ValueError("no count below zero")
            yield Sum(total=args.b - args.a)

        async def run(self, args: AddArgs, cancellation_token: Any) -> Sum:
            return Sum(total=args.b - args.a)

    return Progressing


def described(item: Any) -> Any:
    if isinstance(item, (ag_tools.ToolResult, nbagent.ToolResult)):  # an error's text: a kept difference
        return ("result", item.is_error, item.to_text().removeprefix("Error: ValueError: "))
    return (type(item).__name__, getattr(item, "content", None) or item.model_dump())


async def test_a_stream_tools_intermediate_values_come_out_of_the_workbench_as_autogens() -> None:
    from autogen_agentchat.messages import ThoughtEvent as AgThought

    theirs = ag_tools.StaticStreamWorkbench([progress_class(ag_tools.BaseStreamTool, AgThought)()])
    ours = nbagent.StaticStreamWorkbench([progress_class(BaseStreamTool, ThoughtEvent)()])
    for arguments in ({"a": 0, "b": 2}, {"a": -2, "b": -1}, {"a": 0, "b": 0}):
        expected = [described(i) async for i in theirs.call_tool_stream("progress", arguments)]
        got = [described(i) async for i in ours.call_tool_stream("progress", arguments)]
        assert got == expected, arguments
    assert got == [("result", False, '{"total": 0}')]
    values = [i async for i in ours.call_tool_stream("progress", {"a": 0, "b": 2})]
    assert [type(i).__name__ for i in values] == ["Progress", "ThoughtEvent", "Progress", "ThoughtEvent", "ToolResult"]


async def test_the_agent_shows_a_stream_tools_events_not_its_intermediate_values() -> None:
    script = [
        CreateResult(
            finish_reason="function_calls",
            content=[FunctionCall(id="c1", name="progress", arguments='{"a": 0, "b": 2}')],
        )
    ]
    agent = AssistantAgent(
        "a", ReplayChatCompletionClient(script), tools=[progress_class(BaseStreamTool, ThoughtEvent)()]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "Unexpected event type" for nbagent's own workbench's values
        messages = [message async for message in agent.run_stream(task="count")]
    assert [m.content for m in messages if isinstance(m, ThoughtEvent)] == ["step 0", "step 1"]
    execution = next(m for m in messages if isinstance(m, ToolCallExecutionEvent))
    assert execution.content[0].content == '{"total": 2}'


class CountState(BaseModel):
    count: int = 0


def stateful_class(base: Any) -> Any:
    class Counted(base[AddArgs, Sum, CountState]):  # type: ignore[misc,valid-type]
        def __init__(self) -> None:
            super().__init__(AddArgs, Sum, CountState, "counted", "Add and count the calls.")
            self.count = 0

        async def run(self, args: AddArgs, cancellation_token: Any) -> Sum:
            self.count += 1
            return Sum(total=args.a + args.b)

        def save_state(self) -> CountState:
            return CountState(count=self.count)

        def load_state(self, state: CountState) -> None:
            self.count = state.count

    return Counted


async def test_static_workbench_saves_and_loads_its_tools_state_as_autogen() -> None:
    ours_tool, theirs_tool = stateful_class(BaseToolWithState)(), stateful_class(ag_tools.BaseToolWithState)()
    assert ours_tool.state_type() is CountState
    ours, theirs = (
        StaticWorkbench([ours_tool, FunctionTool(add, description="d")]),
        ag_tools.StaticWorkbench([theirs_tool, ag_tools.FunctionTool(add, description="d")]),
    )
    for workbench in (ours, theirs):
        await workbench.call_tool("counted", {"a": 1, "b": 1})
        await workbench.call_tool("counted", {"a": 1, "b": 1})
    saved = await ours.save_state()
    assert saved == await theirs.save_state()
    assert saved == {"type": "StaticWorkbenchState", "tools": {"counted": {"count": 2}, "add": {}}}
    fresh = stateful_class(BaseToolWithState)()
    await StaticWorkbench([fresh]).load_state(json.loads(json.dumps(saved)))
    assert fresh.count == 2
    await StaticWorkbench([fresh]).load_state(await theirs.save_state())  # AutoGen's state loads too
    assert fresh.count == 2


async def test_a_tool_written_the_older_nbagent_way_still_runs() -> None:
    class Echo(BaseTool):
        name = "echo"
        description = "Echo."
        schema = nbagent.ToolSchema(
            name="echo", description="Echo.", parameters={"type": "object", "properties": {"text": {"type": "string"}}}
        )

        async def run_json(self, args: Any, cancellation_token: Any = None, call_id: str | None = None) -> Any:
            return args["text"]

    tool = Echo()
    assert await tool.run_json({"text": "hi"}) == "hi"
    assert await tool.run(tool.args_type()(text="hi"), CancellationToken()) == "hi"  # run goes through run_json


# --------------------------------------------------------------------------- global_imports


def hypotenuse(a: float, b: float) -> float:
    return sqrt(a * a + b * b)  # type: ignore[name-defined]  # noqa: F821 (imported by global_imports)


def test_global_imports_with_import_from_module_dump_as_autogen_and_load_when_allowed() -> None:
    ours = FunctionTool(hypotenuse, "The hypotenuse.", global_imports=[ImportFromModule("math", ["sqrt"])])
    theirs = ag_tools.FunctionTool(
        hypotenuse, "The hypotenuse.", global_imports=[autogen_core.code_executor.ImportFromModule("math", ["sqrt"])]
    )
    ours_config = json.loads(ours.dump_component().model_dump_json())["config"]
    theirs_config = json.loads(theirs.dump_component().model_dump_json())["config"]
    assert ours_config["global_imports"] == theirs_config["global_imports"] == [{"module": "math", "imports": ["sqrt"]}]
    with pytest.raises(nbagent.SourceCodeNotAllowedError):  # nbagent's rule: no code runs unless allowed
        load_component(theirs.dump_component().model_dump())
    loaded = load_component(theirs.dump_component().model_dump(), allow_source_code=True)
    assert isinstance(loaded, FunctionTool) and loaded.schema == theirs.schema


async def test_a_loaded_tool_runs_with_its_imports() -> None:
    tool = FunctionTool(hypotenuse, "h", global_imports=[ImportFromModule("math", ["sqrt"])])
    loaded = load_component(tool.dump_component(), allow_source_code=True)
    assert await loaded.run_json({"a": 3, "b": 4}) == 5.0
    with pytest.raises(TypeError, match="imports"):
        ImportFromModule("math", "sqrt")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- create(tools=..., tool_choice=...)


async def test_create_takes_tool_objects_and_a_tool_as_tool_choice_over_http() -> None:
    tool = FunctionTool(add, description="Add two numbers.")
    with ChatServer() as server:
        server.script(Reply.call(("add", {"a": 1, "b": 2})), Reply.text("done"))
        client = OpenAIChatCompletionClient(model="gpt-4o", base_url=server.base_url, api_key=FAKE_KEY)
        messages = [UserMessage(content="1 + 2?", source="user")]
        result = await client.create(messages, tools=[tool], tool_choice=tool)
        assert isinstance(result.content, list) and result.content[0].name == "add"
        body = server.requests[0].body
        assert body["tool_choice"] == {"type": "function", "function": {"name": "add"}}
        assert body["tools"][0]["function"]["parameters"] == tool.schema["parameters"]
        chunks = [item async for item in client.create_stream(messages, tools=[tool.schema], tool_choice="none")]
        assert chunks[-1].content == "done" and server.requests[1].body["tool_choice"] == "none"
        await client.close()


async def test_create_refuses_a_tool_choice_not_among_the_tools_as_autogen() -> None:
    client = ReplayChatCompletionClient(["x"])
    other = FunctionTool(weather, description="d")
    messages = [UserMessage(content="hi", source="user")]
    with pytest.raises(ValueError, match="tool_choice references 'weather' but it's not in the provided tools"):
        await client.create(messages, tools=[FunctionTool(add, description="d")], tool_choice=other)
    with pytest.raises(ValueError, match="tool_choice specified but no tools provided"):
        await client.create(messages, tool_choice=other)
    with pytest.raises(TypeError, match=r"create: tools\[0\] must be a tool or a tool schema"):
        await client.create(messages, tools=[3])  # type: ignore[list-item]


# --------------------------------------------------------------------------- dict schemas from a workbench


class DictWorkbench:
    """A user's workbench (AutoGen's protocol) that lists plain dicts, without ``parameters``."""

    def __init__(self) -> None:
        self.called: list[tuple[str, Any]] = []

    async def list_tools(self) -> list[dict[str, Any]]:
        return [{"name": "ping", "description": "Ping the server."}]

    async def call_tool(
        self, name: str, arguments: Any = None, cancellation_token: Any = None, call_id: str | None = None
    ) -> Any:
        self.called.append((name, arguments))
        return ag_tools.ToolResult(name=name, result=[ag_tools.TextResultContent(content="pong")], is_error=False)


async def test_a_workbench_listing_dicts_without_parameters_gets_its_call_tool_called_over_http() -> None:
    workbench = DictWorkbench()
    with ChatServer() as server:
        server.script(Reply.call(("ping", {})), Reply.text("the server answered"))
        client = OpenAIChatCompletionClient(model="gpt-4o", base_url=server.base_url, api_key=FAKE_KEY)
        agent = AssistantAgent("a", client, workbench=workbench, reflect_on_tool_use=True)
        result = await agent.run(task="ping it")
        await client.close()
    assert workbench.called == [("ping", {})]
    assert result.messages[-1].content == "the server answered"
    offered = server.requests[0].body["tools"][0]["function"]
    assert offered["name"] == "ping" and offered["parameters"] == {"type": "object", "properties": {}}
