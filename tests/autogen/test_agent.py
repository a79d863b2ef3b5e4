"""One AutoGen AssistantAgent recorded by nbagent.autogen: the rows nbagent's own agents give."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import TaskResult
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.messages import TextMessage as AgTextMessage
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_ext.models.replay import ReplayChatCompletionClient

import nbagent
import nbagent.autogen as na
from nbagent import Trace
from nbagent.autogen.client import RecordingClient
from nbagent.records import LLMCall, RunFinished, RunStarted, ToolExecution

from ..frames import assert_frame_equal
from .helpers import INFO, model_client, replay, tool_agent

CHUNK = "ModelClientStreamingChunkEvent"


async def test_run_returns_autogens_task_result_and_records_every_item_in_order() -> None:
    agent = tool_agent()
    trace = Trace()
    result = await na.run(agent, "Weather in Paris and Rome?", trace=trace)

    assert isinstance(result, TaskResult)
    assert [type(m).__name__ for m in result.messages] == [
        "TextMessage", "ToolCallRequestEvent", "ToolCallExecutionEvent", "TextMessage",
    ]  # fmt: skip
    events = trace.events_df()
    kinds = [kind for kind in events["kind"] if kind != CHUNK]
    assert kinds == [
        "RunStarted", "LLMCall", "ToolCallRequestEvent", "ToolExecution", "ToolExecution",
        "ToolCallExecutionEvent", "LLMCall", "Response", "RunFinished",
    ]  # fmt: skip
    assert events["run_id"].nunique() == 1
    assert set(events["agent"]) == {"forecaster"}
    assert list(events["seq"]) == list(range(len(events)))
    # The streamed answer: one chunk row per piece, between its LLMCall and the Response, with the ids
    # of AutoGen's own chunk events and the id of the message they build.
    chunks = events[events["kind"] == CHUNK]
    assert "".join(chunks["text"]) == "Sunny in Paris and in Rome."
    assert list(chunks.index) == list(range(7, 7 + len(chunks)))
    answer = result.messages[-1]
    assert set(chunks["message_id"]) == {answer.id}
    response = events[events["kind"] == "Response"].iloc[0]
    assert (response["event_id"], response["source"], response["text"]) == (answer.id, "forecaster", answer.content)
    request = events[events["kind"] == "ToolCallRequestEvent"].iloc[0]
    assert request["event_id"] == result.messages[1].id
    assert request["prompt_tokens"] == 10 and request["completion_tokens"] == 5


async def test_llm_calls_tool_calls_and_runs_rows() -> None:
    agent = tool_agent()
    trace = Trace()
    await na.run(agent, "Weather in Paris and Rome?", trace=trace)

    llm = trace.llm_calls_df()
    assert list(llm["agent"]) == ["forecaster", "forecaster"]
    assert list(llm["purpose"]) == ["initial", "reflection"]
    assert list(llm["iteration"]) == [0, 0]
    assert list(llm["n_tools"]) == [1, 0]
    assert list(llm["tool_choice"]) == ["auto", "none"]
    assert list(llm["n_messages"]) == [2, 4]  # system + task; then + the calls and their results
    assert list(llm["streaming"]) == [True, True]
    assert list(llm["provider"]) == ["autogen.replay", "autogen.replay"]
    assert list(llm["status"]) == ["ok", "ok"]
    assert pd.isna(llm["ttft_s"].iloc[0])  # tool calls only: no text chunk
    assert 0 <= llm["ttft_s"].iloc[1] <= llm["duration_s"].iloc[1]
    assert llm["response_text"].iloc[0] == 'weather({"city": "Paris"})\nweather({"city": "Rome"})'
    assert llm["completion_tokens"].iloc[0] == 5

    tools = trace.tool_calls_df()
    assert list(tools["call_id"]) == ["c1", "c2"]
    assert list(tools["result"]) == ["Sunny in Paris", "Sunny in Rome"]
    assert list(tools["batch_size"]) == [2, 2]
    assert list(tools["is_error"]) == [False, False]
    assert list(tools["arguments"]) == [{"city": "Paris"}, {"city": "Rome"}]
    assert (tools["duration_s"] >= 0).all()
    assert list(tools["concurrent_with"]) == [2, 2]  # AutoGen runs a batch together

    runs = trace.runs_df()
    row = runs.iloc[0]
    assert len(runs) == 1
    assert (row["agent"], row["status"], row["task"]) == ("forecaster", "ok", "Weather in Paris and Rome?")
    assert (row["final_type"], row["final_text"]) == ("TextMessage", "Sunny in Paris and in Rome.")
    assert (row["n_llm_calls"], row["n_tool_calls"], row["n_tool_errors"]) == (2, 2, 0)
    assert row["n_chunks"] == 6
    assert row["prompt_tokens"] == llm["prompt_tokens"].sum()


async def test_context_at_each_item_and_the_request_the_client_saw() -> None:
    agent = tool_agent()
    trace = Trace()
    await na.run(agent, "Weather in Paris and Rome?", trace=trace)
    events = trace.events_df(include_chunks=False)
    run_id = events["run_id"].iloc[0]

    def context_at(kind: str) -> list[str]:
        seq = int(events[events["kind"] == kind]["seq"].iloc[0])
        return list(trace.context_df(run_id, seq)["kind"])

    assert context_at("RunStarted") == []
    assert context_at("ToolCallRequestEvent") == ["user", "assistant"]
    assert context_at("ToolCallExecutionEvent") == ["user", "assistant", "tool_result"]
    assert context_at("Response") == ["user", "assistant", "tool_result", "assistant"]
    final = trace.context_df(run_id)
    assert list(final["text"]) == [
        "Weather in Paris and Rome?",
        'weather({"city": "Paris"})\nweather({"city": "Rome"})',
        "Sunny in Paris\nSunny in Rome",
        "Sunny in Paris and in Rome.",
    ]
    request = trace.request_df(run_id, 1)  # the reflection call: what the wrapped client was sent
    assert list(request["kind"]) == ["system", "user", "assistant", "tool_result"]
    # AutoGen's context after the run is what the trace's last snapshot holds.
    held = await agent.model_context.get_messages()
    assert [message.content for message in held][0] == "Weather in Paris and Rome?"
    assert len(held) == len(final)


async def test_the_same_columns_and_dtypes_as_nbagents_own_agents() -> None:
    trace = Trace()
    await na.run(tool_agent(), "Weather?", trace=trace)
    own = nbagent.AssistantAgent("own", nbagent.ReplayChatCompletionClient(["hi"]))
    await own.run(task="hello")
    for name in ("events_df", "llm_calls_df", "tool_calls_df", "runs_df", "context_df"):
        mine, theirs = getattr(trace, name)(), getattr(own.trace, name)()
        assert list(mine.columns) == list(theirs.columns), name
        assert list(mine.dtypes.astype(str)) == list(theirs.dtypes.astype(str)), name


async def test_exports_work_unchanged(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    trace = Trace()
    await na.run(tool_agent(), "Weather in Paris and Rome?", trace=trace)
    loaded = nbagent.load_parquet(trace.to_parquet(tmp_path / "parquet"))
    for name in ("events_df", "llm_calls_df", "tool_calls_df", "runs_df"):
        assert_frame_equal(getattr(loaded, name)(), getattr(trace, name)())
    run_id = trace.runs_df()["run_id"].iloc[0]
    assert_frame_equal(loaded.context_df(run_id, 2), trace.context_df(run_id, 2))
    lines = nbagent.load_jsonl(trace.to_jsonl(tmp_path / "trace.jsonl"))
    assert_frame_equal(lines.runs_df(), trace.runs_df())
    spans = trace.to_otlp_json()["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert sorted(span["name"] for span in spans) == [
        "chat ReplayChatCompletionClient", "chat ReplayChatCompletionClient",
        "execute_tool weather", "execute_tool weather", "invoke_agent forecaster",
    ]  # fmt: skip


class _KeyedReplay(ReplayChatCompletionClient):
    """A replay client whose component config holds an API key (one no secret pattern matches)."""

    def dump_component(self) -> Any:
        return SimpleNamespace(config={"model": "replay", "api_key": PLAIN_KEY})


PLAIN_KEY = "plain" + "-key-value-42"  # made at run time: no key-shaped literal in the source


@pytest.mark.parametrize("team", [False, True], ids=["agent", "team"])
async def test_the_clients_key_stays_masked_once_the_run_and_its_agents_are_gone(team: bool) -> None:
    agent = AssistantAgent("keeper", _KeyedReplay([f"the key is {PLAIN_KEY}"], model_info=INFO))
    runnable = RoundRobinGroupChat([agent], termination_condition=MaxMessageTermination(2)) if team else agent
    trace = Trace()
    await na.run(runnable, f"say {PLAIN_KEY}", trace=trace)
    del agent, runnable
    gc.collect()  # the run's sources, held weakly by the trace, are gone: only what the trace kept masks the key
    # recorded, unredacted, in the live items (whose reprs mask it)
    assert any(PLAIN_KEY in getattr(getattr(item, "chat_message", item), "content", "") for item in trace.items)
    runs = trace.runs_df()
    assert runs["task"].tolist()[-1] == "say [REDACTED]"
    assert runs["final_text"].dropna().tolist()[-1] == "the key is [REDACTED]"
    assert not trace.events_df()["text"].str.contains(PLAIN_KEY).any()


async def test_the_agents_own_client_and_context_are_back_after_the_run() -> None:
    agent = tool_agent()
    client, context = model_client(agent), agent.model_context
    run = na.iter(agent, "Weather?", trace=Trace())
    async for item in run:
        if isinstance(item, LLMCall):  # during the run: the recording ones
            assert isinstance(model_client(agent), RecordingClient)
            assert model_client(agent).inner is client
    assert model_client(agent) is client and agent.model_context is context


async def test_an_unstreamed_agent_and_a_second_run_into_the_same_trace() -> None:
    agent = AssistantAgent("plain", replay("First answer.", "Second answer."))
    trace = Trace()
    await na.run(agent, "one", trace=trace)
    await na.run(agent, AgTextMessage(content="two", source="me"), trace=trace)
    runs = trace.runs_df()
    assert list(runs["task"]) == ["one", "two"]
    assert list(runs["final_text"]) == ["First answer.", "Second answer."]
    llm = trace.llm_calls_df()
    assert list(llm["streaming"]) == [False, False] and llm["ttft_s"].isna().all()
    assert list(llm["n_messages"]) == [2, 4]  # the second run's request holds the first run
    # The answer's message id is the call's (AutoGen draws it; the TextMessage carries it).
    events = trace.events_df()
    responses = events[events["kind"] == "Response"]
    assert list(llm["message_id"]) == list(responses["event_id"])
    second = runs["run_id"].iloc[1]
    assert list(trace.context_df(second, 0)["text"]) == ["one", "First answer."]  # at its RunStarted
    assert list(trace.context_df(second)["text"]) == ["one", "First answer.", "two", "Second answer."]


async def test_iter_yields_nbagent_items_and_the_default_trace() -> None:
    agent = tool_agent()
    run = na.iter(agent, "Weather?")
    items = [item async for item in run]
    assert isinstance(items[0], RunStarted) and isinstance(items[-1], RunFinished)
    assert sum(isinstance(item, ToolExecution) for item in items) == 2
    chunks = [item for item in items if type(item).__name__ == CHUNK]
    assert isinstance(chunks[0], nbagent.ModelClientStreamingChunkEvent) and chunks[0].source == "forecaster"
    assert run.result is not None and run.status == "ok"
    assert len(na.trace_of(agent).runs_df()) == 1


async def test_step_mode_waits_before_each_model_call_until_the_next_item_is_asked_for() -> None:
    agent = tool_agent(stream=False)
    inner = model_client(agent)
    run = na.iter(agent, "Weather?", trace=Trace(), step=True)
    seen = []
    async for item in run:
        if isinstance(item, LLMCall):
            seen.append(len(inner.create_calls))  # type: ignore[attr-defined]  # the replay client's log
            assert item.duration_s is None  # not sent yet: the run waits for the consumer
    assert seen == [0, 1]


@pytest.mark.subprocess
def test_importing_nbagent_autogen_imports_no_autogen_and_is_autogen_needs_none() -> None:
    code = textwrap.dedent(
        """
        import sys
        import nbagent, nbagent.autogen
        assert not nbagent.autogen.is_autogen(object())
        print(sorted(m for m in sys.modules if m.startswith("autogen")))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_is_autogen_tells_agents_and_teams() -> None:
    from .helpers import round_robin

    team, writer, _ = round_robin()
    assert na.is_autogen(team) and na.is_autogen(writer)
    assert not na.is_autogen(nbagent.AssistantAgent("own", nbagent.ReplayChatCompletionClient(["hi"])))


async def test_structured_output_and_memory_events_convert() -> None:
    from autogen_core.memory import ListMemory, MemoryContent, MemoryMimeType
    from pydantic import BaseModel

    class Forecast(BaseModel):
        city: str
        sky: str

    memory = ListMemory()
    await memory.add(MemoryContent(content="The user lives in Oslo.", mime_type=MemoryMimeType.TEXT))
    agent = AssistantAgent(
        "structured", replay('{"city": "Oslo", "sky": "sunny"}'), output_content_type=Forecast, memory=[memory]
    )
    trace = Trace()
    result = await na.run(agent, "Forecast?", trace=trace)
    assert type(result.messages[-1]).__name__.startswith("StructuredMessage[")
    responses = [item for item in trace.items if isinstance(item, nbagent.Response)]
    assert isinstance(responses[0].chat_message, nbagent.StructuredMessage)
    assert responses[0].chat_message.content == Forecast(city="Oslo", sky="sunny")
    events = trace.events_df(include_chunks=False)
    assert list(events["kind"]) == ["RunStarted", "MemoryQueryEvent", "LLMCall", "Response", "RunFinished"]
    assert events[events["kind"] == "MemoryQueryEvent"]["text"].iloc[0] == "The user lives in Oslo."
    final_type = trace.runs_df()["final_type"].iloc[0]  # AutoGen's type string: the class's name
    assert final_type.startswith("StructuredMessage[") and final_type.endswith(".Forecast]")
    # The memory's system message is in the context from the MemoryQueryEvent on.
    seq = int(events[events["kind"] == "MemoryQueryEvent"]["seq"].iloc[0])
    assert list(trace.context_df(events["run_id"].iloc[0], seq)["kind"]) == ["user", "system"]


async def test_parallel_tool_calls_share_the_batch_duration_as_the_columns_say() -> None:
    from nbagent import TRACE_COLUMNS

    trace = Trace()
    await na.run(tool_agent(), "Weather in Paris and Rome?", trace=trace)
    tools = trace.tool_calls_df()
    assert list(tools["batch_size"]) == [2, 2] and tools["duration_s"].nunique() == 1
    assert "share the batch's duration" in str(TRACE_COLUMNS["tool_calls"]["duration_s"])
