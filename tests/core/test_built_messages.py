"""The loop's own messages, built without validation: the same objects validation builds, and one
shared fields-set per class (so a run kept in a trace holds no set per message)."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
import sys
from enum import StrEnum

import pytest
from pydantic import ValidationError

from nbagent import (
    AssistantAgent,
    FunctionCall,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    FunctionTool,
    ModelRequest,
    ReplayChatCompletionClient,
    RequestUsage,
    Response,
    TextMessage,
    ThoughtEvent,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
)
from nbagent.messages import (
    AssistantMessage,
    CreateResult,
    UserMessage,
    agent_message,
    assistant_message,
    function_call,
    share_fields_set,
    tool_result,
    tool_results_message,
    usage,
    user_message,
)

CALL = FunctionCall(id="c1", name="add", arguments='{"a": 1, "b": 2}')
RESULT = FunctionExecutionResult(content="3", name="add", call_id="c1")
USAGE = RequestUsage(prompt_tokens=5, completion_tokens=2)


def _shared(cls: type) -> set[str]:
    """The fields-set every built message of ``cls`` shares (as one more built of it shows)."""
    return {
        UserMessage: lambda: user_message("", ""),
        AssistantMessage: lambda: assistant_message("", "", None),
        FunctionExecutionResultMessage: lambda: tool_results_message([]),
        ToolCallRequestEvent: lambda: agent_message(ToolCallRequestEvent, [], ""),
        ToolCallExecutionEvent: lambda: agent_message(ToolCallExecutionEvent, [], ""),
        TextMessage: lambda: agent_message(TextMessage, "", ""),
    }[cls]().model_fields_set


def _same(built: object, validated: object) -> None:
    assert type(built) is type(validated)
    assert built == validated
    assert repr(built) == repr(validated)
    assert built.model_dump() == validated.model_dump()  # type: ignore[attr-defined]
    assert built.model_dump_json() == validated.model_dump_json()  # type: ignore[attr-defined]
    assert built.model_fields_set == set(type(built).model_fields)  # type: ignore[attr-defined]


@pytest.mark.parametrize("cls", [TextMessage, ThoughtEvent])
def test_agent_message_of_text_is_the_validated_message(cls: type) -> None:
    built = agent_message(cls, "It is sunny.", "bench", USAGE, "m1")
    _same(built, cls(id="m1", created_at=built.created_at, content="It is sunny.", source="bench", models_usage=USAGE))
    fresh = agent_message(cls, "x", "bench")
    assert fresh.id and fresh.id != built.id and fresh.models_usage is None and fresh.metadata == {}
    assert fresh.created_at.utcoffset() is not None and fresh.created_at.utcoffset().total_seconds() == 0


@pytest.mark.parametrize(("cls", "item"), [(ToolCallRequestEvent, CALL), (ToolCallExecutionEvent, RESULT)])
def test_agent_message_of_a_list_holds_its_own_copy(cls: type, item: object) -> None:
    items = [item]
    built = agent_message(cls, items, "bench")
    _same(built, cls(id=built.id, created_at=built.created_at, content=[item], source="bench"))
    assert built.content is not items and built.content[0] is item  # as validation: a new list, the same items
    items.append(item)
    assert len(built.content) == 1


def test_llm_side_builders_are_the_validated_messages() -> None:
    calls = [CALL]
    _same(assistant_message(calls, "bench", None), AssistantMessage(content=[CALL], source="bench"))
    assert assistant_message(calls, "bench", None).content is not calls
    _same(assistant_message("done", "bench", "why"), AssistantMessage(content="done", thought="why", source="bench"))
    _same(user_message("go", "user"), UserMessage(content="go", source="user"))
    _same(tool_result("3", "add", "c1"), RESULT)
    _same(
        tool_result("boom", "add", "c1", True),
        FunctionExecutionResult(content="boom", name="add", call_id="c1", is_error=True),
    )
    results = [RESULT]
    _same(tool_results_message(results), FunctionExecutionResultMessage(content=[RESULT]))
    assert tool_results_message(results).content is not results
    _same(usage(5, 2), USAGE)
    _same(function_call("c1", "add", '{"a": 1, "b": 2}'), CALL)
    assert USAGE + USAGE == RequestUsage(prompt_tokens=10, completion_tokens=4)


def test_built_messages_behave_as_pydantic_models() -> None:
    message = agent_message(TextMessage, "hi", "bench")
    other = agent_message(TextMessage, "ho", "bench")
    message.metadata = {"k": "v"}  # assignment adds a name to the shared set: already there
    assert other.model_fields_set == set(TextMessage.model_fields)
    copy = message.model_copy(update={"content": "changed"})
    assert (copy.content, message.content) == ("changed", "hi")
    assert copy.model_fields_set is not message.model_fields_set  # model_copy copies the set
    assert TextMessage.model_validate_json(message.model_dump_json()) == message
    assert json.loads(message.model_dump_json())["type"] == "TextMessage"


def test_share_fields_set_keeps_the_validated_values() -> None:
    result = CreateResult(finish_reason="function_calls", content=[CALL], usage=USAGE)
    same = CreateResult(finish_reason="function_calls", content=[CALL], usage=USAGE)
    assert share_fields_set(result) is result
    assert result == same and result.model_dump() == same.model_dump()
    assert result.model_fields_set == set(CreateResult.model_fields)
    assert share_fields_set(same).model_fields_set is result.model_fields_set


async def test_a_run_keeps_no_fields_set_of_its_own() -> None:
    """Every message a run built (its context, its task, events and answer) shares its class's one
    fields-set: a run kept in a trace holds no set per message for the garbage collector to scan."""

    def add(a: int, b: int) -> int:
        return a + b

    script = [CreateResult(finish_reason="function_calls", content=[CALL]), "3 it is"] * 2
    agent = AssistantAgent("a", ReplayChatCompletionClient(script), tools=[FunctionTool(add)], reflect_on_tool_use=True)
    said = []
    for task in ("add", "again"):
        said += (await agent.run(task=task)).messages
    built = [*agent.model_context.messages, *said]
    kinds = {type(message) for message in built}
    assert kinds == {
        UserMessage, AssistantMessage, FunctionExecutionResultMessage, TextMessage, ToolCallRequestEvent,
        ToolCallExecutionEvent,
    }  # fmt: skip
    assert len(built) == 16
    shared = {kind: _shared(kind) for kind in kinds}
    for message in built:
        assert message.model_fields_set is shared[type(message)], message
    results = [
        part for message in built if isinstance(message, FunctionExecutionResultMessage) for part in message.content
    ]
    assert {id(result.model_fields_set) for result in results} == {id(tool_result("", "", "").model_fields_set)}


class Color(StrEnum):
    RED = "red"


def test_a_tool_result_of_a_str_subclass_is_a_str_as_validation_makes_it() -> None:
    """A tool's text may be a str subclass (a StrEnum member, numpy's str_): validation made it a plain
    str; the built result is the validated one, and content no str is rejected as validation does."""
    built = tool_result(Color.RED, "pick", "c1")
    assert type(built.content) is str
    _same(built, FunctionExecutionResult(content=Color.RED, name="pick", call_id="c1"))
    with pytest.raises(ValidationError):
        tool_result(42, "pick", "c1")  # type: ignore[arg-type]


async def test_a_tool_returning_a_str_enum_gives_a_plain_str_result() -> None:
    def pick() -> Color:
        return Color.RED

    call = FunctionCall(id="c1", name="pick", arguments="{}")
    script = [CreateResult(finish_reason="function_calls", content=[call]), "red"]
    agent = AssistantAgent("a", ReplayChatCompletionClient(script), tools=[FunctionTool(pick)])
    result = await agent.run(task="pick")
    execution = next(m for m in result.messages if isinstance(m, ToolCallExecutionEvent))
    assert type(execution.content[0].content) is str
    assert repr(execution.content[0]) == repr(FunctionExecutionResult(content="red", name="pick", call_id="c1"))
    assert execution.model_dump()["content"][0]["content"].__class__ is str


def _built_and_validated() -> list[tuple[object, object]]:
    """Pairs of a message the loop builds and the same message validated."""
    text = agent_message(TextMessage, "hi", "user", USAGE, "m1")
    return [
        (text, TextMessage(id="m1", created_at=text.created_at, content="hi", source="user", models_usage=USAGE)),
        (usage(5, 2), USAGE),
        (user_message("go", "user"), UserMessage(content="go", source="user")),
        (assistant_message("done", "bench", None), AssistantMessage(content="done", source="bench")),
        (function_call("c1", "add", '{"a": 1, "b": 2}'), CALL),
        (tool_result("3", "add", "c1"), RESULT),
        (
            share_fields_set(CreateResult(finish_reason="stop", content="hi", usage=USAGE)),
            CreateResult(finish_reason="stop", content="hi", usage=USAGE),
        ),
    ]


def test_built_messages_hold_their_values_alone() -> None:
    """A built message's ``__dict__`` shares its keys table with every other of its class (a kept run
    holds about a hundred bytes less a message), and is the validated one's in every other way."""
    for built, validated in _built_and_validated():
        values = built.__dict__
        assert list(values) == list(type(built).model_fields)  # type: ignore[attr-defined]
        assert values == validated.__dict__
        assert sys.getsizeof(values) < sys.getsizeof(validated.__dict__), type(built).__name__
        assert built.model_dump(exclude_unset=True) == validated.model_dump()  # type: ignore[attr-defined]
        assert pickle.loads(pickle.dumps(built)) == built == copy.deepcopy(built) == built.model_copy()  # type: ignore[attr-defined]


def test_a_built_messages_dict_is_its_own() -> None:
    """Changing, adding or deleting a key of one built message's dict changes no other message."""
    first, second = agent_message(TextMessage, "one", "user"), agent_message(TextMessage, "two", "user")
    first.metadata["k"] = "v"
    first.content = "changed"
    object.__setattr__(first, "added", 1)  # a name that is no field: that dict alone gets it
    del first.__dict__["added"]
    first.__dict__["other"] = 2
    assert second.metadata == {} and second.content == "two" and list(second.__dict__) == list(TextMessage.model_fields)
    third = agent_message(TextMessage, "three", "user")
    assert list(third.__dict__) == list(TextMessage.model_fields) and third.metadata == {}
    assert third.metadata is not second.metadata
    assert (first.content, first.metadata, first.__dict__["other"]) == ("changed", {"k": "v"}, 2)
    assert TextMessage.model_validate(second.model_dump()) == second


def test_a_response_and_a_request_hold_no_dict() -> None:
    """The Response a trace keeps of every run, and the request of every LLM call, are slotted (a
    dict of their own was about 40 bytes a run each), and copy and pickle as before."""
    response = Response(chat_message=agent_message(TextMessage, "hi", "a"))
    request = ModelRequest([user_message("go", "user")], [], "auto", None)
    for item in (response, request):
        assert not hasattr(item, "__dict__")
        assert pickle.loads(pickle.dumps(item)) == item == copy.deepcopy(item)
    assert response.inner_messages == [] and dataclasses.replace(response, inner_messages=[]) == response
