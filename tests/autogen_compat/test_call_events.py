"""nbagent's OpenAI client on AutoGen's event logger, as AutoGen 0.7.5's own client (issue 40.5).

AutoGen's tracing and cost tools read ``LLMCallEvent``/``LLMStreamStartEvent``/``LLMStreamEndEvent`` from
the logger ``autogen_core.EVENT_LOGGER_NAME``, and its client warns about an answer's quirks. Over real
HTTP (``tests/models/chat_server.py``) the same answers go to AutoGen's ``OpenAIChatCompletionClient`` and
to nbagent's, and what each logs and warns is compared. Also: AutoGen's ``create_stream`` keywords
(``include_usage``), a pydantic class as ``response_format``, and AutoGen's message classes in
``produced_message_types`` (through the seam's hook, not by class name).
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from autogen_agentchat import messages as ag
from autogen_core import EVENT_LOGGER_NAME
from autogen_core import FunctionCall as AgFunctionCall
from autogen_core.models import UserMessage as AgUserMessage
from autogen_core.tools import FunctionTool as AgFunctionTool
from autogen_ext.models.openai import OpenAIChatCompletionClient as AgOpenAI
from pydantic import BaseModel

from nbagent import (
    AssistantAgent,
    CreateResult,
    FunctionTool,
    HandoffMessage,
    OpenAIChatCompletionClient,
    ReplayChatCompletionClient,
    RequestUsage,
    UserMessage,
)
from nbagent.models.base import CALL_EVENT
from tests.autogen_compat.test_think_streaming import FAKE_KEY, R1_INFO
from tests.models.chat_server import ChatServer, Reply

R1_TOOLS_INFO: dict[str, Any] = {**R1_INFO, "function_calling": True}  # the calls here offer a tool


def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


class Events(logging.Handler):
    """The events AutoGen's event logger receives (their ``kwargs``, as its tools read them)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.events: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        kwargs = getattr(record.msg, "kwargs", None)
        if isinstance(kwargs, dict):
            self.events.append(json.loads(str(record.msg)))


@pytest.fixture
def events() -> Iterator[Events]:
    logger = logging.getLogger(EVENT_LOGGER_NAME)
    handler, level = Events(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


QUIRKS = ("Finish reason mismatch", "Tool call function arguments field", "Could not find <think>")
"""How AutoGen's warnings about an answer's quirks begin (its others, about its model table, are its own)."""


def unnamed(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """AutoGen's messages as sent without their ``name`` (nbagent sends none: "AutoGen compatibility")."""
    return [{key: value for key, value in message.items() if key != "name"} for message in messages]


async def both(
    events: Events, reply: Reply, *, stream: bool, model: str = "gpt-4o", info: dict[str, Any] | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str], list[str], Any, Any]:
    """What AutoGen's client and nbagent's log and warn for ``reply`` (sent to each in turn), and their results."""
    logged: list[list[dict[str, Any]]] = []
    warned: list[list[str]] = []
    results = []
    with ChatServer() as server:
        server.script(reply, reply)
        for client, message, tool in (
            (
                AgOpenAI(model=model, base_url=server.base_url, api_key=FAKE_KEY, model_info=info),  # type: ignore[arg-type]
                AgUserMessage(content="Weather in Paris?", source="user"),
                AgFunctionTool(weather, description="The weather in a city."),
            ),
            (
                OpenAIChatCompletionClient(model, base_url=server.base_url, api_key=FAKE_KEY, model_info=info),  # type: ignore[arg-type]
                UserMessage(content="Weather in Paris?", source="user"),
                FunctionTool(weather),
            ),
        ):
            events.events.clear()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                if stream:
                    stream_args: dict[str, Any] = {"tools": [tool], "include_usage": True}
                    items = [item async for item in client.create_stream([message], **stream_args)]  # type: ignore[list-item]
                    results.append(items[-1])
                else:
                    results.append(await client.create([message], tools=[tool]))  # type: ignore[list-item]
            await client.close()
            logged.append(list(events.events))
            warned.append([str(w.message) for w in caught if str(w.message).startswith(QUIRKS)])
    return logged[0], logged[1], warned[0], warned[1], results[0], results[1]


async def test_a_call_logs_autogens_llm_call_event_with_the_same_fields(events: Events) -> None:
    theirs, ours, _, _, _, result = await both(events, Reply.text("Sunny.", usage=(12, 3)), stream=False)
    assert [event["type"] for event in ours] == [event["type"] for event in theirs] == ["LLMCall"]
    for key in ("prompt_tokens", "completion_tokens", "tools", "agent_id"):
        assert ours[0][key] == theirs[0][key], key
    assert ours[0]["messages"] == unnamed(theirs[0]["messages"])  # the messages each sent
    assert (ours[0]["prompt_tokens"], ours[0]["completion_tokens"]) == (12, 3)
    assert ours[0]["messages"] == [{"role": "user", "content": "Weather in Paris?"}]
    assert ours[0]["tools"][0]["function"]["name"] == "weather"
    assert ours[0]["response"]["choices"][0]["message"]["content"] == "Sunny."
    assert theirs[0]["response"]["choices"][0]["message"]["content"] == "Sunny."
    assert result.content == "Sunny."


async def test_a_stream_logs_autogens_start_and_end_events_with_the_same_fields(events: Events) -> None:
    theirs, ours, _, _, _, result = await both(events, Reply.text("Sunny today.", usage=(7, 2)), stream=True)
    assert [event["type"] for event in ours] == [event["type"] for event in theirs]
    assert [event["type"] for event in ours] == ["LLMStreamStart", "LLMStreamEnd"]
    assert ours[0]["messages"] == unnamed(theirs[0]["messages"]) == [{"role": "user", "content": "Weather in Paris?"}]
    end, their_end = ours[1], theirs[1]
    for key in ("prompt_tokens", "completion_tokens", "agent_id"):
        assert end[key] == their_end[key], key
    for key in ("content", "finish_reason", "usage", "thought", "cached"):
        assert end["response"][key] == their_end["response"][key], key
    assert isinstance(result, CreateResult) and end["response"]["content"] == "Sunny today."


async def test_tool_calls_with_another_finish_reason_warn_autogens_words(events: Events) -> None:
    reply = Reply.call(("weather", {"city": "Paris"}), finish_reason="stop")
    _, _, theirs, ours, their_result, result = await both(events, reply, stream=False)
    assert ours == theirs
    assert ours and ours[0].startswith("Finish reason mismatch: stop != tool_calls when tool_calls are present.")
    assert result.content[0].arguments == their_result.content[0].arguments == '{"city": "Paris"}'


async def test_tool_arguments_given_as_an_object_warn_autogens_words(events: Events) -> None:
    completion = Reply.call(("weather", {"city": "Paris"})).completion("gpt-4o")
    function = completion["choices"][0]["message"]["tool_calls"][0]["function"]
    function["arguments"] = {"city": "Paris"}
    _, _, theirs, ours, their_result, result = await both(events, Reply(body=completion), stream=False)
    assert ours == theirs
    assert ours and ours[0].startswith("Tool call function arguments field is not a string: {'city': 'Paris'}.")
    assert result.content[0].arguments == their_result.content[0].arguments == '{"city": "Paris"}'


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
async def test_an_r1_answer_without_think_warns_autogens_words(events: Events, stream: bool) -> None:
    _, _, theirs, ours, _, result = await both(
        events, Reply.text("Five."), stream=stream, model="r1", info=R1_TOOLS_INFO
    )
    assert (
        ours
        == theirs
        == ["Could not find <think>..</think> field in model response content. No thought was extracted."]
    )
    assert (result.content, result.thought) == ("Five.", None)


async def test_an_ordinary_answer_warns_nothing(events: Events) -> None:
    _, _, theirs, ours, _, _ = await both(events, Reply.call(("weather", {"city": "Paris"})), stream=True)
    assert ours == theirs == []


async def test_nothing_is_logged_or_warned_while_autogen_is_not_imported(
    events: Events, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The seam's listener reads ``sys.modules``: without AutoGen's modules there, it does nothing."""
    monkeypatch.delitem(sys.modules, "autogen_core.logging")
    reply = Reply.call(("weather", {"city": "Paris"}), finish_reason="stop")
    _, ours, _, warned, _, result = await both(events, reply, stream=False)
    assert ours == [] and warned == []
    assert result.finish_reason == "function_calls"
    assert CALL_EVENT  # the listener is registered all the same


async def test_include_usage_is_autogens_keyword_of_create_stream() -> None:
    with ChatServer() as server:
        server.script(Reply.text("Sunny.", usage=(7, 2)), Reply.text("Sunny.", usage=(7, 2)))
        client = OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url, api_key=FAKE_KEY)
        message = UserMessage(content="Weather?", source="user")
        items = [item async for item in client.create_stream([message], include_usage=True)]
        assert items[-1].usage.prompt_tokens == 7  # type: ignore[union-attr]
        assert server.requests[-1].body["stream_options"] == {"include_usage": True}
        items = [item async for item in client.create_stream([message], include_usage=False)]
        assert server.requests[-1].body["stream_options"] == {"include_usage": False}
        assert items[-1].usage.prompt_tokens == 0  # type: ignore[union-attr]
        with pytest.raises(ValueError, match="include_usage and extra_create_args"):
            client.create_stream(
                [message], include_usage=True, extra_create_args={"stream_options": {"include_usage": False}}
            )
        with pytest.warns(DeprecationWarning, match="max_consecutive_empty_chunk_tolerance"):
            client.create_stream([message], max_consecutive_empty_chunk_tolerance=3)
        assert len(server.requests) == 2
        await client.close()


async def test_a_pydantic_class_as_response_format_is_taken_as_autogen_takes_it() -> None:
    class Weather(BaseModel):
        city: str
        sky: str

    answer = '{"city": "Paris", "sky": "clear"}'
    with ChatServer() as server:
        server.script(Reply.text(answer), Reply.text(answer))
        results = []
        for client, message in (
            (
                AgOpenAI(model="gpt-4o", base_url=server.base_url, api_key=FAKE_KEY),
                AgUserMessage(content="?", source="u"),
            ),
            (
                OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url, api_key=FAKE_KEY),
                UserMessage(content="?", source="u"),
            ),
        ):
            with pytest.warns(DeprecationWarning, match="Using response_format to specify the BaseModel"):
                results.append(await client.create([message], extra_create_args={"response_format": Weather}))  # type: ignore[list-item]
            await client.close()
        theirs, ours = (request.body["response_format"] for request in server.requests)
    assert ours["type"] == theirs["type"] == "json_schema"
    assert ours["json_schema"]["name"] == theirs["json_schema"]["name"] == "Weather"
    assert ours["json_schema"]["schema"] == theirs["json_schema"]["schema"]
    assert results[0].content == results[1].content == answer


def test_autogens_message_classes_are_found_among_produced_types_through_the_seam() -> None:
    agent = AssistantAgent("a", model_client=ReplayChatCompletionClient(["x"]))
    produced = agent.produced_message_types
    assert ag.HandoffMessage in produced and ag.TextMessage in produced and HandoffMessage in produced
    assert ag.StopMessage not in produced  # AutoGen's, but not one this agent produces

    class HandoffMessage2(BaseModel):  # a class of another library whose name matches nbagent's
        pass

    HandoffMessage2.__name__ = "HandoffMessage"
    assert HandoffMessage2 not in produced
    assert AgFunctionCall not in produced


async def test_a_call_under_autogens_team_names_the_agent_as_autogens_client_does(events: Events) -> None:
    """Inside AutoGen's runtime (its ``AssistantAgent`` in a team, nbagent's client) the event names the agent."""
    from autogen_agentchat.agents import AssistantAgent as AgAssistantAgent
    from autogen_agentchat.conditions import MaxMessageTermination
    from autogen_agentchat.teams import RoundRobinGroupChat

    ids = []
    with ChatServer() as server:
        server.script(Reply.text("Sunny."), Reply.text("Sunny."))
        for client in (
            AgOpenAI(model="gpt-4o", base_url=server.base_url, api_key=FAKE_KEY),
            OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url, api_key=FAKE_KEY),
        ):
            events.events.clear()
            agent = AgAssistantAgent("forecaster", model_client=client)  # type: ignore[arg-type]
            team = RoundRobinGroupChat([agent], termination_condition=MaxMessageTermination(2))
            await team.run(task="Weather?")
            await client.close()
            ids += [event["agent_id"] for event in events.events if event["type"] == "LLMCall"]
    assert len(ids) == 2 and all(ids)
    # "<agent type>_<team id>/<key>": the agent's name, then the team's id
    assert [agent_id.split("/")[0].rsplit("_", 1)[0] for agent_id in ids] == ["forecaster", "forecaster"]


async def test_the_clients_stream_options_are_autogens_switch_and_only_for_streams() -> None:
    """``stream_options={"include_usage": False}`` given to the client (AutoGen's documented switch) turns
    fix 11's request off, as AutoGen's client honours it; a call answered at once is sent no
    ``stream_options`` (OpenAI's API answers 400 to it without ``stream``, where AutoGen's client sends it)."""
    off = {"stream_options": {"include_usage": False}}
    with ChatServer() as server:
        server.script(*[Reply.text("Sunny.", usage=(7, 2))] * 3)
        ours = OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url, api_key=FAKE_KEY, **off)
        theirs = AgOpenAI(model="gpt-4o", base_url=server.base_url, api_key=FAKE_KEY, **off)  # type: ignore[arg-type]
        message = UserMessage(content="Weather?", source="user")
        their_items = [item async for item in theirs.create_stream([AgUserMessage(content="Weather?", source="user")])]
        items = [item async for item in ours.create_stream([message])]
        their_body, body = (request.body for request in server.requests)
        assert body["stream_options"] == their_body["stream_options"] == {"include_usage": False}
        assert items[-1].usage.prompt_tokens == their_items[-1].usage.prompt_tokens == 0  # type: ignore[union-attr]
        result = await ours.create([message])
        assert "stream_options" not in server.requests[-1].body and result.content == "Sunny."
        assert ours.dump_component().config["stream_options"] == {"include_usage": False}
        await ours.close()
        await theirs.close()
    with pytest.raises(TypeError, match="stream_options"):
        OpenAIChatCompletionClient("gpt-4o", api_key=FAKE_KEY, stream_options=False)


async def test_a_tool_call_logs_autogens_tool_call_event_as_autogens_tool_does(events: Events) -> None:
    """AutoGen's tools log ``ToolCallEvent`` (name, arguments, result text) on the event logger when they
    return; nbagent's do too, run by nbagent's agent or by AutoGen's (which takes nbagent's tool)."""
    from autogen_agentchat.agents import AssistantAgent as AgAssistantAgent
    from autogen_core.models import CreateResult as AgCreateResult
    from autogen_core.models import RequestUsage as AgRequestUsage
    from autogen_ext.models.replay import ReplayChatCompletionClient as AgReplay

    def call() -> AgCreateResult:
        calls = [AgFunctionCall(id="c1", name="weather", arguments='{"city": "Paris"}')]
        return AgCreateResult(
            finish_reason="function_calls",
            content=calls,
            usage=AgRequestUsage(prompt_tokens=1, completion_tokens=1),
            cached=False,
        )

    logged = []
    for agent in (
        AgAssistantAgent(
            "ag",
            model_client=AgReplay([call()], model_info=R1_TOOLS_INFO),
            tools=[AgFunctionTool(weather, "The weather.")],
        ),
        AgAssistantAgent(
            "ag", model_client=AgReplay([call()], model_info=R1_TOOLS_INFO), tools=[FunctionTool(weather)]
        ),
        AssistantAgent("nb", model_client=AgReplay([call()], model_info=R1_TOOLS_INFO), tools=[FunctionTool(weather)]),
    ):
        events.events.clear()
        await agent.run(task="Weather in Paris?")
        logged.append([event for event in events.events if event["type"] == "ToolCall"])
    theirs, ours_in_theirs, ours = logged
    assert theirs == ours_in_theirs == ours
    assert theirs == [
        {
            "type": "ToolCall",
            "tool_name": "weather",
            "arguments": {"city": "Paris"},
            "result": "sunny in Paris",
            "agent_id": None,
        }
    ]


async def test_a_stream_tool_logs_one_tool_call_event_with_its_last_value(events: Events) -> None:
    async def count(n: int) -> Any:
        """Counts to n."""
        for i in range(1, n + 1):
            yield i

    tool = FunctionTool(count)
    items = [item async for item in tool.run_json_stream({"n": 3}, None)]
    assert items == [3]  # a streaming function's last value (its events would come before)
    assert [e for e in events.events if e["type"] == "ToolCall"] == [
        {"type": "ToolCall", "tool_name": "count", "arguments": {"n": 3}, "result": "3", "agent_id": None}
    ]


async def test_a_tool_call_of_nbagents_agent_in_autogens_team_names_the_agent(events: Events) -> None:
    from autogen_agentchat.conditions import MaxMessageTermination
    from autogen_agentchat.teams import RoundRobinGroupChat

    call = CreateResult(
        content=[AgFunctionCall(id="c1", name="weather", arguments='{"city": "Paris"}')],
        finish_reason="function_calls",
        usage=RequestUsage(prompt_tokens=0, completion_tokens=0),
        cached=False,
    )
    agent = AssistantAgent("forecaster", model_client=ReplayChatCompletionClient([call]), tools=[weather])
    await RoundRobinGroupChat([agent], termination_condition=MaxMessageTermination(2)).run(task="Weather?")
    [event] = [event for event in events.events if event["type"] == "ToolCall"]
    assert (event["tool_name"], event["result"]) == ("weather", "sunny in Paris")
    assert event["agent_id"].split("/")[0].rsplit("_", 1)[0] == "forecaster"  # "<agent type>_<team id>/<key>"


@pytest.mark.subprocess
def test_tool_calls_have_autogens_logging_listener_only_once_autogen_core_is_imported() -> None:
    """Without AutoGen imported, a tool call has no listener to call (the loop's hot path); importing
    ``autogen_core`` (its event logging) registers it, so the test above logs as AutoGen's tools do."""
    code = "import nbagent.tools as t; print(bool(t.TOOL_RAN)); import autogen_core; print(bool(t.TOOL_RAN))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert done.stdout.split() == ["False", "True"], done.stderr
