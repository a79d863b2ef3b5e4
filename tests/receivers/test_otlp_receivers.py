"""nbagent's OTLP export against real receivers: what MLflow and Phoenix show of a trace, read back
through their own API. Spans arrive with their kinds, tokens and errors; with content on, each run's
request and response; a recorder streams run by run under one conversation id; a mid-run export
sends nothing unfinished."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from nbagent import (
    AssistantAgent,
    CancellationToken,
    CreateResult,
    FunctionCall,
    ReplayChatCompletionClient,
    RequestUsage,
)
from nbagent.trace import OTLPRecorder, Trace
from nbagent.trace.otlp import trace_hex

from .readback import mlflow_traces, phoenix_spans, poll
from .servers import Receiver

pytestmark = pytest.mark.receivers

KEY = "sk-" + "proj-receiverssecret0123456789"  # a fake key, made at run time
SEND_S = 120.0
"""A send's deadline (``to_otlp``'s default is 30 s): MLflow took longer than 30 s to answer its first
request in two CI runs with the two cores at a load average of 13 (a bound against a hang, not a speed)."""


async def get_weather(city: str) -> str:
    """The weather of a city."""
    if city == "Atlantis":
        raise LookupError("no station in Atlantis")
    return f"sunny in {city}"


class KeyedReplay(ReplayChatCompletionClient):
    @property
    def secrets(self) -> tuple[str, ...]:
        return (KEY,)


def weather_agent(*script: str | CreateResult, **kwargs: Any) -> AssistantAgent:
    return AssistantAgent("weather", KeyedReplay(list(script)), tools=[get_weather], **kwargs)


def asks(*cities: str, prompt: int = 40, completion: int = 9) -> CreateResult:
    calls = [FunctionCall(id="call_0", name="get_weather", arguments=json.dumps({"city": c})) for c in cities]
    return CreateResult(
        finish_reason="function_calls",
        content=calls,
        usage=RequestUsage(prompt_tokens=prompt, completion_tokens=completion),
    )


async def tool_run_trace() -> Trace:
    """A run that asks for two cities under one call id (one fails), then reflects; and a run of
    another agent cancelled during its model call."""
    agent = weather_agent(asks("Paris", "Atlantis"), f"Paris is sunny; Atlantis has no station. ({KEY})",
                          reflect_on_tool_use=True)  # fmt: skip
    slow = AssistantAgent("slow", ReplayChatCompletionClient(["too late"], latency=30))
    trace = Trace()
    with trace.recording(agent, slow):
        await agent.run(task="Weather in Paris and Atlantis?")
        token = CancellationToken()
        asyncio.get_running_loop().call_later(0.2, token.cancel)
        with pytest.raises(asyncio.CancelledError):
            await slow.run(task="never answered", cancellation_token=token)
    return trace


def _hexes(trace: Trace) -> list[str]:
    return [trace_hex(str(run)) for run in trace.runs_df()["run_id"]]


async def test_mlflow_reads_kinds_tokens_errors_and_content(mlflow_receiver: Receiver) -> None:
    trace = await tool_run_trace()
    sent = trace.to_otlp(mlflow_receiver.otlp_endpoint, headers=mlflow_receiver.headers, content=True, timeout=SEND_S)
    assert sent == 2 + 3 + 2  # two run spans, three LLM calls (one cancelled), two tool calls
    ok, cancelled = _hexes(trace)
    traces = mlflow_traces(mlflow_receiver, [ok, cancelled])
    first = traces[ok]
    kinds = sorted((str(s.span_type), s.name) for s in first.data.spans)
    assert kinds == [
        ("AGENT", "invoke_agent weather"),
        ("CHAT_MODEL", "chat replay"),
        ("CHAT_MODEL", "chat replay"),
        ("TOOL", "execute_tool get_weather"),
        ("TOOL", "execute_tool get_weather"),
    ]
    assert len({s.span_id for s in first.data.spans}) == 5  # the model's repeated call id makes no collision
    tools = [s for s in first.data.spans if str(s.span_type) == "TOOL"]
    assert sorted(s.status.status_code.value for s in tools) == ["ERROR", "UNSET"]
    usage = json.loads(first.info.trace_metadata["mlflow.trace.tokenUsage"])
    llm = trace.llm_calls_df()
    assert usage["input_tokens"] == int(llm["prompt_tokens"].iloc[:2].sum())
    # MLflow's request and response of a trace: its root span's input.value / output.value
    root = next(s for s in first.data.spans if s.parent_id is None)
    assert root.inputs == json.loads(first.info.request_preview) == "Weather in Paris and Atlantis?"
    response = json.loads(first.info.response_preview)
    assert response.startswith("Paris is sunny") and KEY not in response  # redacted like every output
    assert root.attributes["gen_ai.input.messages"][0]["parts"][0]["content"] == "Weather in Paris and Atlantis?"
    assert traces[cancelled].info.state.value == "ERROR"
    root = next(s for s in traces[cancelled].data.spans if s.parent_id is None)
    assert root.attributes["error.type"] == "CancelledError"


async def test_phoenix_reads_kinds_tokens_errors_and_content(phoenix_receiver: Receiver) -> None:
    trace = await tool_run_trace()
    trace.to_otlp(phoenix_receiver.otlp_endpoint, headers=phoenix_receiver.headers, content=True, timeout=SEND_S)
    ok, cancelled = _hexes(trace)
    spans = phoenix_spans(phoenix_receiver, [ok, cancelled], 6)
    mine = [s for s in spans if s["context"]["trace_id"] == ok]
    assert sorted(s["span_kind"] for s in mine) == ["AGENT", "LLM", "LLM", "TOOL", "TOOL"]
    agent = next(s for s in mine if s["span_kind"] == "AGENT")
    assert agent["attributes"]["input.value"] == "Weather in Paris and Atlantis?"
    assert agent["attributes"]["output.value"].startswith("Paris is sunny")
    assert KEY not in json.dumps(spans)
    first_call = min((s for s in mine if s["span_kind"] == "LLM"), key=lambda s: s["start_time"])
    attrs = first_call["attributes"]
    assert attrs["llm.token_count.prompt"] == 40 and attrs["llm.token_count.completion"] == 9
    assert attrs["llm.input_messages.0.message.role"] == "system"  # gen_ai.system_instructions
    assert attrs["llm.output_messages.0.message.tool_calls.1.tool_call.function.arguments"] == '{"city": "Atlantis"}'
    assert "llm.tools.0.tool.json_schema" in attrs  # gen_ai.tool.definitions
    failed = next(s for s in mine if s["span_kind"] == "TOOL" and s["status_code"] == "ERROR")
    assert "no station in Atlantis" in failed["status_message"]
    root = next(s for s in spans if s["context"]["trace_id"] == cancelled)
    assert root["status_code"] == "ERROR" and root["attributes"]["error.type"] == "CancelledError"


async def test_without_content_no_message_reaches_the_receiver(phoenix_receiver: Receiver) -> None:
    trace = await tool_run_trace()
    trace.to_otlp(phoenix_receiver.otlp_endpoint, timeout=SEND_S)
    spans = phoenix_spans(phoenix_receiver, _hexes(trace), 6)
    text = json.dumps(spans)
    for content in ("Paris and Atlantis?", "Paris is sunny", '"city"', "input.value", "gen_ai.input.messages"):
        assert content not in text  # an error's message still is the span's status message


async def test_a_recorder_streams_each_run_under_one_conversation(receiver: Receiver) -> None:
    script = [asks("Oslo"), "and again", "a third answer"]
    agent = weather_agent(*script)
    recorder = OTLPRecorder(receiver.otlp_endpoint, receiver.headers, content=True, timeout=60).attach(agent)
    run_ids = []
    for task in ("Oslo?", "Again?", "Once more?"):
        await agent.run(task=task)
        run_ids.append(str(agent.trace.runs_df()["run_id"].iloc[-1]))
    assert await asyncio.to_thread(recorder.flush, 180)
    assert recorder.errors == [] and recorder.sent == 3 + 2 + 2  # run, LLM call and tool call; then run and call
    assert len(recorder.trace) < 10  # each run was cleared once sent
    hexes = [trace_hex(r) for r in run_ids]
    if receiver.name == "mlflow":
        traces = mlflow_traces(receiver, hexes)
        sessions = {traces[h].info.trace_metadata.get("mlflow.trace.session") for h in hexes}
        requests = [json.loads(traces[h].info.request_preview) for h in hexes]
        assert requests == ["Oslo?", "Again?", "Once more?"]
    else:
        spans = phoenix_spans(receiver, hexes, 7)
        sessions = {s["attributes"].get("session.id") for s in spans if s["span_kind"] == "AGENT"}
    assert len(sessions) == 1 and None not in sessions


async def test_a_mid_run_export_sends_nothing_unfinished(receiver: Receiver) -> None:
    started = asyncio.Event()
    release = asyncio.Event()

    async def slow(city: str) -> str:
        """A tool that waits to be released."""
        started.set()
        await release.wait()
        return "done"

    agent = AssistantAgent("slow", ReplayChatCompletionClient([asks("x"), "finished"]), tools=[slow])
    agent.model_client.chat_completions[0].content[0].name = "slow"  # type: ignore[attr-defined,index,union-attr]
    task = asyncio.ensure_future(agent.run(task="wait"))
    await started.wait()
    early = agent.trace.to_otlp(receiver.otlp_endpoint, headers=receiver.headers, timeout=SEND_S)
    assert early == 1  # the first LLM call only: the run and the tool call are still running
    release.set()
    await task
    assert agent.trace.to_otlp(receiver.otlp_endpoint, headers=receiver.headers, timeout=SEND_S) == 3
    run_hex = _hexes(agent.trace)[0]
    if receiver.name == "mlflow":
        spans = mlflow_traces(receiver, [run_hex])[run_hex].data.spans
        tool = next(s for s in spans if s.name.startswith("execute_tool"))
        assert tool.end_time_ns - tool.start_time_ns > 0
    else:
        spans = phoenix_spans(receiver, [run_hex], 3)
        assert {s["name"] for s in spans} == {"invoke_agent slow", "chat replay", "execute_tool slow"}


def test_notebook_04_sends_its_trace_to_the_receiver_it_is_given(mlflow_receiver: Receiver, tmp_path: Path) -> None:
    """The notebook's last cell sends the trace when NBAGENT_OTLP_ENDPOINT names a receiver."""
    import mlflow

    from tests.notebooks._kernel import NOTEBOOKS, error_outputs, execute, output_text, this_python, write_kernelspec

    mlflow.set_tracking_uri(mlflow_receiver.base_url)

    def count() -> int:
        return len(mlflow.search_traces(locations=["0"], return_type="list", max_results=5000))

    before = count()
    env = {
        "NBAGENT_OTLP_ENDPOINT": mlflow_receiver.otlp_endpoint,
        "NBAGENT_OTLP_HEADERS": ",".join(f"{k}={v}" for k, v in mlflow_receiver.headers.items()),
    }
    notebook = next(path for path in NOTEBOOKS if path.name == "04_trace_analysis.ipynb")
    nb = execute(notebook, write_kernelspec(tmp_path, this_python(), env), timeout=180)
    assert error_outputs(nb) == []
    sent = [line for line in output_text(nb).splitlines() if line.startswith("sent ")]
    assert sent == [f"sent 81 spans of 23 runs to {mlflow_receiver.otlp_endpoint}"]
    poll(count, lambda n: n == before + 23, "the notebook's 23 runs in MLflow")
