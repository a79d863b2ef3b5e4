"""OTLP export: the payload built with opentelemetry-proto and parsed back strictly; span ids unique
whatever the model sends; only ended work; status UNSET unless error; cancellations; content opt-in
in the GenAI conventions' JSON shapes, redacted; request parameters, response model and id; the
memory query as a span; handoffs linked; one conversation id per conversation; sending over
OTLP/HTTP, and a recorder that sends each run as it ends (to a capturing server on 127.0.0.1; the
real receivers are in tests/receivers)."""

from __future__ import annotations

import asyncio
import base64
import json
import sys
import threading
import warnings
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from google.protobuf.json_format import ParseDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from nbagent import (
    AssistantAgent,
    CreateResult,
    ListMemory,
    MemoryContent,
    ReplayChatCompletionClient,
    RequestUsage,
    Trace,
)
from nbagent.agent import CANCELLED_TOOL_RESULT
from nbagent.models.base import ModelRequest
from nbagent.records import LLMCall, RunFinished, RunStarted
from nbagent.trace import OTLPRecorder
from nbagent.trace.otlp import CANCELLED_TOOL_PREFIX, CONTENT_ENV, export_request, spans_of

from ..waits import sent_all
from .helpers import KEY, KeyedClient, add, calls, fail, tool_agent

Spans = list[dict[str, Any]]


def spans_in(document: dict[str, Any]) -> Spans:
    return [span for rs in document["resourceSpans"] for ss in rs["scopeSpans"] for span in ss["spans"]]


def attrs(span: dict[str, Any]) -> dict[str, Any]:
    """A span's attributes as plain values (JSON text of structured ones decoded)."""
    out: dict[str, Any] = {}
    for item in span["attributes"]:
        ((kind, value),) = item["value"].items()
        if kind == "intValue":
            value = int(value)
        elif kind == "arrayValue":
            value = [next(iter(v.values())) for v in value["values"]]
        elif kind == "stringValue" and value[:1] in "[{":
            value = json.loads(value)
        out[item["key"]] = value
    return out


def strict(document: dict[str, Any]) -> Any:
    """OTLP-JSON parsed into the official protobuf type, refusing any unknown field (ids hex -> bytes)."""

    def unhex(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: base64.b64encode(bytes.fromhex(v)).decode()
                if k in ("traceId", "spanId", "parentSpanId")
                else unhex(v)
                for k, v in node.items()
            }
        if isinstance(node, list):
            return [unhex(item) for item in node]
        return node

    return ParseDict(unhex(document), ExportTraceServiceRequest(), ignore_unknown_fields=False)


async def tool_trace(*answers: str | CreateResult, **kwargs: Any) -> Trace:
    agent = tool_agent("calc", *answers, **kwargs)
    await agent.run(task="go")
    return agent.trace


async def test_the_payload_is_the_official_protobuf_and_its_json_parses_strictly() -> None:
    trace = await tool_trace(calls(("c1", "add", '{"a": 1, "b": 2}'), ("c2", "fail", '{"reason": "no"}')), "done",
                             reflect_on_tool_use=True)  # fmt: skip
    for content in (False, True):
        document = trace.to_otlp_json(content=content)
        request = export_request(spans_of(trace, content))
        assert isinstance(request, ExportTraceServiceRequest)
        assert strict(document).SerializeToString() == request.SerializeToString()
        for span in spans_in(document):
            assert isinstance(span["kind"], int) and len(span["traceId"]) == 32 and len(span["spanId"]) == 16
        resource = {a["key"]: a["value"] for a in document["resourceSpans"][0]["resource"]["attributes"]}
        assert resource["service.name"] == {"stringValue": "nbagent"}


async def test_span_ids_are_unique_whatever_ids_the_model_sends() -> None:
    repeated = calls(("dup", "add", '{"a": 1, "b": 1}'), ("dup", "add", '{"a": 2, "b": 2}'), ("", "add", "{}"))
    empty = calls(("", "add", '{"a": 3, "b": 3}'), ("", "fail", '{"reason": "x"}'))
    trace = await tool_trace(repeated, empty, "done", max_tool_iterations=3)
    spans = spans_in(trace.to_otlp_json())
    assert [s["name"] for s in spans].count("execute_tool add") == 4
    assert len(spans) == 1 + 3 + 5 and len({s["spanId"] for s in spans}) == len(spans)
    again = spans_in(trace.to_otlp_json())
    assert [s["spanId"] for s in again] == [s["spanId"] for s in spans]  # the same in every export
    tool_ids = [attrs(s).get("gen_ai.tool.call.id") for s in spans if s["name"].startswith("execute_tool")]
    assert tool_ids == ["dup", "dup", None, None, None]  # an empty id is no id


async def test_status_is_unset_unless_error_and_errors_carry_their_type() -> None:
    trace = await tool_trace(calls(("c1", "add", '{"a": 1, "b": 2}'), ("c2", "fail", '{"reason": "no"}')), "done")
    spans = spans_in(trace.to_otlp_json())
    status = {s["name"] + ":" + str(attrs(s).get("gen_ai.tool.call.id")): s.get("status", {}) for s in spans}
    assert status["execute_tool fail:c2"]["code"] == 2 and "failed: no" in status["execute_tool fail:c2"]["message"]
    failed = trace.tool_calls_df()["result"].iloc[1]
    expected = (
        "RuntimeError" if failed.startswith("Error: RuntimeError: ") else "_OTHER"
    )  # the class, when the text names it
    assert attrs(next(s for s in spans if s["name"] == "execute_tool fail"))["error.type"] == expected
    ok = [s for s in spans if s["name"] != "execute_tool fail"]
    assert all(s.get("status", {}).get("code", 0) == 0 for s in ok)  # UNSET: no OK anywhere
    assert all("error.type" not in attrs(s) for s in ok)


async def test_cancelled_runs_calls_and_tool_calls_are_cancelled_errors() -> None:
    started = asyncio.Event()

    async def wait(seconds: float) -> str:
        """Waits."""
        started.set()
        await asyncio.sleep(seconds)
        return "late"

    model = ReplayChatCompletionClient([calls(("w", "wait", '{"seconds": 30}')), "never"])
    agent = AssistantAgent("slow", model, tools=[wait])
    task = asyncio.ensure_future(agent.run(task="wait"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert agent.trace.tool_calls_df()["result"].tolist() == [CANCELLED_TOOL_RESULT]
    assert CANCELLED_TOOL_RESULT.startswith(CANCELLED_TOOL_PREFIX)
    spans = {s["name"]: s for s in spans_in(agent.trace.to_otlp_json())}
    assert attrs(spans["invoke_agent slow"])["error.type"] == "CancelledError"
    assert attrs(spans["execute_tool wait"])["error.type"] == "CancelledError"
    assert spans["invoke_agent slow"]["status"]["code"] == spans["execute_tool wait"]["status"]["code"] == 2

    slow = AssistantAgent("slower", ReplayChatCompletionClient(["late"], latency=5))
    task = asyncio.ensure_future(slow.run(task="wait"))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [attrs(s)["error.type"] for s in spans_in(slow.trace.to_otlp_json())] == ["CancelledError"] * 2


async def test_a_mid_run_export_sends_only_ended_work_under_the_final_ids() -> None:
    started = asyncio.Event()
    release = asyncio.Event()

    async def hold(x: int) -> int:
        """Holds."""
        started.set()
        await release.wait()
        return x

    model = ReplayChatCompletionClient([calls(("h1", "hold", '{"x": 1}')), "held"])
    agent = AssistantAgent("holder", model, tools=[hold], reflect_on_tool_use=True)
    task = asyncio.ensure_future(agent.run(task="hold"))
    await started.wait()
    early = spans_in(agent.trace.to_otlp_json())
    assert [s["name"] for s in early] == ["chat replay"]  # the run and the tool call are still running
    release.set()
    await task
    final = spans_in(agent.trace.to_otlp_json())
    assert [s["name"] for s in final] == ["invoke_agent holder", "chat replay", "chat replay", "execute_tool hold"]
    assert early[0] == final[1]  # an ended span is the same in both exports, its parent the run's final id
    assert early[0]["parentSpanId"] == final[0]["spanId"]


async def test_content_is_opt_in_per_export_per_trace_and_by_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    trace = await tool_trace(calls(("c1", "add", '{"a": 1, "b": 2}')), "the sum is 3", reflect_on_tool_use=True)
    content_keys = {
        "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions", "gen_ai.tool.definitions",
        "gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "input.value", "output.value",
    }  # fmt: skip

    def keys(**kwargs: Any) -> set[str]:
        return {key for span in spans_in(trace.to_otlp_json(**kwargs)) for key in attrs(span)}

    monkeypatch.delenv(CONTENT_ENV, raising=False)
    assert not keys() & content_keys
    assert keys(content=True) >= content_keys
    trace.otlp_content = True
    assert keys() >= content_keys and not keys(content=False) & content_keys
    trace.otlp_content = None
    monkeypatch.setenv(CONTENT_ENV, "true")
    assert keys() >= content_keys


async def test_content_follows_the_conventions_shapes_and_is_redacted() -> None:
    client = KeyedClient([calls(("c1", "add", '{"a": 1, "b": 2}'), ("c2", "fail", '{"reason": "no"}')),
                          f"3, and one failed ({KEY})"], KEY)  # fmt: skip
    agent = AssistantAgent("calc", client, tools=[add, fail],
                           reflect_on_tool_use=True, system_message=f"Be brief. {KEY}")  # fmt: skip
    await agent.run(task="add 1 and 2")
    document = agent.trace.to_otlp_json(content=True)
    assert KEY not in json.dumps(document)
    spans = spans_in(document)
    run, first, second = (attrs(s) for s in spans[:3])
    assert run["gen_ai.input.messages"] == [{"role": "user", "parts": [{"type": "text", "content": "add 1 and 2"}]}]
    assert run["input.value"] == "add 1 and 2" and run["output.value"].startswith("3, and one failed")
    assert first["gen_ai.system_instructions"] == [{"type": "text", "content": "Be brief. [REDACTED]"}]
    assert first["gen_ai.input.messages"] == [{"role": "user", "parts": [{"type": "text", "content": "add 1 and 2"}]}]
    assert first["gen_ai.output.messages"] == [
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "c1", "name": "add", "arguments": {"a": 1, "b": 2}},
                {"type": "tool_call", "id": "c2", "name": "fail", "arguments": {"reason": "no"}},
            ],
            "finish_reason": "tool_call",
        }
    ]
    definitions = first["gen_ai.tool.definitions"]
    assert [(d["type"], d["name"]) for d in definitions] == [("function", "add"), ("function", "fail")]
    assert definitions[0]["parameters"]["properties"]["a"]["type"] == "integer"
    history = second["gen_ai.input.messages"]
    assert [m["role"] for m in history] == ["user", "assistant", "tool"]
    assert history[2]["parts"][0] == {"type": "tool_call_response", "id": "c1", "response": "3"}
    assert history[2]["parts"][1]["id"] == "c2"
    assert second["gen_ai.output.messages"][0]["finish_reason"] == "stop"
    assert second["gen_ai.output.messages"][0]["parts"][0]["content"] == "3, and one failed ([REDACTED])"
    tools = [attrs(s) for s in spans if s["name"].startswith("execute_tool")]
    assert tools[0]["gen_ai.tool.call.arguments"] == {"a": 1, "b": 2} and tools[0]["gen_ai.tool.call.result"] == "3"
    assert "gen_ai.tool.call.result" not in tools[1]  # on success only


class Answer(CreateResult):
    """A model answer that says which model answered, and its id (as a server's does)."""

    response_model: str | None = None
    response_id: str | None = None


def test_request_parameters_response_model_and_id_when_known() -> None:
    trace = Trace()
    sent = {"model": "gpt-test", "temperature": 0.2, "max_tokens": 64, "stop": "END", "n": 1, "seed": 7,
            "response_format": {"type": "json_object"}}  # fmt: skip
    call = LLMCall("run-1", 0, "initial", "gpt-test", ModelRequest([], [], "auto", True), "m1", False, "openai")
    call.sent = sent
    trace.record(RunStarted("run-1", "solo", []))
    trace.record(call)
    call.finish(Answer(finish_reason="stop", content="ok", usage=RequestUsage(prompt_tokens=3, completion_tokens=1),
                       response_model="gpt-test-2026-01-01", response_id="chatcmpl-42"))  # fmt: skip
    call.duration_s = 0.5
    trace.record(RunFinished("run-1", "solo", "ok"))
    row = trace.llm_calls_df().iloc[0]
    assert row["request_params"] == sent and trace.llm_calls_df()["tool_choice"].isna().all()  # none sent
    chat = attrs(spans_in(trace.to_otlp_json())[1])
    assert chat["gen_ai.request.temperature"] == {"doubleValue": 0.2} or chat["gen_ai.request.temperature"] == 0.2
    assert (chat["gen_ai.request.max_tokens"], chat["gen_ai.request.seed"]) == (64, 7)
    assert chat["gen_ai.request.stop_sequences"] == ["END"] and chat["gen_ai.output.type"] == "json"
    assert "gen_ai.request.choice.count" not in chat  # set only when it is not 1
    assert (chat["gen_ai.response.model"], chat["gen_ai.response.id"]) == ("gpt-test-2026-01-01", "chatcmpl-42")
    assert chat["gen_ai.response.finish_reasons"] == ["stop"]


async def test_the_memory_query_is_a_span_of_its_run() -> None:
    memory = ListMemory(memory_contents=[MemoryContent(content="The user likes tea.")])
    agent = AssistantAgent("host", ReplayChatCompletionClient(["Tea it is."]), memory=[memory])
    await agent.run(task="What should I drink?")
    spans = spans_in(agent.trace.to_otlp_json(content=True))
    assert [s["name"] for s in spans] == ["invoke_agent host", "chat replay", "retrieval"]
    query = attrs(spans[2])
    assert query["gen_ai.operation.name"] == "retrieval" and spans[2]["parentSpanId"] == spans[0]["spanId"]
    assert query["gen_ai.retrieval.query.text"] == "What should I drink?"
    assert query["nbagent.memory.content"] == "The user likes tea."
    assert int(spans[2]["startTimeUnixNano"]) <= int(spans[2]["endTimeUnixNano"]) <= int(spans[1]["startTimeUnixNano"])
    without_content = attrs(spans_in(agent.trace.to_otlp_json())[2])
    assert "nbagent.memory.content" not in without_content and "gen_ai.retrieval.query.text" not in without_content


async def test_a_handoff_links_the_run_it_hands_to() -> None:
    triage = AssistantAgent(
        "triage",
        ReplayChatCompletionClient([calls(("h", "transfer_to_billing", "{}"))]),
        handoffs=["billing"],
    )
    billing = AssistantAgent("billing", ReplayChatCompletionClient(["Your invoice is paid."]))
    trace = Trace()
    with trace.recording(triage, billing):
        result = await triage.run(task="my invoice?")
        await billing.run(task=result.messages[-1])
    assert trace.runs_df()["handoff_target"].astype("object").fillna("-").tolist() == ["billing", "-"]
    spans = spans_in(trace.to_otlp_json())
    runs = {s["name"]: s for s in spans if s["name"].startswith("invoke_agent")}
    assert attrs(runs["invoke_agent triage"])["nbagent.handoff.target"] == "billing"
    (link,) = runs["invoke_agent billing"]["links"]
    assert (link["traceId"], link["spanId"]) == (
        runs["invoke_agent triage"]["traceId"],
        runs["invoke_agent triage"]["spanId"],
    )


async def test_one_conversation_id_per_conversation_the_same_in_every_export() -> None:
    alpha = tool_agent("alpha", "one", "two", "three")
    beta = tool_agent("beta", "hi")
    trace = Trace()

    def conversations() -> dict[str, str]:
        return {
            attrs(s)["nbagent.run_id"]: attrs(s)["gen_ai.conversation.id"]
            for s in spans_in(trace.to_otlp_json())
            if s["name"].startswith("invoke_agent")
        }

    with trace.recording(alpha, beta):
        await alpha.run(task="first")
        await alpha.run(task="second")
        await beta.run(task="hello")
        before = conversations()
        trace.clear()
        await alpha.run(task="third")  # the same conversation, exported after a clear()
        after = conversations()
    runs = list(before)
    assert before[runs[0]] == before[runs[1]] != before[runs[2]]
    assert set(after.values()) == {before[runs[0]]}
    await alpha.model_context.clear()  # a new conversation
    other = tool_agent("alpha", "four")
    with trace.recording(other):
        await other.run(task="fresh start")
    assert list(conversations().values())[-1] != before[runs[0]]


class Capture:
    """An OTLP/HTTP endpoint on 127.0.0.1 that keeps what it is sent (and answers ``status``, with ``body``
    when it is not 200)."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, str], Any]] = []
        self.status = 200
        self.body = b"no, thanks"
        capture = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                capture.requests.append(({k.lower(): v for k, v in self.headers.items()}, request))
                self.send_response(capture.status)
                self.end_headers()
                self.wfile.write(b"" if capture.status == 200 else capture.body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def spans(self, index: int = -1) -> list[Any]:
        return [s for rs in self.requests[index][1].resource_spans for ss in rs.scope_spans for s in ss.spans]


@pytest.fixture
def capture() -> Iterator[Capture]:
    endpoint = Capture()
    endpoint.thread.start()
    yield endpoint
    endpoint.server.shutdown()
    endpoint.server.server_close()


async def test_to_otlp_posts_protobuf_with_the_headers(capture: Capture) -> None:
    trace = await tool_trace(calls(("c1", "add", '{"a": 1, "b": 2}')), "3", reflect_on_tool_use=True)
    sent = await asyncio.to_thread(trace.to_otlp, capture.endpoint, {"x-api-key": "k"})
    assert sent == 4 and len(capture.spans()) == 4
    headers, request = capture.requests[0]
    assert headers["content-type"] == "application/x-protobuf" and headers["x-api-key"] == "k"
    assert request.SerializeToString() == export_request(spans_of(trace)).SerializeToString()
    capture.status = 500
    with pytest.raises(ConnectionError, match=f"OTLP endpoint {capture.endpoint} answered 500: no, thanks"):
        await asyncio.to_thread(trace.to_otlp, capture.endpoint)
    # The endpoint's words are shown, never obeyed, where the error is printed (a warning, a traceback).
    capture.body = "no \x1b]52;c;aGk=\x07\x1b[2J\r read\u202etxt".encode()
    with pytest.raises(ConnectionError) as raised:
        await asyncio.to_thread(trace.to_otlp, capture.endpoint)
    assert str(raised.value).endswith("answered 500: no \\x1b]52;c;aGk=\\x07\\x1b[2J\\r read<U+202E>txt")


async def test_a_recorder_sends_each_run_as_it_ends(capture: Capture) -> None:
    agent = tool_agent("calc", calls(("c1", "add", '{"a": 1, "b": 2}')), "3", "again", "more", "last",
                       reflect_on_tool_use=True)  # fmt: skip
    recorder = OTLPRecorder(capture.endpoint, {"x-team": "t"}, content=True, timeout=1).attach(agent)
    await agent.run(task="one")
    await asyncio.to_thread(sent_all, recorder)
    assert [s.name for s in capture.spans()] == ["invoke_agent calc", "chat replay", "chat replay", "execute_tool add"]
    await agent.run(task="two")
    await asyncio.to_thread(sent_all, recorder)
    assert [s.name for s in capture.spans()] == ["invoke_agent calc", "chat replay"]
    assert len(capture.requests) == 2 and recorder.sent == 6 and recorder.errors == []
    assert capture.requests[1][0]["x-team"] == "t"
    conversation = {
        kv.value.string_value
        for i in (0, 1)
        for kv in capture.spans(i)[0].attributes
        if kv.key == "gen_ai.conversation.id"
    }
    assert len(conversation) == 1
    assert len(recorder.trace) == 0  # what was sent is let go of
    capture.status = 503
    await agent.run(task="three")  # a failed send does not fail the run; the run is kept and tried again
    while not recorder.errors:
        await asyncio.sleep(0.05)
    assert "503" in recorder.errors[0] and capture.endpoint in recorder.errors[0] and recorder.pending_runs == 1
    capture.status = 200
    await asyncio.to_thread(sent_all, recorder)
    assert [s.name for s in capture.spans()] == ["invoke_agent calc", "chat replay"] and recorder.sent == 8
    sent = len(capture.requests)
    recorder.detach(agent)
    await agent.run(task="four")
    await asyncio.to_thread(sent_all, recorder)
    assert len(capture.requests) == sent
    assert recorder.close() and recorder.dropped_runs == 0


async def test_a_recorder_sends_overlapping_runs_whole(capture: Capture) -> None:
    """Two agents' runs overlap: both are sent whole, together, once the last of them ends."""
    gate = asyncio.Event()

    async def wait_for_gate() -> str:
        """Wait until released."""
        await gate.wait()
        return "released"

    def agent(name: str) -> AssistantAgent:
        model = ReplayChatCompletionClient([calls(("c1", "wait_for_gate", "{}")), "done"])
        return AssistantAgent(name, model, tools=[wait_for_gate], reflect_on_tool_use=True)

    first, second = agent("first"), agent("second")
    recorder = OTLPRecorder(capture.endpoint, content=True).attach(first).attach(second)

    async def release() -> None:
        await asyncio.sleep(0.2)
        gate.set()

    await asyncio.gather(first.run(task="one"), second.run(task="two"), release())
    await asyncio.to_thread(sent_all, recorder)
    sent = sorted(sorted(s.name for s in capture.spans(i)) for i in range(len(capture.requests)))
    whole = ["chat replay", "chat replay", "execute_tool wait_for_gate"]
    assert sorted(sum(sent, [])) == sorted(["invoke_agent first", "invoke_agent second", *whole, *whole])
    assert recorder.errors == [] and len(recorder.trace) == 0  # all forgotten once no run is going


async def test_without_opentelemetry_proto_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    trace = await tool_trace("hi")
    monkeypatch.setitem(sys.modules, "opentelemetry.proto.trace.v1.trace_pb2", None)
    with pytest.raises(ImportError, match=r"pip install 'nbagent-loop\[otlp\]'"):
        trace.to_otlp_json()


async def test_every_gen_ai_name_is_in_the_registry() -> None:
    """Every gen_ai.* name and operation is one the installed opentelemetry-semantic-conventions release
    defines (issue 32: the memory span's gen_ai.memory.* names were a proposal, in no release); what
    the conventions do not name is under nbagent.*."""
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes

    registry = {value for key, value in vars(gen_ai_attributes).items() if key.startswith("GEN_AI_")}
    operations = {member.value for member in gen_ai_attributes.GenAiOperationNameValues}
    memory = ListMemory(memory_contents=[MemoryContent(content="fact")])
    agent = tool_agent("calc", calls(("c1", "add", '{"a": 1, "b": 2}'), ("c2", "fail", '{"reason": "x"}')), "ok",
                       reflect_on_tool_use=True, model_client_stream=True, memory=[memory])  # fmt: skip
    await agent.run(task="go")
    spans = spans_in(agent.trace.to_otlp_json(content=True))
    used = {key for span in spans for key in attrs(span)}
    assert {key for key in used if key.startswith("gen_ai.")} <= registry
    others = {key for key in used if not key.startswith(("gen_ai.", "nbagent."))}
    openinference = {"input.value", "input.mime_type", "output.value", "output.mime_type"}
    assert others <= {"error.type", *openinference}, others
    assert {attrs(span)["gen_ai.operation.name"] for span in spans} <= operations
    assert {"gen_ai.input.messages", "gen_ai.retrieval.query.text", "gen_ai.response.time_to_first_chunk"} <= used


async def test_spans_from_the_rows_equal_spans_from_the_frames() -> None:
    """A live trace builds its spans from its rows (``Trace.span_tables``: the sender does not build
    frames); they equal those built from its frames and from its Parquet copy, every field, content
    on and off: tools in parallel with an error and streaming, a failure, a cancellation, a memory
    query, a handoff, a run still going, a secret echoed by the model."""
    import tempfile

    from nbagent import concat, load_parquet
    from nbagent.trace.otlp import span_tables

    from .test_export import mixed_trace

    memory = ListMemory(memory_contents=[MemoryContent(content="The user likes tea.")])
    host = AssistantAgent("host", ReplayChatCompletionClient(["Tea it is.", f"your key is {KEY}"]), memory=[memory])
    triage = AssistantAgent(
        "triage", ReplayChatCompletionClient([calls(("h", "transfer_to_billing", "{}"))]), handoffs=["billing"]
    )
    billing = AssistantAgent("billing", KeyedClient(["Your invoice is paid."], KEY))
    shared = Trace()
    with shared.recording(host, triage, billing):
        await host.run(task="What should I drink?")
        await host.run(task="and my key?")
        result = await triage.run(task="my invoice?")
        await billing.run(task=result.messages[-1])
    going = Trace()
    going.record(RunStarted(run_id="r1", agent="a", task=[]))
    traces = [await mixed_trace(), shared, going]
    with tempfile.TemporaryDirectory() as folder:
        for trace in traces:
            # a live trace's run still going is not exported (it is once it ends): its loaded copy's is
            source = concat([trace]) if trace is going else trace
            with warnings.catch_warnings():  # the copy's run recorded running: written as it is, with a warning
                warnings.simplefilter("ignore", RuntimeWarning)
                copy = load_parquet(source.to_parquet(folder), session=trace.trace_id)
            for content in (False, True):
                from_rows = spans_of(trace, content)
                assert from_rows == spans_of(span_tables(trace), content)
                assert from_rows == spans_of(copy, content)
                if trace is shared:
                    assert len(from_rows) == 11 and any(span.links for span in from_rows)
                    assert KEY not in repr(from_rows)


LONG_OUTPUT = ('a "quoted" line, é ü 漢字, a tab\t and a back\\slash\n' * 9000) + "end"


def long_tool(x: str) -> str:
    """A tool whose output is ~0.5 MB of text with characters JSON escapes and non-ASCII ones."""
    return LONG_OUTPUT + x


async def test_a_long_output_is_serialized_in_pieces_to_the_same_bytes() -> None:
    """The sender's request (each span and attribute serialized on its own, long texts escaped,
    encoded and copied in pieces, in blocks of about SLICE bytes) is byte for byte protobuf's, and
    the sliced JSON of structured values is json.dumps's."""
    from nbagent.trace.otlp import SLICE, dumps, request_blocks, serialize_request

    answers = [calls(("c1", "long_tool", '{"x": "' + "y" * 100_000 + '"}')), "done"]
    agent = AssistantAgent(
        "calc",
        ReplayChatCompletionClient(answers),
        tools=[long_tool],
        reflect_on_tool_use=True,  # type: ignore[arg-type]
    )
    await agent.run(task="go")
    for content in (False, True):
        spans = spans_of(agent.trace, content)
        blocks = request_blocks(spans)
        assert b"".join(blocks) == serialize_request(spans) == export_request(spans).SerializeToString()
        assert max(len(block) for block in blocks) <= 4 * SLICE + 64
    assert len(blocks) > 10  # the tool output is in the tool span and in the second call's input
    value = {"a": [LONG_OUTPUT, {"b": 'é"\n\x00' * 30_000}], "c": 1.5, "d": None, "e": "\x00nbagent-long-x-0"}
    assert dumps(value) == json.dumps(value, ensure_ascii=False)
