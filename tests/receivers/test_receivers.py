"""The receivers and engines themselves: each takes an OTLP/HTTP protobuf request built with the
official types and shows, through its own client, the span kinds, tokens, errors and content the
GenAI semantic conventions describe; Spark and polars read a UTC-timestamped Parquet file.

These pin down what the receivers make of the conventions, independent of nbagent's exporter.
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from .conftest import need
from .readback import mlflow_traces, phoenix_spans
from .servers import Receiver

pytestmark = pytest.mark.receivers

USER = [{"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]}]
CALL = [
    {
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}],
        "finish_reason": "tool_call",
    }
]
ANSWER = [{"role": "assistant", "parts": [{"type": "text", "content": "Sunny, 21 C."}], "finish_reason": "stop"}]


def _request(trace_id: bytes) -> Any:
    """An agent run: invoke_agent > chat (12 in, 7 out) and a failed execute_tool."""
    need("opentelemetry.proto")
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
    from opentelemetry.proto.resource.v1.resource_pb2 import Resource
    from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

    def attrs(**values: Any) -> list[Any]:
        out = []
        for key, value in values.items():
            key = key.replace("__", ".")
            if isinstance(value, int):
                out.append(KeyValue(key=key, value=AnyValue(int_value=value)))
            else:
                text = value if isinstance(value, str) else json.dumps(value)
                out.append(KeyValue(key=key, value=AnyValue(string_value=text)))
        return out

    now = time.time_ns()
    root_id, chat_id, tool_id = os.urandom(8), os.urandom(8), os.urandom(8)
    spans = [
        Span(
            trace_id=trace_id, span_id=root_id, name="invoke_agent weather", kind=Span.SPAN_KIND_INTERNAL,
            start_time_unix_nano=now, end_time_unix_nano=now + 3_000_000_000,
            attributes=attrs(
                gen_ai__operation__name="invoke_agent", gen_ai__agent__name="weather", gen_ai__provider__name="openai",
                gen_ai__conversation__id="conv-smoke", gen_ai__input__messages=USER, gen_ai__output__messages=ANSWER,
            ),
        ),
        Span(
            trace_id=trace_id, span_id=chat_id, parent_span_id=root_id, name="chat gpt-4o", kind=Span.SPAN_KIND_CLIENT,
            start_time_unix_nano=now + 1_000, end_time_unix_nano=now + 1_000_000_000,
            attributes=attrs(
                gen_ai__operation__name="chat", gen_ai__provider__name="openai", gen_ai__request__model="gpt-4o",
                gen_ai__usage__input_tokens=12, gen_ai__usage__output_tokens=7,
                gen_ai__input__messages=USER, gen_ai__output__messages=CALL,
            ),
        ),
        Span(
            trace_id=trace_id, span_id=tool_id, parent_span_id=root_id, name="execute_tool get_weather",
            kind=Span.SPAN_KIND_INTERNAL,
            start_time_unix_nano=now + 1_100_000_000, end_time_unix_nano=now + 1_200_000_000,
            attributes=attrs(
                gen_ai__operation__name="execute_tool", gen_ai__tool__name="get_weather", error__type="ValueError"
            ),
            status=Status(code=Status.STATUS_CODE_ERROR, message="ValueError: no such city"),
        ),
    ]  # fmt: skip
    resource = Resource(attributes=attrs(service__name="nbagent-tests"))
    scope = InstrumentationScope(name="tests.receivers")
    return ExportTraceServiceRequest(
        resource_spans=[ResourceSpans(resource=resource, scope_spans=[ScopeSpans(scope=scope, spans=spans)])]
    )


def _post(receiver: Receiver, body: bytes) -> int:
    request = urllib.request.Request(
        receiver.otlp_endpoint,
        data=body,
        method="POST",
        headers={"Content-Type": "application/x-protobuf", **receiver.headers},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return int(response.status)


def test_mlflow_shows_kinds_tokens_errors_and_content(mlflow_receiver: Receiver) -> None:
    trace_id = os.urandom(16)
    assert _post(mlflow_receiver, _request(trace_id).SerializeToString()) == 200
    trace = mlflow_traces(mlflow_receiver, [trace_id.hex()])[trace_id.hex()]
    kinds = {span.name: str(span.span_type) for span in trace.data.spans}
    assert kinds == {"invoke_agent weather": "AGENT", "chat gpt-4o": "CHAT_MODEL", "execute_tool get_weather": "TOOL"}
    tool = next(span for span in trace.data.spans if span.name.startswith("execute_tool"))
    assert tool.status.status_code.value == "ERROR" and "no such city" in tool.status.description
    usage = json.loads(trace.info.trace_metadata["mlflow.trace.tokenUsage"])
    assert (usage["input_tokens"], usage["output_tokens"]) == (12, 7)
    assert trace.info.trace_metadata["mlflow.trace.session"] == "conv-smoke"
    assert json.loads(trace.info.request_preview) == USER  # the root span's gen_ai.input.messages
    assert json.loads(trace.info.response_preview) == ANSWER


def test_phoenix_shows_kinds_tokens_errors_and_content(phoenix_receiver: Receiver) -> None:
    trace_id = os.urandom(16)
    assert _post(phoenix_receiver, _request(trace_id).SerializeToString()) == 200
    spans = {span["name"]: span for span in phoenix_spans(phoenix_receiver, [trace_id.hex()], 3)}
    assert {name: span["span_kind"] for name, span in spans.items()} == {
        "invoke_agent weather": "AGENT",
        "chat gpt-4o": "LLM",
        "execute_tool get_weather": "TOOL",
    }
    chat = spans["chat gpt-4o"]["attributes"]
    assert (chat["llm.token_count.prompt"], chat["llm.token_count.completion"]) == (12, 7)
    assert chat["llm.input_messages.0.message.content"] == "Weather in Paris?"  # gen_ai.input.messages, flattened
    assert chat["llm.output_messages.0.message.tool_calls.0.tool_call.function.name"] == "get_weather"
    tool = spans["execute_tool get_weather"]
    assert (tool["status_code"], tool["status_message"]) == ("ERROR", "ValueError: no such city")
    assert spans["invoke_agent weather"]["attributes"]["session.id"] == "conv-smoke"


def _utc_parquet(path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "tool_name": ["a", "b", "a"],
            "started_at": pa.array([0, 1_000_000, 2_000_000], pa.timestamp("us", tz="UTC")),
        }
    )
    pq.write_table(table, path)


def test_spark_reads_utc_timestamps(spark: Any, tmp_path: Path) -> None:
    _utc_parquet(tmp_path / "part-0.parquet")
    df = spark.read.parquet(str(tmp_path))
    assert dict(df.dtypes)["started_at"] == "timestamp"  # Spark's TIMESTAMP is an instant (UTC)
    counts = {row["tool_name"]: row["count"] for row in df.groupBy("tool_name").count().collect()}
    assert counts == {"a": 2, "b": 1}
    first = df.orderBy("started_at").first()
    assert first is not None and first["started_at"].isoformat() == "1970-01-01T00:00:00"


def test_polars_reads_utc_timestamps(polars: Any, tmp_path: Path) -> None:
    _utc_parquet(tmp_path / "part-0.parquet")
    df = polars.read_parquet(tmp_path / "part-0.parquet")
    assert str(df.schema["started_at"]) == "Datetime(time_unit='us', time_zone='UTC')"
    assert df.group_by("tool_name").len().sort("tool_name").rows() == [("a", 2), ("b", 1)]
