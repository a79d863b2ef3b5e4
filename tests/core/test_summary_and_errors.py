"""The tool-call summary (format placeholders, formatter) and tool errors, which never raise out of run()."""

from __future__ import annotations

import pytest

from nbagent import AssistantAgent, FunctionCall, FunctionExecutionResult, ReplayChatCompletionClient

from .helpers import U_GO, a_calls, add, calls, context, ferm, kinds

ADD_12 = ("c1", "add", '{"a": 1, "b": 2}')


async def boom(x: str) -> str:
    raise RuntimeError(f"kaboom {x}")


async def summary(fmt: str, script_calls: tuple = (ADD_12,)) -> str:
    agent = AssistantAgent(
        "agent", ReplayChatCompletionClient([calls(*script_calls)]), tools=[add, boom], tool_call_summary_format=fmt
    )
    result = await agent.run(task="go")
    return result.messages[-1].content


@pytest.mark.parametrize(
    ("fmt", "expected"),
    [
        ("{tool_name}", "add"),
        ("{arguments}", '{"a": 1, "b": 2}'),
        ("{result}", "3"),
        ("{is_error}", "False"),
        ("[{tool_name}] {result} (is_error={is_error}) {arguments}", '[add] 3 (is_error=False) {"a": 1, "b": 2}'),
    ],
)
async def test_summary_placeholders(fmt: str, expected: str) -> None:
    assert await summary(fmt) == expected


async def test_summary_is_error_true_and_lines_joined() -> None:
    text = await summary("{tool_name}:{is_error}:{result}", (ADD_12, ("c2", "boom", '{"x": "1"}')))
    assert text == "add:False:3\nboom:True:Error: RuntimeError: kaboom 1"


async def test_summary_of_last_batch_only() -> None:
    script = [calls(ADD_12), calls(("c2", "add", '{"a": 3, "b": 4}'))]
    agent = AssistantAgent("agent", ReplayChatCompletionClient(script), tools=[add], max_tool_iterations=2)
    result = await agent.run(task="go")
    assert result.messages[-1].content == "7"
    assert [c.id for c in result.messages[-1].tool_calls] == ["c2"]
    assert [r.content for r in result.messages[-1].results] == ["7"]


async def test_summary_formatter_overrides_format() -> None:
    seen: list[tuple[FunctionCall, FunctionExecutionResult]] = []

    def formatter(call: FunctionCall, result: FunctionExecutionResult) -> str:
        seen.append((call, result))
        return f"{call.name}#{call.id}->{result.content}"

    agent = AssistantAgent(
        "agent",
        ReplayChatCompletionClient([calls(ADD_12, ("c2", "add", '{"a": 2, "b": 2}'))]),
        tools=[add],
        tool_call_summary_format="ignored {result}",
        tool_call_summary_formatter=formatter,
    )
    result = await agent.run(task="go")
    assert result.messages[-1].content == "add#c1->3\nadd#c2->4"
    assert [(c.id, r.call_id) for c, r in seen] == [("c1", "c1"), ("c2", "c2")]


async def test_error_results_exception_unknown_bad_json_schema() -> None:
    script = [
        calls(
            ("c1", "boom", '{"x": "1"}'),
            ("c2", "nope", "{}"),
            ("c3", "add", "not json"),
            ("c4", "add", '{"a": "x", "b": 2}'),
            ("c5", "add", '{"a": 1}'),
            ("c6", "add", "[1, 2]"),
            ("c7", "add", '{"a": 1, "b": 2}'),
        )
    ]
    agent = AssistantAgent("agent", ReplayChatCompletionClient(script), tools=[add, boom])
    result = await agent.run(task="go")
    assert kinds(result.messages) == [
        "TextMessage",
        "ToolCallRequestEvent",
        "ToolCallExecutionEvent",
        "ToolCallSummaryMessage",
    ]
    got = [(r.call_id, r.content, r.is_error) for r in result.messages[2].content]
    assert got == [
        ("c1", "Error: RuntimeError: kaboom 1", True),
        ("c2", "Error: tool 'nope' not found in any workbench", True),
        ("c3", "Error: arguments for tool 'add' are not valid JSON: Expecting value: line 1 column 1 (char 0)", True),
        (
            "c4",
            "Error: arguments for tool 'add' do not match its schema: a: Input should be a valid integer, "
            "unable to parse string as an integer",
            True,
        ),
        ("c5", "Error: arguments for tool 'add' do not match its schema: b: Field required", True),
        ("c6", "Error: arguments for tool 'add' must be a JSON object, got list", True),
        ("c7", "3", False),
    ]
    assert context(agent)[2] == ferm(
        *[(c, "boom" if i == "c1" else "nope" if i == "c2" else "add", i, e) for i, c, e in got]
    )


async def test_error_result_loop_goes_on() -> None:
    script = [calls(("c1", "boom", '{"x": "2"}')), "recovered"]
    agent = AssistantAgent("agent", ReplayChatCompletionClient(script), tools=[boom], max_tool_iterations=2)
    result = await agent.run(task="go")
    assert result.messages[-1].content == "recovered"
    assert context(agent)[:3] == [
        U_GO,
        a_calls(("c1", "boom", '{"x": "2"}')),
        ferm(("Error: RuntimeError: kaboom 2", "boom", "c1", True)),
    ]


async def test_exception_without_message_gives_its_type() -> None:
    async def silent() -> str:
        raise KeyError

    agent = AssistantAgent("agent", ReplayChatCompletionClient([calls(("c1", "silent", "{}"))]), tools=[silent])
    result = await agent.run(task="go")
    assert (result.messages[2].content[0].content, result.messages[2].content[0].is_error) == ("Error: KeyError", True)
